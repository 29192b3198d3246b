#include "proto/grpc_status.h"

#include <string>

namespace edgemon::wire {

grpc::Status ToGrpc(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), status.message());
}

Status FromGrpc(const grpc::Status& status) {
  const int code = static_cast<int>(status.error_code());
  if (code < static_cast<int>(StatusCode::kOk) ||
      code > static_cast<int>(StatusCode::kUnauthenticated)) {
    return Status(StatusCode::kUnknown, status.error_message());
  }
  return Status(static_cast<StatusCode>(code), status.error_message());
}

}  // namespace edgemon::wire
