// Windows stamped by the caller (caller_boottime_ns): a local client reads
// CLOCK_BOOTTIME at the edge it means, and the daemon puts the window's edge
// and its energy counters there, not where the call arrived. A real server
// on a unix socket, the agx-orin fixture (constant rail power) and fake time:
// the "call in flight" is the test moving the clock between stamp and call.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "client/edgemon_client.h"
#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/sampler.h"
#include "daemon/service/server.h"
#include "daemon/service/service.h"
#include "daemon/service/watch_hub.h"
#include "daemon/store/ring_store.h"
#include "daemon/store_sink.h"
#include "edgemon/v1/edgemon.grpc.pb.h"
#include "tests/support/fake_clock.h"
#include "tests/support/temp_tree.h"

namespace edgemon::service {
namespace {

using grpc::StatusCode;
constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSec = 1'000'000'000;
const std::string kRail = "rail/VIN_SYS_5V0/energy";

class StampedWindowServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = std::make_unique<RootedSysFs>(testing::Fixture("agx-orin"));
    CollectOptions co;
    collection_ = std::make_unique<Collection>(*fs_, MakeDefaultCollectors(co), co,
                                               [](const std::string&) {});
    collection_->Discover();
    auto st = store::RingStore::Open(tmp_.root() + "/edgemon.db", {});
    ASSERT_TRUE(st.ok()) << st.status().message();
    store_ = std::move(st.value());
    hub_ = std::make_unique<WatchHub>(4);
    SamplerOptions so;
    so.frame_period_ns = 100 * kMs;
    sampler_ = std::make_unique<Sampler>(*collection_, clock_, so);
    sink_ = std::make_unique<StoreSink>(*store_);
    sampler_->AddSink(hub_.get());
    sampler_->AddSink(sink_.get());
    sampler_->TickOnce();
    ServiceOptions opts;
    opts.daemon_version = "test";
    opts.live_energy = &collection_->live_energy();
    service_ =
        std::make_unique<TelemetryService>(*hub_, *store_, clock_, sampler_.get(), fs_.get(), opts);
    server_ = std::make_unique<ApiServer>(*service_);
    ServerOptions so2;
    so2.unix_path = tmp_.root() + "/api.sock";
    ASSERT_TRUE(server_->Start(so2).ok());
    target_ = "unix:" + so2.unix_path;
    stub_ =
        v1::Telemetry::NewStub(grpc::CreateChannel(target_, grpc::InsecureChannelCredentials()));
    const Channel* p = collection_->inventory().Find(Kind::kRail, "VIN_SYS_5V0", Field::kPower);
    ASSERT_NE(p, nullptr);
    power_mw_ = static_cast<double>(*sampler_->TickOnce().values[p->id]);
    ASSERT_GT(power_mw_, 0);
  }

  void TearDown() override {
    if (server_) server_->Shutdown();
    if (store_) (void)store_->Close();
  }

