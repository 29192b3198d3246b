// The gRPC API end to end: a real server on a real unix socket in a temp
// dir, a real Collection on the agx-orin fixture, a real RingStore file, and
// a sync C++ stub as the client.
//
// Time is fake (tests/support/fake_clock.h): the service, its leases and the
// sampler read a FakeClock, so no assertion here depends on how fast the
// machine is. A test that needs the sampler's own loop runs it paced (the
// test steps it one wake-up at a time) or, where only "frames keep coming"
// matters, free-running through fake time. How long things take on a real
// clock is measured by bench/stuck_streams_bench and bench/api_bench.
#include <google/protobuf/wrappers.pb.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <limits>
#include <optional>
#include <thread>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/sampler.h"
#include "daemon/service/feed.h"
#include "daemon/service/server.h"
#include "daemon/service/service.h"
#include "daemon/service/watch_hub.h"
#include "daemon/store/ring_store.h"
#include "daemon/store_sink.h"
#include "edgemon/v1/edgemon.grpc.pb.h"
#include "tests/support/fake_clock.h"
#include "tests/support/known_history.h"
#include "tests/support/temp_tree.h"

namespace edgemon::service {
namespace {

using grpc::StatusCode;
constexpr int64_t kSec = 1'000'000'000;

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = std::make_unique<RootedSysFs>(testing::Fixture("agx-orin"));
    CollectOptions co;
    collection_ = std::make_unique<Collection>(*fs_, MakeDefaultCollectors(co), co,
                                               [](const std::string&) {});
    collection_->Discover();
    auto st = store::RingStore::Open(tmp_.root() + "/edgemon.db", store_options_);
    ASSERT_TRUE(st.ok()) << st.status().message();
    store_ = std::move(st.value());
    hub_ = std::make_unique<WatchHub>(kMaxStreams);
    SamplerOptions so;
    so.frame_period_ns = frame_period_ns_;
    so.energy_period_ns = 0;
    sampler_ = std::make_unique<Sampler>(*collection_, clock_, so);
    sampler_->AddSink(hub_.get());
    sampler_->TickOnce();  // the hub knows the inventory and a frame
    ServiceOptions opts;
    opts.daemon_version = "test";
    opts.frames_per_chunk = 40;
    opts.max_rows = 1000;
    opts.live_energy = &collection_->live_energy();
    opts.summary_page_frames = 4;  // Summaries read several pages
    opts.push_status = [](google::protobuf::RepeatedPtrField<v1::PushStatus>* out) {
      v1::PushStatus* p = out->Add();
      p->set_destination("http://vm:8428/api/v1/write");
      p->set_backlog_frames(12);
      p->set_stalled(true);
    };
    service_ =
        std::make_unique<TelemetryService>(*hub_, *store_, clock_, sampler_.get(), fs_.get(), opts);
    server_ = std::make_unique<ApiServer>(*service_);
    socket_ = tmp_.root() + "/run/edgemon/api.sock";
    ServerOptions so2;
    so2.unix_path = socket_;
    so2.feed_request_timeout_ms = feed_request_timeout_ms_;
    ASSERT_TRUE(server_->Start(so2).ok());
    channel_ = grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials());
    stub_ = v1::Telemetry::NewStub(channel_);
  }

  void TearDown() override {
    StopSampling();
    if (server_) server_->Shutdown();
    if (store_) (void)store_->Close();
  }

  // Runs the sampler's loop on its own thread. Paced (the default), it has
  // taken no frame yet when this returns: the test steps it (clock_.Step()).
  void StartSampling() {
    sampling_ = std::thread([this] { sampler_->Run(); });
    if (paced_) clock_.AwaitWaiter();
  }
  // The sampler's loop runs through fake time as fast as it can: frames keep
  // coming without the test stepping them.
  void StartFreeRunningSampler() {
    paced_ = false;
    clock_.SetMode(testing::FakeClock::Mode::kJump);
    StartSampling();
  }
  // Reads `n` frames of a Watch with `interval_ns`, stepping the paced
  // sampler: after each step whose newest frame is due for the stream (the
  // interval after the last one read), that frame is read before the next
  // step, so no frame is coalesced and the spacing is exactly the stream's.
  std::vector<v1::Frame> ReadStepping(grpc::ClientReader<v1::Frame>& reader, size_t n,
                                      int64_t interval_ns) {
    std::vector<v1::Frame> frames;
    v1::Frame f;
    if (!reader.Read(&f)) return frames;  // the newest frame at subscription
    frames.push_back(f);
    while (frames.size() < n) {
      clock_.Step();
      const int64_t since = clock_.BoottimeNs() - frames.back().boottime_ns();
      if (since > 0 && since >= interval_ns) {
        if (!reader.Read(&f)) break;
        frames.push_back(f);
      }
    }
    return frames;
  }
  void StopSampling() {
    if (sampling_.joinable()) {
      sampler_->Stop();
      sampling_.join();
    }
  }

  const Channel& Find(Kind k, const std::string& name, Field f) {
    const Channel* c = collection_->inventory().Find(k, name, f);
    EXPECT_NE(c, nullptr) << name;
    return *c;
  }

  Frame HistoryFrame(uint64_t seq, int64_t t0, int i) const {
    return testing::HistoryFrame(seq, t0, i, collection_->inventory().channels.size());
  }

  // testing::WriteKnownHistory on VIN_SYS_5V0, CPU-therm and the GPU, from
  // 1000 s ago.
  int64_t WriteKnownHistory() {
    const auto& inv = collection_->inventory();
    store_->SetInventory(inv);
    const int64_t t0 = clock_.RealtimeNs() - 1000 * kSec;
    const testing::KnownHistoryIds ids{Find(Kind::kRail, "VIN_SYS_5V0", Field::kEnergy).id,
                                       Find(Kind::kRail, "VIN_SYS_5V0", Field::kPower).id,
                                       Find(Kind::kThermal, "CPU-therm", Field::kTemp).id,
                                       Find(Kind::kGpu, "gpu", Field::kFreq).id};
    EXPECT_TRUE(testing::WriteKnownHistory(*store_, inv.channels.size(), ids, t0).ok());
    return t0;
  }

  static constexpr size_t kMaxStreams = 8;
  int feed_request_timeout_ms_ = LocalFeed::kRequestTimeoutMs;
  int64_t frame_period_ns_ = 20'000'000;  // 50 Hz: enough frames for interval tests
  store::RingStoreOptions store_options_;
  testing::TempTree tmp_;
  bool paced_ = true;
  testing::FakeClock clock_{testing::FakeClock::Mode::kPaced};
  std::unique_ptr<RootedSysFs> fs_;
  std::unique_ptr<Collection> collection_;
  std::unique_ptr<store::RingStore> store_;
  std::unique_ptr<WatchHub> hub_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<TelemetryService> service_;
  std::unique_ptr<ApiServer> server_;
  std::thread sampling_;
  std::string socket_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Telemetry::Stub> stub_;
};

