// The service's own encoding and the channel selector shared by Watch,
// GetLatest and Query. The model's conversions are proto/convert.h.
//
// Thread safety: free functions over values; no shared state.
#pragma once

#include <string>
#include <vector>

#include "edgemon/channel.h"
#include "edgemon/status.h"
#include "edgemon/v1/edgemon.pb.h"

namespace edgemon::service {

// The board with its power mode as the newest frame has it: the nvpmodel
// mode is a channel (it changes while the daemon runs), BoardInfo holds the
// mode seen at discovery. `frame` may be null.
void ToProto(const Inventory& inventory, const Frame* frame, v1::BoardInfo* out);

// Resolves a client's channel list against the inventory with the one
// selection grammar (edgemon/select.h: keys, ids, shell globs over keys).
// An empty list selects every channel, returned as an empty vector (so a
// channel that appears later is included too).
Result<std::vector<ChannelId>> SelectChannelsOrAll(const Inventory& inventory,
                                                   const std::vector<std::string>& wanted);

}  // namespace edgemon::service
