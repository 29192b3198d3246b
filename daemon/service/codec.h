// Conversions between edgemon's model (include/edgemon/channel.h) and the
// edgemon.v1 protobuf messages, and the channel selector shared by Watch,
// GetLatest and Query.
//
// Thread safety: free functions over values; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgemon/channel.h"
#include "edgemon/status.h"
#include "edgemon/v1/edgemon.pb.h"

namespace edgemon::service {

void ToProto(const Channel& c, v1::Channel* out);
void ToProto(const BoardInfo& b, v1::BoardInfo* out);
// The board with its power mode as the newest frame has it: the nvpmodel
// mode is a channel (it changes while the daemon runs), BoardInfo holds the
// mode seen at discovery. `frame` may be null.
void ToProto(const Inventory& inventory, const Frame* frame, v1::BoardInfo* out);
// Writes `frame` restricted to `subset` (ascending ids; empty = every
// channel). Absent values are left out.
void ToProto(const Frame& frame, const std::vector<ChannelId>& subset, uint64_t generation,
             v1::Frame* out);
// The flags of a channel as the proto spells them ("constant", "input", ...).
std::vector<std::string> FlagNames(uint32_t flags);

// Resolves a client's channel list against the inventory with the one
// selection grammar (edgemon/select.h: keys, ids, shell globs over keys).
// An empty list selects every channel, returned as an empty vector (so a
// channel that appears later is included too).
Result<std::vector<ChannelId>> SelectChannels(const Inventory& inventory,
                                              const std::vector<std::string>& wanted);

}  // namespace edgemon::service