  grpc::Status Begin(std::optional<int64_t> stamp, v1::Window* out) {
    grpc::ClientContext ctx;
    v1::BeginWindowRequest r;
    r.set_label("run");
    if (stamp) r.set_caller_boottime_ns(*stamp);
    return stub_->BeginWindow(&ctx, r, out);
  }
  grpc::Status End(int64_t id, std::optional<int64_t> stamp, v1::Window* out,
                   std::optional<int64_t> start_stamp = std::nullopt) {
    grpc::ClientContext ctx;
    v1::EndWindowRequest r;
    r.set_id(id);
    if (stamp) r.set_caller_boottime_ns(*stamp);
    if (start_stamp) r.set_caller_start_boottime_ns(*start_stamp);
    return stub_->EndWindow(&ctx, r, out);
  }
  // The window as the store holds it.
  store::Window Stored(int64_t id) {
    auto w = store_->GetWindow(id);
    EXPECT_TRUE(w.ok() && *w) << id;
    return w.ok() && *w ? **w : store::Window{};
  }
  size_t WindowCount() {
    grpc::ClientContext ctx;
    v1::ListWindowsResponse list;
    EXPECT_TRUE(stub_->ListWindows(&ctx, {}, &list).ok());
    return static_cast<size_t>(list.windows_size());
  }
  // `ended` runs from `start_ns` for exactly 1 s, as far as the caller's
  // stamps were apart, and holds exactly 1 s of the rail's energy; so does
  // its summary, measured from the same counters.
  void ExpectOneSecondFrom(const v1::Window& ended, int64_t start_ns, int64_t stamps_apart) {
    EXPECT_EQ(ended.start_ns(), start_ns);
    EXPECT_EQ(ended.end_ns() - ended.start_ns(), stamps_apart);
    EXPECT_EQ(ended.end_ns() - ended.start_ns(), 1 * kSec);
    ASSERT_EQ(ended.start_energy_mj().count(kRail), 1u);
    ASSERT_EQ(ended.end_energy_mj().count(kRail), 1u);
    const double mj = ended.end_energy_mj().at(kRail) - ended.start_energy_mj().at(kRail);
    EXPECT_NEAR(mj, power_mw_ * 1.0, 1e-6 * power_mw_);
    grpc::ClientContext ctx;
    v1::SummarizeRequest r;
    r.set_window_id(ended.id());
    v1::Summary s;
    ASSERT_TRUE(stub_->Summarize(&ctx, r, &s).ok());
    EXPECT_EQ(s.from_ns(), start_ns);
    EXPECT_EQ(s.to_ns(), start_ns + kSec);
    EXPECT_DOUBLE_EQ(s.duration_s(), 1.0);
    const v1::RailSummary* rail = nullptr;
    for (const auto& x : s.rails()) {
      if (x.name() == "VIN_SYS_5V0") rail = &x;
    }
    ASSERT_NE(rail, nullptr);
    EXPECT_NEAR(rail->energy_mj(), mj, 1e-6 * mj);
  }
  // Frames every 100 ms for `ns` (the rails integrate between them).
  void Run(int64_t ns) {
    for (int64_t left = ns; left > 0; left -= 100 * kMs) {
      clock_.Advance(std::min(left, 100 * kMs));
      sampler_->TickOnce();
    }
  }

  testing::TempTree tmp_;
  testing::FakeClock clock_;
  std::unique_ptr<RootedSysFs> fs_;
  std::unique_ptr<Collection> collection_;
  std::unique_ptr<store::RingStore> store_;
  std::unique_ptr<WatchHub> hub_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<StoreSink> sink_;
  std::unique_ptr<TelemetryService> service_;
  std::unique_ptr<ApiServer> server_;
  std::string target_;
  std::unique_ptr<v1::Telemetry::Stub> stub_;
  double power_mw_ = 0;
};

// The edges are where the caller stamped them, however late each call came:
// a 1 s body is 1 s long and holds 1 s of energy. Stamped on arrival, the
// same calls would make it 1.015 s.
TEST_F(StampedWindowServiceTest, StampedEdgesAreTheWindowsEdgesAndTheirEnergy) {
  clock_.Advance(10 * kMs);  // between frames
  const int64_t b0 = clock_.BoottimeNs(), rt0 = clock_.RealtimeNs();
  clock_.Advance(30 * kMs);  // the call in flight (a fresh channel, a busy client)
  v1::Window w;
  ASSERT_TRUE(Begin(b0, &w).ok());
  EXPECT_EQ(w.start_ns(), rt0);
  Run(1 * kSec - 50 * kMs);
  clock_.Advance(20 * kMs);  // between frames again
  const int64_t b1 = clock_.BoottimeNs();
  clock_.Advance(45 * kMs);
  sampler_->TickOnce();  // a frame after the end: the end lies between two readings
  v1::Window ended;
  ASSERT_TRUE(End(w.id(), b1, &ended).ok());
  ExpectOneSecondFrom(ended, rt0, b1 - b0);
}

// Without a stamp each edge is where its call arrived (clients elsewhere,
// older clients).
TEST_F(StampedWindowServiceTest, UnstampedEdgesAreWhereTheCallsArrived) {
  clock_.Advance(10 * kMs);
  v1::Window w, ended;
  const int64_t arrived = clock_.RealtimeNs();
  ASSERT_TRUE(Begin(std::nullopt, &w).ok());
  EXPECT_EQ(w.start_ns(), arrived);
  clock_.Advance(kSec);
  ASSERT_TRUE(End(w.id(), std::nullopt, &ended).ok());
  EXPECT_EQ(ended.end_ns(), arrived + kSec);
}

