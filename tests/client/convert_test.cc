// client/convert.h: the client library's own types from the proto (the
// model's conversions, shared with the daemon, are tests/proto/convert_test.cc's).
#include "client/convert.h"

#include <gtest/gtest.h>

#include <optional>

namespace edgemon::client {
namespace {

// Push status: unknown figures stay unknown (nullopt), never 0.
TEST(ClientConvertTest, PushStatusKeepsUnknownFiguresUnknown) {
  v1::DeviceInfo pb;
  v1::PushStatus* failing = pb.add_push();
  failing->set_destination("http://vm:8428/api/v1/write");
  failing->set_protocol("remote-write");
  failing->set_backlog_frames(0);
  failing->set_backlog_age_ns(0);
  failing->set_last_error_ns(1'000);
  failing->set_last_error("HTTP 503: busy");
  failing->set_failing_since_ns(500);
  failing->set_stalled(true);
  failing->set_samples_retried(7);
  v1::PushStatus* unread = pb.add_push();
  unread->set_destination("http://collector:4318/v1/metrics");
  unread->set_protocol("otlp");
  DeviceInfo info = DeviceInfoFromProto(pb);
  ASSERT_EQ(info.push.size(), 2u);
  const PushStatus& a = info.push[0];
  EXPECT_EQ(a.destination, "http://vm:8428/api/v1/write");
  EXPECT_EQ(a.backlog_frames, std::optional<int64_t>(0));  // zero, known
  EXPECT_EQ(a.backlog_age_ns, std::optional<int64_t>(0));
  EXPECT_EQ(a.last_success_ns, std::nullopt);
  EXPECT_EQ(a.last_error_ns, std::optional<int64_t>(1'000));
  EXPECT_EQ(a.last_error, "HTTP 503: busy");
  EXPECT_EQ(a.failing_since_ns, std::optional<int64_t>(500));
  EXPECT_TRUE(a.stalled);
  EXPECT_EQ(a.samples_retried, 7u);
  const PushStatus& b = info.push[1];
  EXPECT_EQ(b.protocol, "otlp");
  EXPECT_EQ(b.backlog_frames, std::nullopt);  // the store could not be read
  EXPECT_EQ(b.backlog_age_ns, std::nullopt);
  EXPECT_EQ(b.failing_since_ns, std::nullopt);
  EXPECT_FALSE(b.stalled);
}

TEST(ClientConvertTest, DeviceInfoIndexesChannelsById) {
  v1::DeviceInfo pb;
  pb.set_generation(9);
  pb.set_interval_ms(250);
  pb.set_api_version(1);
  pb.mutable_board()->set_model("Test Board");
  pb.mutable_board()->set_nvpmodel_id(2);
  (*pb.mutable_board()->mutable_nvpmodel_modes())[2] = "30W";
  (*pb.mutable_board()->mutable_nvpmodel_modes())[0] = "MAXN";
  auto add = [&](uint32_t id, const char* kind, const char* name, const char* field) {
    auto* c = pb.add_channels();
    c->set_id(id);
    c->set_kind(kind);
    c->set_name(name);
    c->set_field(field);
  };
  add(2, "thermal", "cpu-thermal", "temp");
  add(0, "cpu", "cpu", "load");
  add(1, "warp", "drive", "speed");  // a newer daemon's kind
  DeviceInfo info = DeviceInfoFromProto(pb);
  EXPECT_EQ(info.generation, 9u);
  EXPECT_EQ(info.interval_ms, 250u);
  EXPECT_EQ(info.unknown_channels, 1u);
  ASSERT_EQ(info.inventory.channels.size(), 3u);
  EXPECT_EQ(info.inventory.channels[0].name, "cpu");
  EXPECT_EQ(info.inventory.channels[1].id, 1u);
  EXPECT_TRUE(info.inventory.channels[1].name.empty());
  EXPECT_EQ(info.inventory.channels[2].unit, Unit::kMilliCelsius);
  const Channel* t = info.inventory.Find(Kind::kThermal, "cpu-thermal", Field::kTemp);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->id, 2u);
  EXPECT_EQ(info.inventory.board.model, "Test Board");
  ASSERT_EQ(info.inventory.board.nvpmodel_modes.size(), 2u);
  EXPECT_EQ(info.inventory.board.nvpmodel_modes[0].second, "MAXN");
}

TEST(ClientConvertTest, Process) {
  v1::Process p;
  p.set_pid(42);
  EXPECT_FALSE(ProcessFromProto(p).rss_kib);  // not read by the daemon: none, never 0
  p.set_rss_kib(0);
  EXPECT_EQ(ProcessFromProto(p).rss_kib, std::optional<uint64_t>(0));  // a kernel-reported 0
  p.set_rss_kib(100);
  p.set_gpu_mem_kib(0);
  EXPECT_FALSE(ProcessFromProto(p).gpu_mem_kib);  // has_gpu_mem false
  p.set_has_gpu_mem(true);
  p.set_gpu_mem_kib(2048);
  EXPECT_EQ(ProcessFromProto(p).gpu_mem_kib, 2048u);
  EXPECT_FALSE(ProcessFromProto(p).cpu_permille);  // first sight: no share yet
  p.set_cpu_permille(0);
  EXPECT_EQ(ProcessFromProto(p).cpu_permille, std::optional<uint32_t>(0));  // idle, measured
}

}  // namespace
}  // namespace edgemon::client
