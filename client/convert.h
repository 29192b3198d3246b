// Conversions between the edgemon.v1 protobuf messages and edgemon's model
// types (include/edgemon/channel.h) and the client's value types. Pure
// functions; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "client/edgemon_client.h"
#include "edgemon/channel.h"
#include "edgemon/v1/edgemon.pb.h"

namespace edgemon::client {

std::optional<Unit> UnitFromString(std::string_view s);

// Channel flags as the API names them: "constant", "input", "counter", "derived".
uint32_t FlagsFromProto(const google::protobuf::RepeatedPtrField<std::string>& flags);

// nullopt when the kind or the field is unknown to this client.
std::optional<Channel> ChannelFromProto(const v1::Channel& pb);
BoardInfo BoardFromProto(const v1::BoardInfo& pb);
// Channels indexed by id (see DeviceInfo).
edgemon::client::DeviceInfo DeviceInfoFromProto(const v1::DeviceInfo& pb);

// values[id] for each id in the frame, absent elsewhere. A frame whose ids
// and values arrays differ in length, or with an id above kMaxChannelId, is
// malformed: nullopt.
inline constexpr ChannelId kMaxChannelId = 1u << 20;
std::optional<Frame> FrameFromProto(const v1::Frame& pb);
// The reverse (present values only), for tests and tools.
v1::Frame FrameToProto(const Frame& frame, uint64_t generation = 0);

Window WindowFromProto(const v1::Window& pb);
Summary SummaryFromProto(const v1::Summary& pb);
Process ProcessFromProto(const v1::Process& pb);

}  // namespace edgemon::client
