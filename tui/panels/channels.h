// Channel lookup shared by the panels: the channels of one kind grouped by
// source name, and a channel's value in the latest frame.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tui/telemetry.h"

namespace edgemon::tui {

// The channels of one kind grouped by name, in inventory order.
struct Source {
  std::string name;
  std::map<Field, const Channel*> fields;
  const Channel* Get(Field f) const {
    auto it = fields.find(f);
    return it == fields.end() ? nullptr : it->second;
  }
};

std::vector<Source> Sources(const Inventory& inv, Kind kind);

// The latest value of `c`; absent when `c` is null.
Value Get(const Telemetry& t, const Channel* c);

}  // namespace edgemon::tui
