// proto/grpc_status.h: the one conversion between edgemon::Status and
// grpc::Status. Every code crosses both ways unchanged, with its message.
#include "proto/grpc_status.h"

#include <gtest/gtest.h>

namespace edgemon::wire {
namespace {

TEST(GrpcStatus, EveryCodeRoundTripsWithItsMessage) {
  for (int c = 1; c <= static_cast<int>(StatusCode::kUnauthenticated); ++c) {
    const Status s(static_cast<StatusCode>(c), "what went wrong " + std::to_string(c));
    const grpc::Status g = ToGrpc(s);
    EXPECT_EQ(static_cast<int>(g.error_code()), c);
    EXPECT_EQ(g.error_message(), s.message());
    EXPECT_EQ(FromGrpc(g), s) << StatusCodeName(s.code());
  }
}

TEST(GrpcStatus, NamedCodesMatchGrpcs) {
  EXPECT_EQ(ToGrpc(Status::InvalidArgument("x")).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ToGrpc(Status::DataLoss("x")).error_code(), grpc::StatusCode::DATA_LOSS);
  EXPECT_EQ(ToGrpc(Status::Unauthenticated("x")).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(FromGrpc(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "busy")),
            Status::ResourceExhausted("busy"));
  EXPECT_EQ(FromGrpc(grpc::Status::CANCELLED).code(), StatusCode::kCancelled);
}

TEST(GrpcStatus, OkIsOkBothWays) {
  EXPECT_TRUE(ToGrpc(Status::Ok()).ok());
  EXPECT_TRUE(FromGrpc(grpc::Status::OK).ok());
  EXPECT_TRUE(FromGrpc(grpc::Status::OK).message().empty());
}

TEST(GrpcStatus, ACodeOutsideTheTableIsUnknownNotAStrayNumber) {
  // 17: the next code a later gRPC could add (still a value of the enum's
  // type, -32..31: a larger one could not even be read back without UB).
  const Status s = FromGrpc(grpc::Status(static_cast<grpc::StatusCode>(17), "from a stranger"));
  EXPECT_EQ(s.code(), StatusCode::kUnknown);
  EXPECT_EQ(s.message(), "from a stranger");
  EXPECT_EQ(FromGrpc(grpc::Status(grpc::StatusCode::DO_NOT_USE, "")).code(), StatusCode::kUnknown);
}

}  // namespace
}  // namespace edgemon::wire
