// The push shipper's figures in /metrics: a sample per destination, a figure
// not known for a destination left out, both text formats promtool accepts.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/metrics/exposition.h"

namespace edgemon::metrics {
namespace {

std::vector<PushHealth> TwoDestinations() {
  PushHealth a;
  a.destination = "http://127.0.0.1:9090/api/v1/write";
  a.samples_sent = 1200;
  a.samples_retried = 136;
  a.backlog_frames = 0;
  a.backlog_age_ns = 0;
  a.last_success_ns = 1'767'225'600'500'000'000;
  PushHealth b;
  b.destination = "https://vm.example:8428/api/v1/write";
  b.samples_failed = 272;
  b.batches_failed = 1;
  b.rollup_gaps = 2;
  b.last_error_ns = 1'767'225'601'000'000'000;  // backlog unknown: left out
  return {a, b};
}

TEST(PushHealthTest, EachDestinationHasItsFiguresAndUnknownOnesAreLeftOut) {
  std::vector<PushHealth> push = TwoDestinations();
  Health h;
  h.push = push;
  std::string text = RenderExposition(Inventory{}, nullptr, h, Format::kPrometheus);
  for (const char* line : {
           "edgemon_push_samples_sent_total{destination=\"http://127.0.0.1:9090/api/v1/write\"} "
           "1200\n",
           "edgemon_push_samples_retried_total{destination=\"http://127.0.0.1:9090/api/v1/"
           "write\"} 136\n",
           "edgemon_push_samples_failed_total{destination=\"https://vm.example:8428/api/v1/"
           "write\"} 272\n",
           "edgemon_push_batches_failed_total{destination=\"https://vm.example:8428/api/v1/"
           "write\"} 1\n",
           "edgemon_push_rollup_gaps_total{destination=\"https://vm.example:8428/api/v1/write\"} "
           "2\n",
           "edgemon_push_backlog_frames{destination=\"http://127.0.0.1:9090/api/v1/write\"} 0\n",
           "edgemon_push_last_success_timestamp_seconds{destination=\"http://127.0.0.1:9090/api/"
           "v1/write\"} 1767225600.5\n",
           "edgemon_push_last_error_timestamp_seconds{destination=\"https://vm.example:8428/api/"
           "v1/write\"} 1767225601\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "not in\n" << text;
  }
  EXPECT_EQ(text.find("edgemon_push_backlog_frames{destination=\"https"), std::string::npos);
  EXPECT_EQ(text.find("edgemon_push_last_error_timestamp_seconds{destination=\"http:"),
            std::string::npos);
  // One HELP per family, however many destinations.
  size_t helps = 0;
  for (size_t at = 0;
       (at = text.find("# HELP edgemon_push_samples_sent_total", at)) != std::string::npos; ++at) {
    ++helps;
  }
  EXPECT_EQ(helps, 1u);
  // No destination: no push family at all.
  EXPECT_EQ(RenderExposition(Inventory{}, nullptr, Health{}, Format::kPrometheus).find("push"),
            std::string::npos);
}

TEST(PushHealthTest, PromtoolAcceptsThePushFamilies) {
#ifdef EDGEMON_PROMTOOL
  std::vector<PushHealth> push = TwoDestinations();
  Health h;
  h.push = push;
  auto dir = std::filesystem::temp_directory_path() /
             ("edgemon-push-promtool-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "m.txt") << RenderExposition(Inventory{}, nullptr, h, Format::kPrometheus);
  std::string cmd = std::string(EDGEMON_PROMTOOL) + " check metrics < " + (dir / "m.txt").string() +
                    " > " + (dir / "out.txt").string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream in(dir / "out.txt");
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "") << out;
  std::filesystem::remove_all(dir);
#else
  GTEST_SKIP() << "promtool not found at configure time";
#endif
}

}  // namespace
}  // namespace edgemon::metrics