// A stamp that is not this machine's recent CLOCK_BOOTTIME (one from the
// future, one older than 10 s, another machine's) is refused with a clear
// message and opens nothing; the bounds themselves are accepted.
TEST_F(StampedWindowServiceTest, ImplausibleStampsAreRefused) {
  clock_.Advance(60 * kSec);  // this board has been up a while
  const size_t before = WindowCount();
  v1::Window w;
  auto future = Begin(clock_.BoottimeNs() + kSec, &w);
  EXPECT_EQ(future.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(future.error_message().find("1.000 s in the future"), std::string::npos)
      << future.error_message();
  EXPECT_NE(future.error_message().find("caller_boottime_ns"), std::string::npos);
  auto old = Begin(clock_.BoottimeNs() - 10 * kSec - 1, &w);
  EXPECT_EQ(old.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(old.error_message().find("s old"), std::string::npos) << old.error_message();
  // Another machine's boottime: one just booted, one up for a year.
  EXPECT_EQ(Begin(3 * kSec, &w).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Begin(365 * 86400 * kSec, &w).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Begin(std::numeric_limits<int64_t>::min(), &w).error_code(),
            StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Begin(std::numeric_limits<int64_t>::max(), &w).error_code(),
            StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(WindowCount(), before) << "a refused stamp opened a window";

  // At the bounds: 10 s old, and 5 ms ahead (which is now).
  const int64_t rt = clock_.RealtimeNs();
  ASSERT_TRUE(Begin(clock_.BoottimeNs() - 10 * kSec, &w).ok());
  EXPECT_EQ(w.start_ns(), rt - 10 * kSec);
  v1::Window ahead;
  ASSERT_TRUE(Begin(clock_.BoottimeNs() + 5 * kMs, &ahead).ok());
  EXPECT_EQ(ahead.start_ns(), rt);

  // EndWindow is held to the same bounds, and the window stays open.
  v1::Window ended;
  auto late = End(w.id(), clock_.BoottimeNs() + kSec, &ended);
  EXPECT_EQ(late.error_code(), StatusCode::INVALID_ARGUMENT) << late.error_message();
  EXPECT_EQ(End(w.id(), 7, &ended).error_code(), StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(End(w.id(), clock_.BoottimeNs(), &ended).ok());
  EXPECT_EQ(ended.end_ns(), rt);
}

// An end stamped before its window's start is refused, and the window can
// still be ended properly.
TEST_F(StampedWindowServiceTest, AnEndBeforeTheStartIsRefused) {
  clock_.Advance(20 * kMs);
  const int64_t b0 = clock_.BoottimeNs();
  v1::Window w, ended;
  ASSERT_TRUE(Begin(b0, &w).ok());
  auto early = End(w.id(), b0 - kMs, &ended);
  EXPECT_EQ(early.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(early.error_message().find("0.001 s before window"), std::string::npos)
      << early.error_message();
  // An unstamped start is the arrival: an end stamped before it is refused too.
  v1::Window plain;
  clock_.Advance(5 * kMs);
  const int64_t before_plain = clock_.BoottimeNs() - kMs;
  ASSERT_TRUE(Begin(std::nullopt, &plain).ok());
  EXPECT_EQ(End(plain.id(), before_plain, &ended).error_code(), StatusCode::INVALID_ARGUMENT);
  // An instant window (end stamp == start stamp) is fine.
  ASSERT_TRUE(End(w.id(), b0, &ended).ok());
  EXPECT_EQ(ended.end_ns(), ended.start_ns());
}

// The work's start, stamped once BeginWindow has returned and sent with
// EndWindow: the window runs from it to the end stamp exactly, holds the
// energy of exactly that span, and the store keeps the moved start. The
// BeginWindow call's 16 ms round trip (a slow store write) is left out.
TEST_F(StampedWindowServiceTest, AStartStampedAfterBeginWindowIsTheWindowsStart) {
  for (const bool begin_stamped : {true, false}) {
    SCOPED_TRACE(begin_stamped ? "BeginWindow stamped" : "BeginWindow unstamped");
    clock_.Advance(10 * kMs);
    const int64_t b0 = clock_.BoottimeNs(), rt0 = clock_.RealtimeNs();
    v1::Window w;
    ASSERT_TRUE(Begin(begin_stamped ? std::optional(b0) : std::nullopt, &w).ok());
    EXPECT_EQ(w.start_ns(), rt0);
    clock_.Advance(16 * kMs);  // BeginWindow's round trip
    const int64_t s0 = clock_.BoottimeNs(), rt_s0 = clock_.RealtimeNs();
    Run(1 * kSec - 40 * kMs);
    clock_.Advance(40 * kMs);
    const int64_t b1 = clock_.BoottimeNs();
    clock_.Advance(30 * kMs);  // EndWindow in flight
    sampler_->TickOnce();
    v1::Window ended;
    ASSERT_TRUE(End(w.id(), b1, &ended, s0).ok());
    ExpectOneSecondFrom(ended, rt_s0, b1 - s0);  // not 1.016 s, nor its energy
    const store::Window kept = Stored(w.id());
    EXPECT_EQ(kept.start_ns, rt_s0);
    EXPECT_EQ(kept.end_ns, ended.end_ns());
  }
}

// With an unstamped end the window runs from the work's start to the
// EndWindow's arrival; a start stamp at the end's own instant is an instant
// window.
TEST_F(StampedWindowServiceTest, AStartStampWithAnUnstampedEnd) {
  clock_.Advance(10 * kMs);
  v1::Window w, ended;
  ASSERT_TRUE(Begin(std::nullopt, &w).ok());
  clock_.Advance(5 * kMs);
  const int64_t s0 = clock_.BoottimeNs(), rt_s0 = clock_.RealtimeNs();
  clock_.Advance(kSec);
  const int64_t arrived = clock_.RealtimeNs();
  ASSERT_TRUE(End(w.id(), std::nullopt, &ended, s0).ok());
  EXPECT_EQ(ended.start_ns(), rt_s0);
  EXPECT_EQ(ended.end_ns(), arrived);

  v1::Window instant;
  ASSERT_TRUE(Begin(std::nullopt, &instant).ok());
  clock_.Advance(kMs);
  ASSERT_TRUE(End(instant.id(), std::nullopt, &ended, clock_.BoottimeNs()).ok());
  EXPECT_EQ(ended.start_ns(), clock_.RealtimeNs());
  EXPECT_EQ(ended.end_ns(), ended.start_ns());
}

// A work's start and end stamped microseconds apart around a frame stay in
// order, though each is put on the timeline by itself: the one before the
// frame at the frame's offset to the wall clock, the one after at the
// clock's offset now, here 200 us less (the gap between two clock reads of
// a preempted thread, or a slewing clock).
TEST_F(StampedWindowServiceTest, AStartAndEndAMomentApartAroundAFrameStayInOrder) {
  Run(kSec);
  const int64_t frame = clock_.BoottimeNs();  // the newest frame's boottime
  v1::Window w, ended;
  ASSERT_TRUE(Begin(frame - 5 * kMs, &w).ok());
  clock_.JumpRealtime(-200'000);
  clock_.Advance(kMs);
  auto s = End(w.id(), frame + 10'000, &ended, frame - 10'000);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(ended.start_ns(), ended.end_ns());
  EXPECT_GT(ended.start_ns(), w.start_ns());
}

// The same between BeginWindow and a work's start stamped 20 us after it
// returned, with a frame between them: BeginWindow is placed at the clock's
// offset as it arrived, the start at the frame's, here 200 us less. The
// start is read after the begin, so it is not before the window's start.
TEST_F(StampedWindowServiceTest, AStartStampedJustAfterBeginWindowIsNotBeforeIt) {
  Run(kSec);
  v1::Window w, ended;
  ASSERT_TRUE(Begin(std::nullopt, &w).ok());
  clock_.Advance(20'000);
  const int64_t start = clock_.BoottimeNs();
  clock_.JumpRealtime(-200'000);
  clock_.Advance(kMs);
  sampler_->TickOnce();
  clock_.Advance(kMs);
  auto s = End(w.id(), std::nullopt, &ended, start);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(ended.start_ns(), w.start_ns());
  EXPECT_GT(ended.end_ns(), ended.start_ns());
}

// A start stamp before the window's recorded start, after its end, ahead of
// the daemon's clock or from another machine is refused with a message naming
// it, and changes nothing: the window stays open where it began, and ends
// properly afterwards. A start stamp is as old as the work: a window longer
// than a stamp's 10 s bound keeps it.
TEST_F(StampedWindowServiceTest, ImplausibleStartStampsAreRefusedAndChangeNothing) {
  clock_.Advance(60 * kSec);
  const int64_t b0 = clock_.BoottimeNs(), rt0 = clock_.RealtimeNs();
  v1::Window w, ended;
  ASSERT_TRUE(Begin(b0, &w).ok());
  clock_.Advance(2 * kMs);
  const int64_t s0 = clock_.BoottimeNs();
  clock_.Advance(kSec);
  const int64_t b1 = clock_.BoottimeNs();

  auto before = End(w.id(), b1, &ended, b0 - kMs);
  EXPECT_EQ(before.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(before.error_message().find("caller_start_boottime_ns"), std::string::npos);
  EXPECT_NE(before.error_message().find("0.001 s before window"), std::string::npos)
      << before.error_message();
  auto after = End(w.id(), s0, &ended, s0 + kMs);
  EXPECT_EQ(after.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(after.error_message().find("0.001 s after window"), std::string::npos)
      << after.error_message();
  auto future = End(w.id(), std::nullopt, &ended, clock_.BoottimeNs() + kSec);
  EXPECT_EQ(future.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(future.error_message().find("caller_start_boottime_ns"), std::string::npos);
  EXPECT_NE(future.error_message().find("1.000 s in the future"), std::string::npos)
      << future.error_message();
  for (const int64_t other : {int64_t{7}, 365 * 86400 * kSec, std::numeric_limits<int64_t>::min(),
                              std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(End(w.id(), b1, &ended, other).error_code(), StatusCode::INVALID_ARGUMENT) << other;
  }
  // An implausible end stamp refuses the whole call, a fine start included.
  EXPECT_EQ(End(w.id(), b1 + kSec, &ended, s0).error_code(), StatusCode::INVALID_ARGUMENT);
  const store::Window kept = Stored(w.id());
  EXPECT_EQ(kept.start_ns, rt0);
  EXPECT_FALSE(kept.end_ns.has_value());

  // 20 s later the start stamp is 20 s old: still the window's start.
  Run(20 * kSec);
  ASSERT_TRUE(End(w.id(), std::nullopt, &ended, s0).ok());
  EXPECT_EQ(ended.start_ns(), rt0 + 2 * kMs);
  EXPECT_EQ(Stored(w.id()).start_ns, rt0 + 2 * kMs);
}

// The store moves a start only later, never past the end, and only with the
// end: a refused move writes nothing.
TEST_F(StampedWindowServiceTest, TheStoreMovesAStartOnlyWithinTheWindow) {
  auto id = store_->BeginWindow("w", 1000 * kSec);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(store_->EndWindowFrom(*id, 1000 * kSec - 1, 1001 * kSec).code(),
            edgemon::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->EndWindowFrom(*id, 1001 * kSec + 1, 1001 * kSec).code(),
            edgemon::StatusCode::kInvalidArgument);
  store::Window kept = Stored(*id);
  EXPECT_EQ(kept.start_ns, 1000 * kSec);
  EXPECT_FALSE(kept.end_ns.has_value());
  ASSERT_TRUE(store_->EndWindowFrom(*id, 1000 * kSec + 5 * kMs, 1001 * kSec).ok());
  kept = Stored(*id);
  EXPECT_EQ(kept.start_ns, 1000 * kSec + 5 * kMs);
  EXPECT_EQ(kept.end_ns, 1001 * kSec);
  EXPECT_EQ(store_->EndWindowFrom(*id, 1000 * kSec + 5 * kMs, 1002 * kSec).code(),
            edgemon::StatusCode::kFailedPrecondition);  // already ended
}

// The C++ client sends the caller's stamp over a unix socket.
TEST_F(StampedWindowServiceTest, ClientLibrarySendsTheStampOverAUnixSocket) {
  auto c = client::Client::Connect(target_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  clock_.Advance(10 * kMs);
  const int64_t b0 = clock_.BoottimeNs(), rt0 = clock_.RealtimeNs();
  clock_.Advance(25 * kMs);
  auto w = (*c)->BeginWindow("client", std::nullopt, b0);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->start_ns, rt0);
  clock_.Advance(500 * kMs);
  const int64_t b1 = clock_.BoottimeNs();
  clock_.Advance(25 * kMs);
  auto e = (*c)->EndWindow(w->id, b1);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(*e->end_ns - e->start_ns, b1 - b0);  // 525 ms, not the 550 between the calls
  auto refused = (*c)->EndWindow(w->id, b1);
  EXPECT_EQ(refused.status().code(), edgemon::StatusCode::kFailedPrecondition);

  // The work's start, stamped after BeginWindow returned, goes with the end.
  auto w2 = (*c)->BeginWindow("client", std::nullopt, clock_.BoottimeNs());
  ASSERT_TRUE(w2.ok()) << w2.status().ToString();
  clock_.Advance(16 * kMs);
  const int64_t s2 = clock_.BoottimeNs(), rt_s2 = clock_.RealtimeNs();
  clock_.Advance(300 * kMs);
  const int64_t b2 = clock_.BoottimeNs();
  auto e2 = (*c)->EndWindow(w2->id, b2, s2);
  ASSERT_TRUE(e2.ok()) << e2.status().ToString();
  EXPECT_EQ(e2->start_ns, rt_s2);
  EXPECT_EQ(*e2->end_ns - e2->start_ns, b2 - s2);  // 300 ms, not 316
}

}  // namespace
}  // namespace edgemon::service
