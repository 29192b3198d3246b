// The one translation between edgemon's model (include/edgemon/channel.h,
// include/edgemon/model.h) and the edgemon.v1 messages: the daemon encodes
// with ToProto, the client library decodes with *FromProto, so what one
// writes the other reads back field for field.
//
// Decoding takes any message (a newer daemon, a hostile peer): an unknown
// kind or field, a malformed frame, a count beyond int64 never crash or
// allocate without bound; they come back as nullopt or clamped, as each
// function says. Absent optional fields stay absent (never 0).
//
// Thread safety: free functions over values; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "edgemon/channel.h"
#include "edgemon/model.h"
#include "edgemon/v1/edgemon.pb.h"

namespace edgemon::wire {

// Channel flags as the API names them: "constant", "input", "counter", "derived".
std::vector<std::string> FlagNames(uint32_t flags);
uint32_t FlagsFromNames(const google::protobuf::RepeatedPtrField<std::string>& flags);
// "mW" -> Unit::kMilliwatt; nullopt for a unit this build does not know.
std::optional<Unit> UnitFromString(std::string_view s);

void ToProto(const Channel& c, v1::Channel* out);
// nullopt when the kind or the field is unknown to this build.
std::optional<Channel> ChannelFromProto(const v1::Channel& pb);

void ToProto(const BoardInfo& b, v1::BoardInfo* out);
BoardInfo BoardFromProto(const v1::BoardInfo& pb);

// Writes `frame` restricted to `subset` (ascending ids; empty = every
// channel). Absent values are left out.
void ToProto(const Frame& frame, const std::vector<ChannelId>& subset, uint64_t generation,
             v1::Frame* out);
// values[id] for each id in the frame, absent elsewhere. A frame whose ids
// and values arrays differ in length, or with an id above kMaxChannelId, is
// malformed: nullopt.
inline constexpr ChannelId kMaxChannelId = 1u << 20;
std::optional<Frame> FrameFromProto(const v1::Frame& pb);

void ToProto(const Bucket& b, v1::Bucket* out);
// A count beyond int64 (no daemon sends one) is clamped.
Bucket BucketFromProto(const v1::Bucket& pb);

// The lease goes in whole milliseconds; the owner is the daemon's own and is
// not sent (a decoded window has owner "").
void ToProto(const Window& w, v1::Window* out);
Window WindowFromProto(const v1::Window& pb);

void ToProto(const Summary& s, v1::Summary* out);
// Residency shares sorted by frequency (the wire's map has no order).
Summary SummaryFromProto(const v1::Summary& pb);

}  // namespace edgemon::wire
