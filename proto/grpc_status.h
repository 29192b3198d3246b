// The one conversion between edgemon::Status (include/edgemon/status.h) and
// grpc::Status, for the daemon's services (a handler works in edgemon::Status
// and converts once, where it finishes the call) and the client libraries
// (a call's grpc::Status converts once, where it returns). The codes are
// numbered alike, so a status crosses the wire unchanged: code and message.
//
// Thread safety: free functions over values.
#pragma once

#include <grpcpp/support/status.h>

#include "edgemon/status.h"

namespace edgemon::wire {

grpc::Status ToGrpc(const Status& status);
// A code outside gRPC's table (none is sent by a conforming peer) reads as UNKNOWN.
Status FromGrpc(const grpc::Status& status);

}  // namespace edgemon::wire
