#include "edgemon/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace edgemon {
namespace {

TEST(Status, DefaultIsOkWithNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(Status::Ok(), s);
}

TEST(Status, AnOkCodeDropsAMessage) {
  Status s(StatusCode::kOk, "ignored");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

TEST(Status, NamedConstructorsCarryGrpcNumbering) {
  EXPECT_EQ(static_cast<int>(Status::Cancelled("x").code()), 1);
  EXPECT_EQ(static_cast<int>(Status::InvalidArgument("x").code()), 3);
  EXPECT_EQ(static_cast<int>(Status::DeadlineExceeded("x").code()), 4);
  EXPECT_EQ(static_cast<int>(Status::NotFound("x").code()), 5);
  EXPECT_EQ(static_cast<int>(Status::AlreadyExists("x").code()), 6);
  EXPECT_EQ(static_cast<int>(Status::PermissionDenied("x").code()), 7);
  EXPECT_EQ(static_cast<int>(Status::ResourceExhausted("x").code()), 8);
  EXPECT_EQ(static_cast<int>(Status::FailedPrecondition("x").code()), 9);
  EXPECT_EQ(static_cast<int>(Status::Aborted("x").code()), 10);
  EXPECT_EQ(static_cast<int>(Status::OutOfRange("x").code()), 11);
  EXPECT_EQ(static_cast<int>(Status::Unimplemented("x").code()), 12);
  EXPECT_EQ(static_cast<int>(Status::Internal("x").code()), 13);
  EXPECT_EQ(static_cast<int>(Status::Unavailable("x").code()), 14);
  EXPECT_EQ(static_cast<int>(Status::DataLoss("x").code()), 15);
  EXPECT_EQ(static_cast<int>(Status::Unauthenticated("x").code()), 16);
  Status e = Status::Error(StatusCode::kNotFound, "no window 7");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.code(), StatusCode::kNotFound);
  EXPECT_EQ(e.message(), "no window 7");
}

TEST(Status, ToStringNamesTheCode) {
  EXPECT_EQ(Status::Unavailable("connection refused").ToString(),
            "UNAVAILABLE: connection refused");
  EXPECT_EQ(Status::DataLoss("").ToString(), "DATA_LOSS");
  EXPECT_EQ(StatusCodeName(StatusCode::kFailedPrecondition), "FAILED_PRECONDITION");
  EXPECT_EQ(StatusCodeName(static_cast<StatusCode>(99)), "UNKNOWN");
  EXPECT_EQ(StatusCodeName(static_cast<StatusCode>(-1)), "UNKNOWN");
}

TEST(Status, ContextPrependsAndKeepsTheCode) {
  Status s = Status::DataLoss("corrupt").Context("open /x.db");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "open /x.db: corrupt");
  EXPECT_TRUE(Status::Ok().Context("anything").ok());
  EXPECT_EQ(Status::Ok().Context("anything").message(), "");
}

TEST(Result, HoldsAValue) {
  Result<std::string> r = std::string("abc");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.status().ok());
  EXPECT_EQ(*r, "abc");
  EXPECT_EQ(r->size(), 3u);
  std::string moved = std::move(r).value();
  EXPECT_EQ(moved, "abc");
}

TEST(Result, HoldsAnError) {
  Result<int> r = Status::InvalidArgument("step must be positive");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "step must be positive");
}

TEST(Result, AnOkStatusWithoutAValueIsAnInternalError) {
  Result<std::unique_ptr<int>> r = Status::Ok();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace edgemon
