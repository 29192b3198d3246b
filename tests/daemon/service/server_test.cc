// The API server (daemon/service/server.h): plain TCP is allowed on loopback
// only, judged by what the host resolves to.
#include "daemon/service/server.h"

#include <gtest/gtest.h>

namespace edgemon::service {
namespace {

TEST(ServerTest, RefusesPlainTcpOffLoopback) {
  EXPECT_TRUE(runtime::IsLoopback("127.0.0.1:7070"));
  EXPECT_TRUE(runtime::IsLoopback("[::1]:7070"));
  EXPECT_TRUE(runtime::IsLoopback("localhost:7070"));
  EXPECT_FALSE(runtime::IsLoopback("0.0.0.0:7070"));
  EXPECT_FALSE(runtime::IsLoopback("[::]:7070"));
  EXPECT_FALSE(runtime::IsLoopback("10.0.0.1:7070"));
  // Judged by what the host resolves to: a name that merely starts with
  // "127." (it could resolve to 0.0.0.0) and the empty host are not loopback.
  EXPECT_FALSE(runtime::IsLoopback("127.0.0.1.example.test:7070"));
  EXPECT_FALSE(runtime::IsLoopback(":7070"));
  EXPECT_TRUE(runtime::IsLoopback("127.0.0.2:7070"));
}

}  // namespace
}  // namespace edgemon::service