TEST_F(ServiceTest, SocketIsGroupOnly) {
  struct stat st {};
  ASSERT_EQ(::stat(socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
}

TEST_F(ServiceTest, DeviceInfoMatchesInventory) {
  grpc::ClientContext ctx;
  v1::DeviceInfo info;
  ASSERT_TRUE(stub_->GetDeviceInfo(&ctx, {}, &info).ok());
  const auto& inv = collection_->inventory();
  ASSERT_EQ(info.channels_size(), static_cast<int>(inv.channels.size()));
  for (const auto& c : inv.channels) {
    const auto& pc = info.channels(static_cast<int>(c.id));
    EXPECT_EQ(pc.id(), c.id);
    EXPECT_EQ(pc.key(), c.Key());
    EXPECT_EQ(pc.unit(), ToString(c.unit));
    EXPECT_EQ(pc.parent(), c.parent);
    EXPECT_EQ(pc.has_max(), c.max.has_value());
  }
  EXPECT_EQ(info.board().model(), inv.board.model);
  EXPECT_EQ(info.board().soc(), inv.board.soc);
  EXPECT_EQ(info.interval_ms(), 20u);
  EXPECT_EQ(info.api_version(), 1u);
  EXPECT_EQ(info.daemon_version(), "test");
  EXPECT_EQ(info.generation(), collection_->generation());
}

TEST_F(ServiceTest, LatestHasFixtureValues) {
  const Channel& p = Find(Kind::kRail, "VIN_SYS_5V0", Field::kPower);
  const Channel& v = Find(Kind::kRail, "VIN_SYS_5V0", Field::kVoltage);
  grpc::ClientContext ctx;
  v1::GetLatestRequest req;
  req.add_channels(p.Key());
  req.add_channels(std::to_string(v.id));
  v1::Frame f;
  ASSERT_TRUE(stub_->GetLatest(&ctx, req, &f).ok());
  ASSERT_EQ(f.ids_size(), 2);
  std::vector<uint32_t> ids{std::min(p.id, v.id), std::max(p.id, v.id)};
  EXPECT_EQ(f.ids(0), ids[0]);
  EXPECT_EQ(f.ids(1), ids[1]);
  // The fixture's INA3221: 5008 mV x 800 mA = 4006 mW (as probed).
  int64_t power = f.ids(0) == p.id ? f.values(0) : f.values(1);
  int64_t volts = f.ids(0) == v.id ? f.values(0) : f.values(1);
  EXPECT_EQ(volts, 5008);
  EXPECT_EQ(power, 4006);
  EXPECT_EQ(f.seq(), hub_->Latest().frame->seq);
}

TEST_F(ServiceTest, WatchHonoursIntervalAndSubset) {
  StartSampling();
  const Channel& t = Find(Kind::kThermal, "CPU-therm", Field::kTemp);
  grpc::ClientContext ctx;
  v1::WatchRequest req;
  req.set_interval_ms(100);
  req.add_channels("rail/VIN_SYS_5V0/*");
  req.add_channels(t.Key());
  auto reader = stub_->Watch(&ctx, req);
  std::vector<v1::Frame> frames = ReadStepping(*reader, 6, 100'000'000);
  ASSERT_EQ(frames.size(), 6u);
  std::set<uint32_t> want{t.id};
  for (const auto& c : collection_->inventory().channels) {
    if (c.kind == Kind::kRail && c.name == "VIN_SYS_5V0") want.insert(c.id);
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    std::set<uint32_t> got(frames[i].ids().begin(), frames[i].ids().end());
    for (uint32_t id : got) EXPECT_TRUE(want.count(id)) << id;
    EXPECT_TRUE(got.count(t.id));
    if (i >= 2) {  // the first frame is the newest at subscription time
      int64_t dt = frames[i].boottime_ns() - frames[i - 1].boottime_ns();
      EXPECT_GE(dt, 90'000'000) << i;
      EXPECT_LE(dt, 200'000'000) << i;
    }
  }
  ctx.TryCancel();
  EXPECT_EQ(reader->Finish().error_code(), StatusCode::CANCELLED);
  StopSampling();
  EXPECT_EQ(sampler_->deadline_misses(), 0u);  // fake time: no tick is ever late
}

TEST_F(ServiceTest, EveryFrameWithIntervalZero) {
  StartSampling();
  grpc::ClientContext ctx;
  v1::WatchRequest req;
  req.add_channels("cpu/*");
  auto reader = stub_->Watch(&ctx, req);
  std::vector<v1::Frame> frames = ReadStepping(*reader, 4, 0);
  ASSERT_EQ(frames.size(), 4u);
  for (size_t i = 1; i < frames.size(); ++i) EXPECT_EQ(frames[i].seq(), frames[i - 1].seq() + 1);
  ctx.TryCancel();
  (void)reader->Finish();
}

// Streams that never read: the sampler never waits, each stream coalesces to
// the newest frame instead of queueing, and shutting down finishes them. The
// sampler runs free through fake time; the same case on a real clock at
// 200 Hz, with its RSS growth, missed deadlines and shutdown time, is
// bench/stuck_streams_bench.
TEST_F(ServiceTest, NeverReadingClientsDoNotHurtSampling) {
  StartFreeRunningSampler();
  // A client that announces no more than a 16 KiB window and never reads,
  // so the server's writes really stall (with BDP probing on, the client
  // library would keep buffering on its side).
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 * 1024);
  auto stuck = v1::Telemetry::NewStub(
      grpc::CreateCustomChannel("unix:" + socket_, grpc::InsecureChannelCredentials(), args));
  std::vector<std::unique_ptr<grpc::ClientContext>> ctxs;
  std::vector<std::unique_ptr<grpc::ClientReader<v1::Frame>>> readers;
  for (size_t i = 0; i < kMaxStreams; ++i) {
    ctxs.push_back(std::make_unique<grpc::ClientContext>());
    readers.push_back(stuck->Watch(ctxs.back().get(), v1::WatchRequest{}));
  }
  while (hub_->watchers() < kMaxStreams) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // Many more frames than 16 KiB hold, offered to every stream.
  const uint64_t start = sampler_->frames();
  while (sampler_->frames() < start + 2000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  uint64_t frames = sampler_->frames();
  uint64_t sent = hub_->frames_sent();
  uint64_t coalesced = hub_->frames_coalesced();
  EXPECT_GT(frames, 100u);
  // Each stream is stuck behind HTTP/2 flow control: it wrote fewer frames
  // than were sampled, and the rest were coalesced, not queued.
  EXPECT_LT(sent, frames * kMaxStreams);
  EXPECT_GT(coalesced, 0u);
  // Shutting down with stuck streams finishes them (a hang here is caught by
  // the test's timeout).
  StopSampling();
  server_->Shutdown();
  server_.reset();
  EXPECT_EQ(hub_->active_streams(), 0u);
  for (auto& ctx : ctxs) ctx->TryCancel();
  for (auto& r : readers) (void)r->Finish();
}

TEST_F(ServiceTest, StreamCapGivesResourceExhausted) {
  std::vector<std::unique_ptr<grpc::ClientContext>> ctxs;
  std::vector<std::unique_ptr<grpc::ClientReader<v1::Frame>>> readers;
  for (size_t i = 0; i < kMaxStreams; ++i) {
    ctxs.push_back(std::make_unique<grpc::ClientContext>());
    readers.push_back(stub_->Watch(ctxs.back().get(), v1::WatchRequest{}));
    v1::Frame f;
    ASSERT_TRUE(readers.back()->Read(&f));  // served at once with the newest frame
  }
  EXPECT_EQ(hub_->active_streams(), kMaxStreams);
  {
    grpc::ClientContext ctx;
    auto r = stub_->Watch(&ctx, v1::WatchRequest{});
    v1::Frame f;
    EXPECT_FALSE(r->Read(&f));
    auto s = r->Finish();
    EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(s.error_message().find("limit 8"), std::string::npos) << s.error_message();
  }
  {  // Query streams share the cap.
    grpc::ClientContext ctx;
    v1::QueryRequest q;
    q.set_from_ns(0);
    q.set_to_ns(1);
    auto r = stub_->Query(&ctx, q);
    v1::QueryChunk c;
    while (r->Read(&c)) {
    }
    EXPECT_EQ(r->Finish().error_code(), StatusCode::RESOURCE_EXHAUSTED);
  }
  // Closing one frees its slot.
  ctxs[0]->TryCancel();
  (void)readers[0]->Finish();
  for (int i = 0; i < 200 && hub_->active_streams() >= kMaxStreams; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  grpc::ClientContext ctx;
  auto r = stub_->Watch(&ctx, v1::WatchRequest{});
  v1::Frame f;
  EXPECT_TRUE(r->Read(&f));
  ctx.TryCancel();
  (void)r->Finish();
  for (size_t i = 1; i < ctxs.size(); ++i) {
    ctxs[i]->TryCancel();
    (void)readers[i]->Finish();
  }
}

// Opening and cancelling streams in a tight loop leaks no slot.
TEST_F(ServiceTest, ChurnLeavesNoStreams) {
  StartFreeRunningSampler();
  // A slot is released in OnDone, just after the client saw its status, so
  // a tight loop may briefly meet the cap (how often depends on the load);
  // it must never stay there: each refused stream is served once the slots
  // of the cancelled ones are released.
  int served = 0;
  for (int i = 0; i < 100; ++i) {
    bool refused_once = false;
    for (;;) {
      grpc::ClientContext ctx;
      auto r = stub_->Watch(&ctx, v1::WatchRequest{});
      if (i % 2 == 0) {
        v1::Frame f;
        if (r->Read(&f)) {
          ++served;
        } else {
          EXPECT_EQ(r->Finish().error_code(), StatusCode::RESOURCE_EXHAUSTED);
          ASSERT_FALSE(refused_once)
              << "stream " << i << " refused again after the slots were free";
          refused_once = true;
          // Wait for the cancelled streams' OnDone (bounded only by ctest's timeout).
          while (hub_->active_streams() >= kMaxStreams) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
          continue;
        }
      }
      ctx.TryCancel();
      (void)r->Finish();
      break;
    }
  }
  EXPECT_EQ(served, 50);
  for (int i = 0; i < 200 && hub_->active_streams() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(hub_->active_streams(), 0u);
  EXPECT_EQ(hub_->watchers(), 0u);
}

grpc::Status WatchStatus(v1::Telemetry::Stub& stub, const v1::WatchRequest& req) {
  grpc::ClientContext ctx;
  auto r = stub.Watch(&ctx, req);
  v1::Frame f;
  while (r->Read(&f)) {
  }
  return r->Finish();
}

grpc::Status QueryAll(v1::Telemetry::Stub& stub, const v1::QueryRequest& req,
                      std::vector<v1::QueryChunk>* chunks) {
  grpc::ClientContext ctx;
  auto r = stub.Query(&ctx, req);
  v1::QueryChunk c;
  while (r->Read(&c)) chunks->push_back(c);
  return r->Finish();
}

TEST_F(ServiceTest, BadInputIsRefusedAndWritesNothing) {
  auto before = store_->Stats();
  ASSERT_TRUE(before.ok());
  {
    v1::WatchRequest w;
    w.add_channels("rail/NO_SUCH_RAIL/power");
    auto s = WatchStatus(*stub_, w);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("no channel matches \"rail/NO_SUCH_RAIL/power\""),
              std::string::npos)
        << s.error_message();
  }
  {
    v1::WatchRequest w;
    w.set_interval_ms(86'400'000);
    auto s = WatchStatus(*stub_, w);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("interval_ms"), std::string::npos);
  }
  {
    grpc::ClientContext ctx;
    v1::GetLatestRequest r;
    r.add_channels("99999");
    v1::Frame f;
    EXPECT_EQ(stub_->GetLatest(&ctx, r, &f).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  std::vector<v1::QueryChunk> chunks;
  v1::QueryRequest q;
  q.set_from_ns(10);
  q.set_to_ns(5);
  auto s = QueryAll(*stub_, q, &chunks);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("from_ns must be before to_ns"), std::string::npos);
  q.set_from_ns(0);
  q.set_to_ns(100);
  q.set_limit(4'000'000'000u);
  s = QueryAll(*stub_, q, &chunks);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("limit: at most 1000"), std::string::npos);
  q.set_limit(0);
  q.set_step_ns(5);
  EXPECT_EQ(QueryAll(*stub_, q, &chunks).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(chunks.empty());
  {
    grpc::ClientContext ctx;
    v1::EndWindowRequest r;
    r.set_id(4242);
    v1::Window w;
    auto st = stub_->EndWindow(&ctx, r, &w);
    EXPECT_EQ(st.error_code(), StatusCode::NOT_FOUND);
    EXPECT_EQ(st.error_message(), "no window with id 4242");
  }
  {
    grpc::ClientContext ctx;
    v1::SummarizeRequest r;
    r.set_window_id(4242);
    v1::Summary sum;
    EXPECT_EQ(stub_->Summarize(&ctx, r, &sum).error_code(), StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext ctx;
    v1::SummarizeRequest r;
    v1::Summary sum;
    EXPECT_EQ(stub_->Summarize(&ctx, r, &sum).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  {
    grpc::ClientContext ctx;
    v1::BeginWindowRequest r;
    r.set_label(std::string(1000, 'x'));
    v1::Window w;
    EXPECT_EQ(stub_->BeginWindow(&ctx, r, &w).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  {
    grpc::ClientContext ctx;
    v1::BoostRequest r;
    v1::BoostResponse b;
    EXPECT_EQ(stub_->Boost(&ctx, r, &b).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  auto after = store_->Stats();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->windows, before->windows);
  EXPECT_EQ(after->frames, before->frames);
  EXPECT_EQ(after->commits, before->commits);
}

TEST_F(ServiceTest, QueryRawFramesInChunks) {
  int64_t t0 = WriteKnownHistory();
  const Channel& p = Find(Kind::kRail, "VIN_SYS_5V0", Field::kPower);
  v1::QueryRequest q;
  q.set_from_ns(t0);
  q.set_to_ns(t0 + 100 * kSec);
  q.add_channels(p.Key());
  std::vector<v1::QueryChunk> chunks;
  ASSERT_TRUE(QueryAll(*stub_, q, &chunks).ok());
  std::vector<v1::Frame> frames;
  for (const auto& c : chunks) {
    EXPECT_LE(c.frames_size(), 40);
    for (const auto& f : c.frames()) frames.push_back(f);
  }
  EXPECT_EQ(chunks.size(), 3u);  // 99 frames in pages of 40
  ASSERT_EQ(frames.size(), 99u);
  EXPECT_FALSE(chunks.back().truncated());
  for (const auto& f : frames) {
    int i = static_cast<int>((f.realtime_ns() - t0) / kSec);
    ASSERT_EQ(f.ids_size(), 1);
    EXPECT_EQ(f.ids(0), p.id);
    EXPECT_EQ(f.values(0), 4000 + (i % 10) * 200) << i;
  }
  // A row limit cuts the result and says so.
  q.set_limit(50);
  chunks.clear();
  ASSERT_TRUE(QueryAll(*stub_, q, &chunks).ok());
  size_t n = 0;
  for (const auto& c : chunks) n += static_cast<size_t>(c.frames_size());
  EXPECT_EQ(n, 50u);
  EXPECT_TRUE(chunks.back().truncated());
}

TEST_F(ServiceTest, AQueryEndingAfterTheNewestCommittedFrameHoldsTheQueuedOnes) {
  int64_t t0 = WriteKnownHistory();  // committed; its newest frame is 900 s old
  auto latest = store_->Latest();
  ASSERT_TRUE(latest.ok());
  ASSERT_EQ(latest->frames.size(), 1u);
  const Frame last = latest->frames[0];
  store_->SetCommitInterval(3'600'000);  // the store would wait an hour on its own
  const Channel& p = Find(Kind::kRail, "VIN_SYS_5V0", Field::kPower);
  for (int64_t i = 1; i <= 10; ++i) {
    Frame f;
    f.seq = store_->next_seq();
    f.boottime_ns = last.boottime_ns + i * kSec;
    f.realtime_ns = last.realtime_ns + i * kSec;
    f.values.assign(collection_->inventory().channels.size(), std::nullopt);
    f.values[p.id] = 7000 + i;
    ASSERT_NE(store_->Append(std::move(f)), 0u);
  }
  // A range ending long before now, after the newest committed frame.
  v1::QueryRequest q;
  q.set_from_ns(last.realtime_ns + 1);
  q.set_to_ns(last.realtime_ns + 20 * kSec);
  ASSERT_LT(q.to_ns(), t0 + 900 * kSec);
  q.add_channels(p.Key());
  std::vector<v1::QueryChunk> chunks;
  ASSERT_TRUE(QueryAll(*stub_, q, &chunks).ok());
  std::vector<int64_t> values;
  for (const auto& c : chunks) {
    for (const auto& f : c.frames()) values.push_back(f.values_size() ? f.values(0) : -1);
  }
  ASSERT_EQ(values.size(), 10u);
  EXPECT_EQ(values.front(), 7001);
  EXPECT_EQ(values.back(), 7010);
  // Read from the writer's memory: nothing was committed for them.
  auto st = store_->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->queued_frames, 10u);

  // A range ending at the newest committed frame asks for no commit either.
  store_->Append(Frame{store_->next_seq(), last.boottime_ns + 11 * kSec,
                       last.realtime_ns + 11 * kSec,
                       std::vector<Value>(collection_->inventory().channels.size())});
  q.set_from_ns(t0);
  q.set_to_ns(last.realtime_ns + 10 * kSec);
  chunks.clear();
  ASSERT_TRUE(QueryAll(*stub_, q, &chunks).ok());
  st = store_->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->queued_frames, 11u);
}

TEST_F(ServiceTest, QueryDownsampled) {
  int64_t t0 = WriteKnownHistory();
  const Channel& p = Find(Kind::kRail, "VIN_SYS_5V0", Field::kPower);
  const Channel& t = Find(Kind::kThermal, "CPU-therm", Field::kTemp);
  v1::QueryRequest q;
  q.set_from_ns(t0);
  q.set_to_ns(t0 + 100 * kSec);
  q.set_step_ns(10 * kSec);
  q.add_channels(p.Key());
  q.add_channels(t.Key());
  std::vector<v1::QueryChunk> chunks;
  ASSERT_TRUE(QueryAll(*stub_, q, &chunks).ok());
  ASSERT_EQ(chunks.size(), 2u);  // one series per channel
  for (const auto& c : chunks) {
    ASSERT_EQ(c.series_size(), 1);
    const auto& s = c.series(0);
    ASSERT_EQ(s.buckets_size(), 10);
    if (s.id() == p.id) {
      EXPECT_EQ(s.buckets(0).min(), 4000);
      EXPECT_EQ(s.buckets(0).max(), 5800);
      EXPECT_DOUBLE_EQ(s.buckets(0).avg(), 4900);
      EXPECT_EQ(s.buckets(0).count(), 10u);
      EXPECT_EQ(s.buckets(1).count(), 9u);  // frame 15 is missing
      EXPECT_DOUBLE_EQ(s.buckets(1).avg(), (49000.0 - 5000) / 9);
    } else {
      EXPECT_EQ(s.id(), t.id);
      EXPECT_EQ(s.buckets(3).min(), 43000);
      EXPECT_EQ(s.buckets(3).max(), 43900);
    }
  }
  // Buckets beyond the limit are cut.
  q.set_limit(4);
  chunks.clear();
  ASSERT_TRUE(QueryAll(*stub_, q, &chunks).ok());
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].series(0).buckets_size(), 4);
  EXPECT_TRUE(chunks.back().truncated());
}

// Ranges wider than int64 (any int64 from, to and step is a valid request):
// answered with buckets at the right times, or refused with
// INVALID_ARGUMENT; the step count is the store's own, exact one.
TEST_F(ServiceTest, QueryAtTheEndsOfInt64IsAnsweredOrRefused) {
  const int64_t t0 = WriteKnownHistory();
  const Channel& p = Find(Kind::kRail, "VIN_SYS_5V0", Field::kPower);
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t k2p62 = int64_t{1} << 62;
  constexpr int64_t k1678 = -9'214'560'000'000'000'000;  // 1678-01-01T00:00:00Z
  constexpr int64_t k2262 = 9'214'646'400'000'000'000;   // 2262-01-01T00:00:00Z
  constexpr int64_t k3000d = int64_t{3000} * 86'400 * kSec;
  __extension__ typedef __int128 Wide;
  auto query = [&](int64_t from, int64_t to, int64_t step, std::vector<v1::QueryChunk>* chunks) {
    v1::QueryRequest q;
    q.set_from_ns(from);
    q.set_to_ns(to);
    q.set_step_ns(step);
    q.add_channels(p.Key());
    return QueryAll(*stub_, q, chunks);
  };
  struct Case {
    int64_t from, to, step;
  };
  for (Case c : {Case{kMin, kMax, k2p62}, Case{kMin, kMax, kMax}, Case{k1678, k2262, k3000d}}) {
    SCOPED_TRACE(::testing::Message() << c.from << ".." << c.to << " step " << c.step);
    std::vector<v1::QueryChunk> chunks;
    grpc::Status st = query(c.from, c.to, c.step, &chunks);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(chunks.size(), 1u);
    ASSERT_EQ(chunks[0].series_size(), 1);
    const auto& s = chunks[0].series(0);
    ASSERT_EQ(s.buckets_size(), 1);  // the known history is 100 s long
    const Wide start = (Wide{t0} - c.from) / c.step * c.step + c.from;
    EXPECT_LE(start, Wide{t0});
    EXPECT_EQ(s.buckets(0).t_ns(), t0);    // dated at its first value, after its start
    EXPECT_EQ(s.buckets(0).count(), 99u);  // frame 15 is missing
    EXPECT_EQ(s.buckets(0).min(), 4000);
    EXPECT_EQ(s.buckets(0).max(), 5800);
  }
  // Over a million steps, counted exactly: from INT64_MIN at 1 ms, and one
  // step over at a width whose double rounds to exactly a million steps.
  for (Case c : {Case{kMin, kMax, 1'000'000}, Case{kMin, kMax, int64_t{1} << 44},
                 Case{t0, t0 + int64_t{1'000'000} * 1'000'000 + 1, 1'000'000}}) {
    std::vector<v1::QueryChunk> chunks;
    grpc::Status st = query(c.from, c.to, c.step, &chunks);
    EXPECT_EQ(st.error_code(), StatusCode::INVALID_ARGUMENT) << st.error_message();
    EXPECT_NE(st.error_message().find("step"), std::string::npos) << st.error_message();
  }
  std::vector<v1::QueryChunk> ok;
  ASSERT_TRUE(
      query(t0, t0 + int64_t{1'000'000} * 1'000'000, 1'000'000, &ok).ok());  // exactly a million
  // Raw frames over the whole int64 range, and an empty range at its top.
  v1::QueryRequest raw;
  raw.set_from_ns(kMin);
  raw.set_to_ns(kMax);
  raw.set_limit(10);
  std::vector<v1::QueryChunk> chunks;
  ASSERT_TRUE(QueryAll(*stub_, raw, &chunks).ok());
  ASSERT_FALSE(chunks.empty());
  EXPECT_EQ(chunks[0].frames_size(), 10);
  chunks.clear();
  ASSERT_TRUE(query(kMax - 1, kMax, kMax, &chunks).ok());
  // Still serving.
  grpc::ClientContext ctx;
  v1::Frame latest;
  EXPECT_TRUE(stub_->GetLatest(&ctx, v1::GetLatestRequest(), &latest).ok());
}

TEST_F(ServiceTest, SummarizeKnownRange) {
  int64_t t0 = WriteKnownHistory();
  grpc::ClientContext ctx;
  v1::SummarizeRequest r;
  r.mutable_time()->set_from_ns(t0 + 10 * kSec);
  r.mutable_time()->set_to_ns(t0 + 20 * kSec);
  v1::Summary s;
  auto st = stub_->Summarize(&ctx, r, &s);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_DOUBLE_EQ(s.duration_s(), 10.0);
  const v1::RailSummary* rail = nullptr;
  for (const auto& x : s.rails()) {
    if (x.name() == "VIN_SYS_5V0") rail = &x;
  }
  ASSERT_NE(rail, nullptr);
  EXPECT_NEAR(rail->energy_mj(), 50000.0, 1e-6);  // 5 W for 10 s
  EXPECT_NEAR(rail->avg_power_mw(), 5000.0, 1e-6);
  EXPECT_EQ(rail->peak_power_mw(), 5800);
  const v1::TempSummary* temp = nullptr;
  for (const auto& x : s.temps()) {
    if (x.name() == "CPU-therm") temp = &x;
  }
  ASSERT_NE(temp, nullptr);
  EXPECT_EQ(temp->start_mc(), 41000);
  EXPECT_EQ(temp->min_mc(), 41000);
  EXPECT_EQ(temp->max_mc(), 41900);
  // GPU residency: frames 10-12 at 1300.5 MHz, 13, 14 and 16-19 at 624.75 MHz.
  const v1::FreqResidency* gpu = nullptr;
  for (const auto& x : s.residency()) {
    if (x.name() == "gpu") gpu = &x;
  }
  ASSERT_NE(gpu, nullptr);
  ASSERT_EQ(gpu->khz_share_size(), 2);
  EXPECT_NEAR(gpu->khz_share().at(1300500), 3.0 / 9, 1e-12);
  EXPECT_NEAR(gpu->khz_share().at(624750), 6.0 / 9, 1e-12);
  EXPECT_EQ(s.samples(), 9u);  // frames 10..19 without 15
  EXPECT_EQ(s.gaps(), 1u);
  EXPECT_NE(s.note().find("9 frames"), std::string::npos) << s.note();
}

const v1::RailSummary* FindRail(const v1::Summary& s, const std::string& name) {
  for (const auto& x : s.rails()) {
    if (x.name() == name) return &x;
  }
  return nullptr;
}

grpc::Status SummarizeTime(v1::Telemetry::Stub& stub, int64_t from, int64_t to, v1::Summary* s) {
  grpc::ClientContext ctx;
  v1::SummarizeRequest r;
  r.mutable_time()->set_from_ns(from);
  r.mutable_time()->set_to_ns(to);
  return stub.Summarize(&ctx, r, s);
}

// A rail whose counter did not move drew 0 J: that is a measurement, sent
// as 0 with its presence, not left out as if unmeasured.
TEST_F(ServiceTest, ZeroEnergyIsSentAsZeroNotAbsent) {
  const auto& inv = collection_->inventory();
  store_->SetInventory(inv);
  const int64_t t0 = clock_.RealtimeNs() - 1000 * kSec;
  ChannelId e = Find(Kind::kRail, "VIN_SYS_5V0", Field::kEnergy).id;
  ChannelId t = Find(Kind::kThermal, "CPU-therm", Field::kTemp).id;
  const uint64_t seq = store_->next_seq();
  for (int i = 0; i < 20; ++i) {
    Frame f = HistoryFrame(seq, t0, i);
    f.values[e] = 7000;  // the counter stood still
    f.values[t] = 0;     // 0 C is a temperature
    store_->Append(f);
  }
  ASSERT_TRUE(store_->Flush().ok());
  v1::Summary s;
  auto st = SummarizeTime(*stub_, t0 + 2 * kSec, t0 + 12 * kSec, &s);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const v1::RailSummary* rail = FindRail(s, "VIN_SYS_5V0");
  ASSERT_NE(rail, nullptr);
  EXPECT_TRUE(rail->has_energy_mj());
  EXPECT_EQ(rail->energy_mj(), 0.0);
  EXPECT_TRUE(rail->has_avg_power_mw());
  EXPECT_EQ(rail->avg_power_mw(), 0.0);
  EXPECT_FALSE(rail->has_peak_power_mw());  // no power sample: no peak
  const v1::TempSummary* temp = nullptr;
  for (const auto& x : s.temps()) {
    if (x.name() == "CPU-therm") temp = &x;
  }
  ASSERT_NE(temp, nullptr);
  EXPECT_TRUE(temp->has_start_mc());
  EXPECT_TRUE(temp->has_min_mc());
  EXPECT_TRUE(temp->has_max_mc());
  EXPECT_EQ(temp->max_mc(), 0);
}

// A range past the newest stored frame is answered from the live counters:
// the fixture's rails draw constant power, so the energy is P * duration.
TEST_F(ServiceTest, RangePastTheNewestFrameIsMeasuredFromLiveCounters) {
  StoreSink sink(*store_);
  sampler_->AddSink(&sink);
  const ChannelId p = Find(Kind::kRail, "VIN_SYS_5V0", Field::kPower).id;
  const int64_t t1 = sampler_->TickOnce().realtime_ns;
  clock_.Advance(20'000'000);
  const Frame& f2 = sampler_->TickOnce();
  const int64_t t2 = f2.realtime_ns;
  ASSERT_TRUE(f2.values[p]);
  const double mw = static_cast<double>(*f2.values[p]);
  clock_.Advance(3'000'000);
  // Newest frame + 1 ms.
  v1::Summary s;
  auto st = SummarizeTime(*stub_, t1, t2 + 1'000'000, &s);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const auto* rail = FindRail(s, "VIN_SYS_5V0");
  ASSERT_NE(rail, nullptr);
  const double want = mw * static_cast<double>(t2 + 1'000'000 - t1) * 1e-9;
  EXPECT_NEAR(rail->energy_mj(), want, 0.01 * want + 1) << "duration " << s.duration_s();
  EXPECT_NEAR(rail->avg_power_mw(), rail->energy_mj() / s.duration_s(), 1e-6);
  EXPECT_FALSE(s.has_requested_to_ns());
  // Between rail samples, after the newest one: energy, and no peak (no
  // sample fell in it), never a peak of 0.
  v1::Summary between;
  ASSERT_TRUE(SummarizeTime(*stub_, t2 + 500'000, t2 + 2'500'000, &between).ok());
  rail = FindRail(between, "VIN_SYS_5V0");
  ASSERT_NE(rail, nullptr);
  EXPECT_NEAR(rail->energy_mj(), mw * 2e-3, 0.01 * mw * 2e-3);
  EXPECT_FALSE(rail->has_peak_power_mw());
  // With the frame inside: the peak is its sample.
  ASSERT_TRUE(SummarizeTime(*stub_, t1, t2 + 1'000'000, &s).ok());
  rail = FindRail(s, "VIN_SYS_5V0");
  ASSERT_TRUE(rail && rail->has_peak_power_mw());
  EXPECT_EQ(rail->peak_power_mw(), *f2.values[p]);
}

// A window opened and closed between two frames (record -- true) has its
// energy at once, from the live counters, and EndWindow returns the reading.
TEST_F(ServiceTest, InstantWindowIsMeasuredWithoutWaitingForAFrame) {
  StoreSink sink(*store_);
  sampler_->AddSink(&sink);
  const Frame& f = sampler_->TickOnce();
  const ChannelId p = Find(Kind::kRail, "VIN_SYS_5V0", Field::kPower).id;
  const double mw = static_cast<double>(*f.values[p]);
  clock_.Advance(1'000'000);  // the window opens after the frame
  v1::Window w, ended;
  {
    grpc::ClientContext ctx;
    v1::BeginWindowRequest r;
    r.set_label("true");
    ASSERT_TRUE(stub_->BeginWindow(&ctx, r, &w).ok());
  }
  clock_.Advance(2'000'000);
  {
    grpc::ClientContext ctx;
    v1::EndWindowRequest r;
    r.set_id(w.id());
    ASSERT_TRUE(stub_->EndWindow(&ctx, r, &ended).ok());
  }
  const std::string key = "rail/VIN_SYS_5V0/energy";
  ASSERT_EQ(ended.end_energy_mj().count(key), 1u);
  ASSERT_EQ(ended.start_energy_mj().count(key), 1u);
  const double dur_s = static_cast<double>(ended.end_ns() - ended.start_ns()) / 1e9;
  const double from_window = ended.end_energy_mj().at(key) - ended.start_energy_mj().at(key);
  EXPECT_NEAR(from_window, mw * dur_s, 0.01 * mw * dur_s);
  grpc::ClientContext ctx;
  v1::SummarizeRequest r;
  r.set_window_id(w.id());
  v1::Summary s;
  ASSERT_TRUE(stub_->Summarize(&ctx, r, &s).ok());
  const auto* rail = FindRail(s, "VIN_SYS_5V0");
  ASSERT_NE(rail, nullptr);
  EXPECT_NEAR(rail->energy_mj(), from_window, 1e-9);
  EXPECT_FALSE(rail->has_peak_power_mw());
  EXPECT_EQ(s.samples(), 0u);
}

// The clipping itself is tests/daemon/summary/summarize_test.cc's: here, what the
// service refuses and that any int64 range crosses the wire.
TEST_F(ServiceTest, RangeEdgesAreClippedOrRefused) {
  int64_t t0 = WriteKnownHistory();
  v1::Summary s;
  // In the future: refused, saying so.
  grpc::Status st =
      SummarizeTime(*stub_, clock_.RealtimeNs() + 60 * kSec, clock_.RealtimeNs() + 120 * kSec, &s);
  EXPECT_EQ(st.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("future"), std::string::npos) << st.error_message();
  // The whole int64 range: clipped at both ends, no overflow.
  v1::Summary all;
  const int64_t before = clock_.RealtimeNs();
  st = SummarizeTime(*stub_, std::numeric_limits<int64_t>::min(),
                     std::numeric_limits<int64_t>::max(), &all);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(all.from_ns(), t0);
  EXPECT_GE(all.to_ns(), before);
  EXPECT_TRUE(all.has_requested_from_ns() && all.has_requested_to_ns());
  EXPECT_GT(all.duration_s(), 999.0);
  EXPECT_LT(all.duration_s(), 1100.0);
}

// Window operations are timestamped on arrival and served beside long reads:
// with the read worker held by a slow job they still answer.
TEST_F(ServiceTest, WindowsDoNotWaitBehindReads) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  ASSERT_TRUE(service_->worker().Post([released] { released.wait(); }));
  const int64_t before = clock_.RealtimeNs();
  v1::Window w, ended;
  grpc::Status begun, end;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::BeginWindowRequest r;
    r.set_label("under load");
    begun = stub_->BeginWindow(&ctx, r, &w);
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::EndWindowRequest r;
    r.set_id(w.id());
    end = stub_->EndWindow(&ctx, r, &ended);
  }
  const int64_t after = clock_.RealtimeNs();
  release.set_value();
  ASSERT_TRUE(begun.ok()) << begun.error_message();
  ASSERT_TRUE(end.ok()) << end.error_message();
  EXPECT_GE(w.start_ns(), before);
  EXPECT_LE(ended.end_ns(), after);
}

TEST_F(ServiceTest, WindowsLifecycle) {
  v1::Window w;
  {
    grpc::ClientContext ctx;
    v1::BeginWindowRequest r;
    r.set_label("bench-1");
    ASSERT_TRUE(stub_->BeginWindow(&ctx, r, &w).ok());
  }
  EXPECT_GT(w.id(), 0);
  EXPECT_EQ(w.label(), "bench-1");
  EXPECT_FALSE(w.has_end_ns());  // open: no end (never 0)
  v1::Window ended;
  {
    grpc::ClientContext ctx;
    v1::EndWindowRequest r;
    r.set_id(w.id());
    ASSERT_TRUE(stub_->EndWindow(&ctx, r, &ended).ok());
  }
  EXPECT_TRUE(ended.has_end_ns());
  EXPECT_GE(ended.end_ns(), w.start_ns());
  {
    grpc::ClientContext ctx;
    v1::EndWindowRequest r;
    r.set_id(w.id());
    v1::Window again;
    EXPECT_EQ(stub_->EndWindow(&ctx, r, &again).error_code(), StatusCode::FAILED_PRECONDITION);
  }
  {
    grpc::ClientContext ctx;
    v1::ListWindowsResponse list;
    ASSERT_TRUE(stub_->ListWindows(&ctx, {}, &list).ok());
    ASSERT_EQ(list.windows_size(), 1);
    EXPECT_EQ(list.windows(0).label(), "bench-1");
    EXPECT_EQ(list.windows(0).end_ns(), ended.end_ns());
  }
  {
    grpc::ClientContext ctx;
    v1::SummarizeRequest r;
    r.set_window_id(w.id());
    v1::Summary s;
    ASSERT_TRUE(stub_->Summarize(&ctx, r, &s).ok());
    EXPECT_EQ(s.from_ns(), w.start_ns());
    EXPECT_EQ(s.to_ns(), std::max(ended.end_ns(), w.start_ns() + 1));
  }
}

// BeginWindow through the stub: a new window, or a renewal with renew_id.
grpc::Status Begin(v1::Telemetry::Stub& stub, const std::string& label,
                   std::optional<uint32_t> lease_ms, v1::Window* out,
                   std::optional<int64_t> renew_id = std::nullopt) {
  grpc::ClientContext ctx;
  v1::BeginWindowRequest r;
  r.set_label(label);
  if (lease_ms) r.set_lease_ms(*lease_ms);
  if (renew_id) r.set_renew_id(*renew_id);
  return stub.BeginWindow(&ctx, r, out);
}

grpc::Status List(v1::Telemetry::Stub& stub, uint32_t page_size, const std::string& token,
                  v1::ListWindowsResponse* out) {
  grpc::ClientContext ctx;
  v1::ListWindowsRequest r;
  r.set_page_size(page_size);
  r.set_page_token(token);
  return stub.ListWindows(&ctx, r, out);
}

// A holder that stops renewing (a killed recorder) loses its window: the
// daemon closes it as abandoned at the last renewal. A renewed one stays open.
TEST_F(ServiceTest, LeasedWindowIsClosedAsAbandonedWhenNotRenewed) {
  v1::Window dead, kept, renewed;
  ASSERT_TRUE(Begin(*stub_, "killed", 300, &dead).ok());
  EXPECT_EQ(dead.lease_ms(), 300u);
  ASSERT_TRUE(Begin(*stub_, "alive", 1000, &kept).ok());
  ASSERT_TRUE(Begin(*stub_, "", std::nullopt, &renewed, dead.id()).ok());
  EXPECT_EQ(renewed.id(), dead.id());
  EXPECT_FALSE(renewed.has_end_ns());
  // 400 ms pass; "alive" is renewed, "killed" is not. The daemon's sweep
  // (a few times a second) then sees the lease over.
  clock_.Advance(400'000'000);
  {
    v1::Window r;
    ASSERT_TRUE(Begin(*stub_, "", std::nullopt, &r, kept.id()).ok());
  }
  std::optional<v1::Window> seen;
  while (!seen) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    v1::ListWindowsResponse list;
    ASSERT_TRUE(List(*stub_, 0, "", &list).ok());
    for (const auto& w : list.windows()) {
      if (w.id() == dead.id() && w.abandoned()) seen = w;
    }
  }
  ASSERT_TRUE(seen) << "the unrenewed window was never closed";
  EXPECT_GE(seen->end_ns(), dead.start_ns());
  EXPECT_LT(seen->end_ns(), clock_.RealtimeNs());
  {
    auto g = store_->GetWindow(kept.id());
    ASSERT_TRUE(g.ok() && g->has_value());
    EXPECT_FALSE((*g)->end_ns) << "a renewed window stays open";
    EXPECT_FALSE((*g)->abandoned);
  }
  // The holder's late renewal and end are refused, clearly.
  v1::Window late;
  EXPECT_EQ(Begin(*stub_, "", std::nullopt, &late, dead.id()).error_code(), StatusCode::NOT_FOUND);
  grpc::ClientContext ctx;
  v1::EndWindowRequest er;
  er.set_id(dead.id());
  auto st = stub_->EndWindow(&ctx, er, &late);
  EXPECT_EQ(st.error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("abandoned"), std::string::npos) << st.error_message();
  // Bad leases are refused; an unleased window cannot be renewed.
  v1::Window bad;
  EXPECT_EQ(Begin(*stub_, "x", 0, &bad).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Begin(*stub_, "x", 86'400'001, &bad).error_code(), StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(Begin(*stub_, "plain", std::nullopt, &bad).ok());
  v1::Window r;
  EXPECT_EQ(Begin(*stub_, "", std::nullopt, &r, bad.id()).error_code(),
            StatusCode::FAILED_PRECONDITION);
}

// At most 1024 windows are open at once; a huge label is refused and written nowhere.
// Leases of windows are swept only while some open window has one: an
// idle daemon's sweep timer sleeps (it woke 5 times a second, and its
// worker with it).
TEST_F(ServiceTest, WindowSweepsRunOnlyWhileAWindowHasALease) {
  v1::Window plain, leased;
  ASSERT_TRUE(Begin(*stub_, "plain", std::nullopt, &plain).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_EQ(service_->timer_sweeps(), 0u);
  ASSERT_TRUE(Begin(*stub_, "leased", 60'000, &leased).ok());
  for (int i = 0; i < 500 && service_->timer_sweeps() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(service_->timer_sweeps(), 2u);
  {
    grpc::ClientContext ctx;
    v1::EndWindowRequest er;
    er.set_id(leased.id());
    v1::Window ended;
    ASSERT_TRUE(stub_->EndWindow(&ctx, er, &ended).ok());
  }
  // The next sweep finds no lease left; the timer then sleeps again.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const uint64_t settled = service_->timer_sweeps();
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_EQ(service_->timer_sweeps(), settled);
}

TEST_F(ServiceTest, OpenWindowsAndLabelsAreCapped) {
  v1::Window w;
  auto huge = Begin(*stub_, std::string(64 << 10, 'x'), 1000, &w);
  EXPECT_EQ(huge.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(huge.error_message().find("label"), std::string::npos);
  EXPECT_EQ(Begin(*stub_, std::string(257, 'x'), std::nullopt, &w).error_code(),
            StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(Begin(*stub_, std::string(256, 'x'), std::nullopt, &w).ok());
  const int64_t first = w.id();
  // The caller's quota (root: the whole table of 1024; others: a quarter).
  const int quota = ::geteuid() == 0 ? 1024 : 256;
  for (int i = 1; i < quota; ++i) ASSERT_TRUE(Begin(*stub_, "w", std::nullopt, &w).ok()) << i;
  // Leaked marks never lock their holder out: at its quota, the holder's own
  // oldest unleased window is closed as abandoned and the next one opens.
  ASSERT_TRUE(Begin(*stub_, "w", std::nullopt, &w).ok());
  auto end = [&](int64_t id) {
    grpc::ClientContext ctx;
    v1::EndWindowRequest er;
    er.set_id(id);
    v1::Window ended;
    return stub_->EndWindow(&ctx, er, &ended);
  };
  auto gone = end(first);
  EXPECT_EQ(gone.error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(gone.error_message().find("abandoned"), std::string::npos) << gone.error_message();
  // Windows with live leases are never closed for room: a holder whose
  // windows all hold one is refused, naming its limit.
  for (int64_t id = first + 1; id <= w.id(); ++id) ASSERT_TRUE(end(id).ok()) << id;
  for (int i = 0; i < quota; ++i) ASSERT_TRUE(Begin(*stub_, "l", 86'400'000, &w).ok()) << i;
  auto over = Begin(*stub_, "l", 86'400'000, &w);
  EXPECT_EQ(over.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(over.error_message().find(std::to_string(quota)), std::string::npos)
      << over.error_message();
  // Ending one makes room for one.
  ASSERT_TRUE(end(w.id()).ok());
  EXPECT_TRUE(Begin(*stub_, "l", 86'400'000, &w).ok());
}

// ListWindows answers in bounded pages that chain through every window.
TEST_F(ServiceTest, ListWindowsPages) {
  for (int i = 0; i < 2500; ++i) {
    ASSERT_TRUE(store_->AddWindow("w" + std::to_string(i), 1000 + i / 3, 5000).ok());
  }
  std::vector<int64_t> ids;
  std::string token;
  int pages = 0;
  do {
    v1::ListWindowsResponse page;
    ASSERT_TRUE(List(*stub_, 0, token, &page).ok());
    EXPECT_LE(page.windows_size(), 1000);
    for (const auto& w : page.windows()) ids.push_back(w.id());
    token = page.next_page_token();
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(ids.size(), 2500u);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], static_cast<int64_t>(i + 1));
  v1::ListWindowsResponse small;
  ASSERT_TRUE(List(*stub_, 7, "", &small).ok());
  EXPECT_EQ(small.windows_size(), 7);
  EXPECT_FALSE(small.next_page_token().empty());
  v1::ListWindowsResponse bad;
  EXPECT_EQ(List(*stub_, 0, "garbage", &bad).error_code(), StatusCode::INVALID_ARGUMENT);
}

// Boost(rate, duration[, lease id]) through the stub.
grpc::Status Boost(v1::Telemetry::Stub& stub, uint32_t hz, uint32_t ms, v1::BoostResponse* out,
                   uint64_t lease_id = 0) {
  grpc::ClientContext ctx;
  v1::BoostRequest r;
  r.set_rate_hz(hz);
  r.set_duration_ms(ms);
  r.set_lease_id(lease_id);
  return stub.Boost(&ctx, r, out);
}

TEST_F(ServiceTest, BoostRefusesRatesOutOfRangeInsteadOfClamping) {
  v1::BoostResponse b;
  for (uint32_t hz : {0u, 1001u, 5000u}) {
    grpc::Status s = Boost(*stub_, hz, 200, &b);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << hz;
    EXPECT_NE(s.error_message().find("must be 1 to 1000"), std::string::npos) << s.error_message();
  }
  EXPECT_EQ(Boost(*stub_, 100, 3'600'001, &b).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(sampler_->energy_period_ns(), 0);  // nothing was leased
}

TEST_F(ServiceTest, BoostIsLeasedAndEndsByItself) {
  v1::BoostResponse b;
  int64_t now = clock_.RealtimeNs();
  ASSERT_TRUE(Boost(*stub_, 1000, 200, &b).ok());
  EXPECT_EQ(b.rate_hz(), 1000u);
  EXPECT_NE(b.lease_id(), 0u);
  EXPECT_GE(b.until_ns(), now + 200'000'000);
  EXPECT_EQ(sampler_->energy_period_ns(), 1'000'000);
  clock_.Advance(199'000'000);
  EXPECT_EQ(sampler_->energy_period_ns(), 1'000'000);
  clock_.Advance(1'000'000);
  EXPECT_EQ(sampler_->energy_period_ns(), 0);  // the lease expired by itself
}

// Two callers: a 1 ms boost at 1 Hz neither cancels nor slows an hour's
// boost at 1 kHz; renewing one lease by its id leaves the other alone.
TEST_F(ServiceTest, BoostLeasesArePerCaller) {
  v1::BoostResponse hour, blip;
  ASSERT_TRUE(Boost(*stub_, 1000, 3'600'000, &hour).ok());
  ASSERT_TRUE(Boost(*stub_, 1, 1, &blip).ok());
  EXPECT_NE(hour.lease_id(), blip.lease_id());
  EXPECT_EQ(blip.rate_hz(), 1000u);  // the effective rate, every lease included
  clock_.Advance(20'000'000);        // the 1 ms lease is over
  EXPECT_EQ(sampler_->energy_period_ns(), 1'000'000);
  // The hour's lease renewed at a lower rate: only that lease changes.
  v1::BoostResponse renewed;
  ASSERT_TRUE(Boost(*stub_, 10, 3'600'000, &renewed, hour.lease_id()).ok());
  EXPECT_EQ(renewed.lease_id(), hour.lease_id());
  EXPECT_EQ(sampler_->energy_period_ns(), 100'000'000);
  v1::BoostResponse other;
  ASSERT_TRUE(Boost(*stub_, 500, 3'600'000, &other).ok());
  ASSERT_TRUE(Boost(*stub_, 10, 1, &renewed, hour.lease_id()).ok());  // shortened
  clock_.Advance(20'000'000);
  EXPECT_EQ(sampler_->energy_period_ns(), 2'000'000);  // the other lease holds
}

// A summary states the rail rates that held over its range, not a request.
TEST_F(ServiceTest, SummaryStatesTheRailRatesThatHeld) {
  const int64_t before_start = clock_.RealtimeNs() - 3600 * kSec;
  StartSampling();
  const int64_t t0 = clock_.RealtimeNs();
  v1::BoostResponse b;
  ASSERT_TRUE(Boost(*stub_, 1000, 100, &b).ok());
  // The sampler wakes when the lease ends and logs the rate from then.
  clock_.StepUntil(clock_.MonotonicNs() + 300'000'000);
  const int64_t after_lease = clock_.RealtimeNs();
  clock_.StepUntil(clock_.MonotonicNs() + 100'000'000);
  const int64_t t1 = clock_.RealtimeNs();
  auto summarize = [&](int64_t from, int64_t to) {
    grpc::ClientContext ctx;
    v1::SummarizeRequest r;
    r.mutable_time()->set_from_ns(from);
    r.mutable_time()->set_to_ns(to);
    v1::Summary sum;
    EXPECT_TRUE(stub_->Summarize(&ctx, r, &sum).ok());
    return sum;
  };
  v1::Summary all = summarize(t0, t1);
  ASSERT_TRUE(all.has_min_rail_rate_hz());
  ASSERT_TRUE(all.has_max_rail_rate_hz());
  EXPECT_DOUBLE_EQ(all.min_rail_rate_hz(), 50);  // the 20 ms frames
  EXPECT_DOUBLE_EQ(all.max_rail_rate_hz(), 1000);
  v1::Summary later = summarize(after_lease, t1);
  EXPECT_DOUBLE_EQ(later.min_rail_rate_hz(), 50);
  EXPECT_DOUBLE_EQ(later.max_rail_rate_hz(), 50);
  // Before the daemon started: unknown, not 0.
  v1::Summary old = summarize(before_start, before_start + kSec);
  EXPECT_FALSE(old.has_min_rail_rate_hz());
  EXPECT_FALSE(old.has_max_rail_rate_hz());
}

class SlowServiceTest : public ServiceTest {
 protected:
  SlowServiceTest() { frame_period_ns_ = 400'000'000; }  // 2.5 Hz
};

// A watch faster than the frames holds a live lease while it lasts: the
// daemon samples live frames at its interval, and stores only its frames.
TEST_F(SlowServiceTest, WatchFasterThanFramesGetsLiveFramesWhileItLasts) {
  StartSampling();
  {
    grpc::ClientContext ctx;
    v1::WatchRequest req;
    req.set_interval_ms(100);
    req.add_channels("cpu/*");
    auto reader = stub_->Watch(&ctx, req);
    std::vector<v1::Frame> frames = ReadStepping(*reader, 9, 100'000'000);
    ASSERT_EQ(frames.size(), 9u);
    EXPECT_EQ(sampler_->live_period_ns(), 100'000'000);
    EXPECT_GT(sampler_->live_frames(), 0u);
    // Frames closer than the frame period arrived, none closer than half
    // the interval.
    int64_t closest = std::numeric_limits<int64_t>::max();
    for (size_t i = 2; i < frames.size(); ++i) {
      int64_t dt = frames[i].boottime_ns() - frames[i - 1].boottime_ns();
      closest = std::min(closest, dt);
      EXPECT_GE(dt, 50'000'000) << i;
    }
    EXPECT_LT(closest, frame_period_ns_);
    ctx.TryCancel();
    (void)reader->Finish();
  }
  // The stream ended: so did its lease.
  for (int i = 0; i < 500 && sampler_->live_period_ns() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(sampler_->live_period_ns(), 0);
}

TEST_F(ServiceTest, DeviceInfoCarriesThePushStatus) {
  grpc::ClientContext ctx;
  v1::DeviceInfo info;
  ASSERT_TRUE(stub_->GetDeviceInfo(&ctx, {}, &info).ok());
  ASSERT_EQ(info.push_size(), 1);
  EXPECT_EQ(info.push(0).destination(), "http://vm:8428/api/v1/write");
  EXPECT_EQ(info.push(0).backlog_frames(), 12);
  EXPECT_FALSE(info.push(0).has_last_success_ns());  // unknown stays absent
  EXPECT_TRUE(info.push(0).stalled());
}

// grpc.health.v1's Check of `service` on the wire: HealthCheckRequest{string
// service = 1} and HealthCheckResponse{enum status = 1}; StringValue /
// Int32Value share that encoding. The status (1 SERVING, 2 NOT_SERVING), or
// -1 when the call failed.
int HealthStatus(grpc::Channel* channel, const std::string& service) {
  grpc::ClientContext ctx;
  google::protobuf::StringValue req;
  req.set_value(service);
  google::protobuf::Int32Value resp;
  auto s = grpc::internal::BlockingUnaryCall(
      channel,
      grpc::internal::RpcMethod("/grpc.health.v1.Health/Check",
                                grpc::internal::RpcMethod::NORMAL_RPC),
      &ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << service << ": " << s.error_message();
  return s.ok() ? resp.value() : -1;
}

// The push destinations' health name follows SetPushServing.
TEST_F(ServiceTest, PushHealthIsNotServingWhileADestinationIsStalled) {
  EXPECT_EQ(HealthStatus(channel_.get(), kPushHealthService), 1);  // SERVING
  server_->SetPushServing(false);
  EXPECT_EQ(HealthStatus(channel_.get(), kPushHealthService), 2);  // NOT_SERVING
  server_->SetPushServing(true);
  EXPECT_EQ(HealthStatus(channel_.get(), kPushHealthService), 1);
}

TEST_F(ServiceTest, HealthServing) {
  for (const char* svc : {"", "edgemon.v1.Telemetry"}) {
    EXPECT_EQ(HealthStatus(channel_.get(), svc), 1) << svc;  // SERVING
  }
}

// ---- The local feed (feed.h) ----

// A client of the feed: the socket beside the API socket, packets read with
// a 10 s limit (a hang fails the test instead of stalling it).
class FeedClient {
 public:
  explicit FeedClient(const std::string& api_socket) {
    fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string path = FeedPath(api_socket);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~FeedClient() { ::close(fd_); }
  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  bool Request(const v1::WatchRequest& req) { return Send(req.SerializeAsString()); }
  // The next message; nullopt once the daemon closed the connection.
  std::optional<v1::FeedMessage> Next() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 10'000) != 1) {
      ADD_FAILURE() << "no feed message in 10 s";
      return std::nullopt;
    }
    std::string buf(1 << 20, '\0');
    const ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
    if (n <= 0) return std::nullopt;
    v1::FeedMessage m;
    EXPECT_TRUE(m.ParseFromArray(buf.data(), static_cast<int>(n)));
    return m;
  }
  // Reads whatever is queued, without waiting.
  void DrainQueued() {
    std::string buf(1 << 20, '\0');
    while (::recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT) > 0) {
    }
  }
  // The error the feed ended with, after any frames; then the close.
  v1::FeedError EndError() {
    v1::FeedError err;
    for (auto m = Next(); m; m = Next()) {
      if (m->has_error()) {
        err = m->error();
        EXPECT_FALSE(Next().has_value()) << "a message after the error";
        break;
      }
    }
    return err;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

TEST_F(ServiceTest, FeedSocketIsBesideTheApiSocketWithItsMode) {
  struct stat st {};
  ASSERT_EQ(::stat(FeedPath(socket_).c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  server_->Shutdown();
  EXPECT_NE(::stat(FeedPath(socket_).c_str(), &st), 0);  // removed with the daemon
}

// The same frames as Watch: the newest at once, then at the interval, the
// channel subset honoured.
TEST_F(ServiceTest, FeedSendsWatchFramesAtTheInterval) {
  StartSampling();
  const Channel& t = Find(Kind::kThermal, "CPU-therm", Field::kTemp);
  FeedClient feed(socket_);
  ASSERT_TRUE(feed.connected());
  v1::WatchRequest req;
  req.set_interval_ms(100);
  req.add_channels(t.Key());
  ASSERT_TRUE(feed.Request(req));
  std::vector<v1::Frame> frames;
  auto first = feed.Next();
  ASSERT_TRUE(first && first->has_frame());
  frames.push_back(first->frame());
  while (frames.size() < 5) {
    clock_.Step();
    const int64_t since = clock_.BoottimeNs() - frames.back().boottime_ns();
    if (since >= 100'000'000) {
      auto m = feed.Next();
      ASSERT_TRUE(m && m->has_frame());
      frames.push_back(m->frame());
    }
  }
  v1::Frame latest;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->GetLatest(&ctx, v1::GetLatestRequest{}, &latest).ok());
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    ASSERT_EQ(frames[i].ids_size(), 1) << i;
    EXPECT_EQ(frames[i].ids(0), t.id);
    EXPECT_EQ(frames[i].generation(), latest.generation());
    if (i >= 2) {
      const int64_t dt = frames[i].boottime_ns() - frames[i - 1].boottime_ns();
      EXPECT_GE(dt, 100'000'000) << i;
      EXPECT_LE(dt, 120'000'000) << i;
    }
  }
  EXPECT_EQ(frames.back().seq(), latest.seq());
  EXPECT_EQ(hub_->active_streams(), 1u);
}

// Bad requests get one error message (INVALID_ARGUMENT, saying what) and
// the close; the daemon serves the next client as before.
TEST_F(ServiceTest, FeedRefusesBadRequestsWithAnError) {
  {
    FeedClient feed(socket_);
    v1::WatchRequest req;
    req.set_interval_ms(3'600'001);
    ASSERT_TRUE(feed.Request(req));
    const v1::FeedError err = feed.EndError();
    EXPECT_EQ(err.code(), static_cast<int>(StatusCode::INVALID_ARGUMENT));
    EXPECT_NE(err.message().find("interval_ms"), std::string::npos) << err.message();
  }
  {  // Under the 10 ms floor.
    FeedClient feed(socket_);
    v1::WatchRequest req;
    req.set_interval_ms(5);
    ASSERT_TRUE(feed.Request(req));
    const v1::FeedError err = feed.EndError();
    EXPECT_EQ(err.code(), static_cast<int>(StatusCode::INVALID_ARGUMENT));
    EXPECT_NE(err.message().find("10 to 3600000, got 5"), std::string::npos) << err.message();
  }
  {  // A pattern's escape bytes come back escaped.
    FeedClient feed(socket_);
    v1::WatchRequest req;
    req.add_channels("no/such/\x1b[2J\x1b]0;x\x07*");
    ASSERT_TRUE(feed.Request(req));
    const v1::FeedError err = feed.EndError();
    EXPECT_EQ(err.code(), static_cast<int>(StatusCode::INVALID_ARGUMENT));
    EXPECT_NE(err.message().find("channels"), std::string::npos) << err.message();
    EXPECT_NE(err.message().find("\\x1b[2J"), std::string::npos) << err.message();
    EXPECT_EQ(err.message().find('\x1b'), std::string::npos) << err.message();
    EXPECT_EQ(err.message().find('\x07'), std::string::npos) << err.message();
  }
  {
    FeedClient feed(socket_);
    ASSERT_TRUE(feed.Send("\xff\xff\xff not a request"));
    EXPECT_EQ(feed.EndError().code(), static_cast<int>(StatusCode::INVALID_ARGUMENT));
  }
  {
    FeedClient feed(socket_);
    ASSERT_TRUE(feed.Send(std::string(LocalFeed::kMaxRequestBytes + 1, 'x')));
    const v1::FeedError err = feed.EndError();
    EXPECT_EQ(err.code(), static_cast<int>(StatusCode::INVALID_ARGUMENT));
    EXPECT_NE(err.message().find("larger than"), std::string::npos) << err.message();
  }
  {  // A second packet ends a running feed.
    FeedClient feed(socket_);
    ASSERT_TRUE(feed.Request(v1::WatchRequest{}));
    auto m = feed.Next();
    ASSERT_TRUE(m && m->has_frame());
    ASSERT_TRUE(feed.Request(v1::WatchRequest{}));
    const v1::FeedError err = feed.EndError();
    EXPECT_EQ(err.code(), static_cast<int>(StatusCode::INVALID_ARGUMENT));
    EXPECT_NE(err.message().find("one request"), std::string::npos) << err.message();
  }
  for (int i = 0; i < 500 && hub_->active_streams() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(hub_->active_streams(), 0u);  // no slot leaked
  FeedClient feed(socket_);
  ASSERT_TRUE(feed.Request(v1::WatchRequest{}));
  auto m = feed.Next();
  EXPECT_TRUE(m && m->has_frame());
}

// Feeds take the Watch streams' slots: past the cap the next one is
// RESOURCE_EXHAUSTED, a Watch too; closing a feed frees its slot.
TEST_F(ServiceTest, FeedsShareTheStreamCap) {
  std::vector<std::unique_ptr<FeedClient>> feeds;
  for (size_t i = 0; i < kMaxStreams; ++i) {
    feeds.push_back(std::make_unique<FeedClient>(socket_));
    ASSERT_TRUE(feeds.back()->Request(v1::WatchRequest{}));
    auto m = feeds.back()->Next();
    ASSERT_TRUE(m && m->has_frame()) << i;
  }
  EXPECT_EQ(hub_->active_streams(), kMaxStreams);
  {
    FeedClient over(socket_);
    ASSERT_TRUE(over.Request(v1::WatchRequest{}));
    const v1::FeedError err = over.EndError();
    EXPECT_EQ(err.code(), static_cast<int>(StatusCode::RESOURCE_EXHAUSTED));
    EXPECT_NE(err.message().find("limit 8"), std::string::npos) << err.message();
  }
  {
    grpc::ClientContext ctx;
    auto r = stub_->Watch(&ctx, v1::WatchRequest{});
    v1::Frame f;
    EXPECT_FALSE(r->Read(&f));
    EXPECT_EQ(r->Finish().error_code(), StatusCode::RESOURCE_EXHAUSTED);
  }
  feeds.pop_back();
  for (int i = 0; i < 500 && hub_->active_streams() >= kMaxStreams; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(hub_->active_streams(), kMaxStreams - 1);
  FeedClient again(socket_);
  ASSERT_TRUE(again.Request(v1::WatchRequest{}));
  auto m = again.Next();
  EXPECT_TRUE(m && m->has_frame());
}

// A feed that never reads loses frames (its socket is full), never holds the
// sampler or the other clients up, and is ended on shutdown.
TEST_F(ServiceTest, NeverReadingFeedDropsFramesAndHoldsNobodyUp) {
  StartFreeRunningSampler();
  FeedClient stuck(socket_);
  ASSERT_TRUE(stuck.Request(v1::WatchRequest{}));  // every frame, never read
  FeedClient reader(socket_);
  ASSERT_TRUE(reader.Request(v1::WatchRequest{}));
  const uint64_t start = sampler_->frames();
  uint64_t last_seq = 0;
  size_t read = 0;
  while (sampler_->frames() < start + 3000) {
    auto m = reader.Next();
    ASSERT_TRUE(m && m->has_frame());
    EXPECT_GE(m->frame().seq(), last_seq);
    last_seq = m->frame().seq();
    ++read;
  }
  ASSERT_NE(server_->feed(), nullptr);
  EXPECT_GT(server_->feed()->dropped(), 0u);  // the stuck feed's socket filled
  EXPECT_GT(read, 100u);
  StopSampling();
  reader.DrainQueued();
  server_->Shutdown();
  // A client with room in its socket is told why the feed ended (one whose
  // socket is full sees the close alone).
  const v1::FeedError err = reader.EndError();
  EXPECT_EQ(err.code(), static_cast<int>(StatusCode::UNAVAILABLE));
  EXPECT_EQ(hub_->active_streams(), 0u);
}

class FeedTimeoutTest : public ServiceTest {
 protected:
  // Long enough that none of the silent connections times out before the
  // test has opened the one over the bound, on a slow or loaded machine.
  FeedTimeoutTest() { feed_request_timeout_ms_ = 3000; }
};

// A connection that sends no request is ended (DEADLINE_EXCEEDED). Past
// kMaxPendingPerUid such connections of one uid, more are ended at once
// (RESOURCE_EXHAUSTED) instead of waiting; once the silent ones are gone,
// the uid is served again.
TEST_F(FeedTimeoutTest, SilentConnectionsAreEndedAndBoundedPerUid) {
  std::vector<std::unique_ptr<FeedClient>> silent;
  for (size_t i = 0; i < LocalFeed::kMaxPendingPerUid; ++i) {
    silent.push_back(std::make_unique<FeedClient>(socket_));
    ASSERT_TRUE(silent.back()->connected()) << i;
  }
  // The feed's thread counts the silent ones before it accepts the next.
  for (int i = 0; i < 500 && server_->feed()->clients() < silent.size(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  {
    FeedClient over(socket_);
    ASSERT_TRUE(over.connected());
    const v1::FeedError err = over.EndError();
    EXPECT_EQ(err.code(), static_cast<int>(StatusCode::RESOURCE_EXHAUSTED));
    EXPECT_NE(err.message().find("waiting for their request"), std::string::npos) << err.message();
  }
  for (auto& s : silent) {
    EXPECT_EQ(s->EndError().code(), static_cast<int>(StatusCode::DEADLINE_EXCEEDED));
  }
  FeedClient late(socket_);
  ASSERT_TRUE(late.Request(v1::WatchRequest{}));
  auto m = late.Next();
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->has_frame());
  EXPECT_EQ(hub_->active_streams(), 1u);
}

}  // namespace
}  // namespace edgemon::service
