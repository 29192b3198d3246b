// What the shipper sends besides frames: who the samples come from, and the
// energy of closed windows.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "edgemon/model.h"

namespace edgemon::push {

// The board's identity, sent as external labels with Prometheus
// remote-write and as resource attributes with OTLP.
struct Identity {
  std::string host_name;    // the hostname
  std::string host_id;      // machine-id or the board's serial; "" when unreadable
  std::string board_model;  // BoardInfo::model
  std::string soc;          // BoardInfo::soc
  std::string l4t;          // BoardInfo::l4t ("" off Jetson)
  // Configured labels (name, value), sent as they are on every series and
  // as resource attributes; a configured name replaces a built-in one.
  std::vector<std::pair<std::string, std::string>> labels;
};

// A closed window (a record or measure run) with the energy of each rail
// over it, as Summarize gives them.
struct WindowEnergy {
  Window window;  // end_ns is set
  std::vector<RailSummary> rails;
};

}  // namespace edgemon::push
