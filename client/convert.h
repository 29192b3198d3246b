// The client's own value types from the edgemon.v1 messages: DeviceInfo and
// Process. The model's types (channels, frames, windows, buckets, summaries)
// are converted by proto/convert.h, the one place the daemon uses too.
// Pure functions; thread-safe.
#pragma once

#include "client/edgemon_client.h"
#include "edgemon/v1/edgemon.pb.h"
#include "proto/convert.h"

namespace edgemon::client {

// Channels indexed by id (see DeviceInfo).
edgemon::client::DeviceInfo DeviceInfoFromProto(const v1::DeviceInfo& pb);
Process ProcessFromProto(const v1::Process& pb);

}  // namespace edgemon::client
