// Building an inventory by hand in tests: one way to append a channel.
#pragma once

#include <string>
#include <utility>

#include "edgemon/channel.h"

namespace edgemon::testing {

// Appends a channel whose id is its index in `inv` and returns it, for the
// caller to set the fields its test needs (unit, flags, device, parent).
inline Channel& AddChannel(Inventory& inv, Kind kind, std::string name, Field field) {
  Channel& c = inv.channels.emplace_back();
  c.id = static_cast<ChannelId>(inv.channels.size() - 1);
  c.kind = kind;
  c.name = std::move(name);
  c.field = field;
  return c;
}

}  // namespace edgemon::testing
