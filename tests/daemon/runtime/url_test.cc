// Destination URLs: parsed the same by the configuration and the shipper.
#include "daemon/runtime/url.h"

#include <gtest/gtest.h>

namespace edgemon::runtime {
namespace {

TEST(Url, DefaultsAndDisplayLeaveOutTheQuery) {
  auto u = ParseUrl("https://vm.example/api/v1/write?tenant=secret#frag");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->path, "/api/v1/write?tenant=secret");
  EXPECT_EQ(u->display, "https://vm.example:443/api/v1/write");
  auto v6 = ParseUrl("http://[::1]:9090");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->path, "/");
  EXPECT_EQ(v6->display, "http://[::1]:9090/");
}

TEST(Url, RefusesWhatItCannotSendSafely) {
  for (const char* bad : {"ftp://x/", "http://user:pw@x/", "http://x:0/", "http://x:65536/",
                          "http://[::1/", "http:///path", "x:9090"}) {
    EXPECT_FALSE(ParseUrl(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace edgemon::runtime
