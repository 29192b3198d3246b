// The sampler's schedule on fake time: absolute deadlines, skipped (not
// bunched) late ticks, monotonic stored time, the energy rate and its boost.
#include "daemon/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "daemon/store_sink.h"
#include "tests/support/fake_clock.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

constexpr int64_t kMs = 1'000'000;

// The one channel of the test collectors: rail VDD_IN's power.
ChannelId AddRail(DiscoverContext& ctx) {
  Channel c;
  c.kind = Kind::kRail;
  c.name = "VDD_IN";
  c.field = Field::kPower;
  c.device = "ina3221 1-0040";
  return ctx.Add(c);
}

// A collector whose sampling costs fake time.
class CostlyCollector final : public Collector {
 public:
  CostlyCollector(testing::FakeClock& clock, bool fast) : clock_(clock), fast_(fast) {}
  std::string_view Name() const override { return "costly"; }
  bool FastPath() const override { return fast_; }
  void Discover(DiscoverContext& ctx) override { id_ = AddRail(ctx); }
  void Sample(SampleContext& ctx) override {
    ++calls;
    clock_.Advance(cost_ns);
    if (extra_once_ns) {
      clock_.Advance(extra_once_ns);
      extra_once_ns = 0;
    }
    ctx.Set(id_, 2000);
  }
  int64_t cost_ns = 0;
  int64_t extra_once_ns = 0;
  int calls = 0;

 private:
  testing::FakeClock& clock_;
  bool fast_;
  ChannelId id_ = 0;
};

class Recorder final : public FrameSink {
 public:
  Recorder(Sampler*& sampler, size_t stop_after) : sampler_(sampler), stop_after_(stop_after) {}
  void OnFrame(const Inventory&, uint64_t, const Frame& f) override {
    frames.push_back(f);
    if (frames.size() >= stop_after_) sampler_->Stop();
  }
  std::vector<Frame> frames;

 private:
  Sampler*& sampler_;
  size_t stop_after_;
};

struct Rig {
  Rig(int64_t period, int64_t energy_period, size_t frames, bool fast = true) {
    auto c = std::make_unique<CostlyCollector>(clock, fast);
    collector = c.get();
    std::vector<std::unique_ptr<Collector>> v;
    v.push_back(std::move(c));
    collection = std::make_unique<Collection>(fs, std::move(v), CollectOptions{}, nullptr);
    collection->Discover();
    SamplerOptions o;
    o.frame_period_ns = period;
    o.energy_period_ns = energy_period;
    sampler = std::make_unique<Sampler>(*collection, clock, o);
    raw = sampler.get();
    recorder = std::make_unique<Recorder>(raw, frames);
    sampler->AddSink(recorder.get());
  }
  testing::FakeClock clock;
  testing::TempTree tree;
  RootedSysFs fs{tree.root()};
  CostlyCollector* collector = nullptr;
  std::unique_ptr<Collection> collection;
  std::unique_ptr<Sampler> sampler;
  Sampler* raw = nullptr;
  std::unique_ptr<Recorder> recorder;
};

const runtime::Principal kRoot{"uid:0", true};

// A lease's id, 0 when it was refused.
uint64_t Take(Sampler& s, uint64_t id, LeaseKind kind, int64_t period_ns, int64_t until_ns,
              const runtime::Principal& who = kRoot) {
  auto r = s.Lease(id, kind, period_ns, until_ns, who);
  return r.ok() ? *r : 0;
}

TEST(Sampler, AbsoluteDeadlinesDoNotDrift) {
  Rig rig(100 * kMs, 0, 50);
  rig.collector->cost_ns = 30 * kMs;  // work inside each tick
  rig.sampler->Run();
  const auto& f = rig.recorder->frames;
  ASSERT_EQ(f.size(), 50u);
  for (size_t i = 1; i < f.size(); ++i) {
    EXPECT_EQ(f[i].boottime_ns - f[i - 1].boottime_ns, 100 * kMs) << i;
    EXPECT_EQ(f[i].seq, f[i - 1].seq + 1);
  }
  // 50 frames span 49 periods exactly: no accumulated drift.
  EXPECT_EQ(f.back().boottime_ns - f.front().boottime_ns, 49 * 100 * kMs);
  EXPECT_EQ(rig.sampler->deadline_misses(), 0u);
}

TEST(Sampler, LateTicksAreSkippedAndCountedNotBunched) {
  Rig rig(100 * kMs, 0, 6);
  rig.collector->cost_ns = 10 * kMs;
  rig.collector->extra_once_ns = 340 * kMs;  // the first tick stalls for 350 ms
  rig.sampler->Run();
  const auto& f = rig.recorder->frames;
  ASSERT_EQ(f.size(), 6u);
  EXPECT_EQ(rig.sampler->deadline_misses(), 3u);  // the 100, 200 and 300 ms deadlines
  // The next frame is on the original grid (400 ms), not at 350 ms, and the
  // ones after follow one period apart.
  EXPECT_EQ(f[1].boottime_ns - f[0].boottime_ns, 400 * kMs);
  for (size_t i = 2; i < f.size(); ++i)
    EXPECT_EQ(f[i].boottime_ns - f[i - 1].boottime_ns, 100 * kMs);
}

TEST(Sampler, StoredTimeStaysMonotonicAcrossWallClockJumps) {
  Rig rig(100 * kMs, 0, 1);
  std::vector<int64_t> steps;
  rig.sampler = std::make_unique<Sampler>(
      *rig.collection, rig.clock,
      SamplerOptions{.frame_period_ns = 100 * kMs,
                     .on_clock_step = [&](int64_t, int64_t step) { steps.push_back(step); }});
  std::vector<int64_t> rt;
  for (int i = 0; i < 10; ++i) {
    if (i == 3) rig.clock.JumpRealtime(-3600LL * 1'000'000'000);  // an hour back
    if (i == 6) rig.clock.JumpRealtime(7200LL * 1'000'000'000);   // two hours forward
    rt.push_back(rig.sampler->TickOnce().realtime_ns);
    rig.clock.Advance(100 * kMs);
  }
  for (size_t i = 1; i < rt.size(); ++i) EXPECT_GT(rt[i], rt[i - 1]) << i;
  EXPECT_EQ(rt[3] - rt[2], 100 * kMs);  // advanced with boottime after the backwards jump
  // Each step reported once, with its size.
  EXPECT_EQ(steps, (std::vector<int64_t>{-3600LL * 1'000'000'000, 7200LL * 1'000'000'000}));
}

// The sampler's frames through StoreSink into a real store, across wall-clock
// steps: +8 days for 3 s and back, then a reboot into 1970 and an NTP step.
TEST(Sampler, WallClockStepsThroughTheStoreDeleteNothing) {
  testing::TempTree tmp;
  store::RingStoreOptions so;
  so.batch_frames = 64;
  so.commit_interval_ms = 5;
  so.raw_retention_ns = 100LL * 1'000'000'000;  // 1000 frames at 100 ms
  const std::string db = tmp.root() + "/steps.db";
  constexpr int64_t kDay = 86'400LL * 1'000'000'000;
  {
    auto st = store::RingStore::Open(db, so);
    ASSERT_TRUE(st.ok()) << st.status().message();
    Rig rig(100 * kMs, 0, 1);
    StoreSink sink(**st);
    rig.sampler->AddSink(&sink);
    for (int i = 0; i < 500; ++i) {
      if (i == 400) rig.clock.JumpRealtime(8 * kDay);
      if (i == 430) rig.clock.JumpRealtime(-8 * kDay);
      rig.sampler->TickOnce();
      rig.clock.Advance(100 * kMs);
    }
    ASSERT_TRUE((*st)->Flush().ok());
    auto stats = (*st)->Stats();
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->frames, 500);  // before: 100 (all but the newest 100 s)
    EXPECT_EQ(stats->expired_frames, 0u);
    auto jumps = (*st)->ClockJumps(INT64_MIN, INT64_MAX);
    ASSERT_TRUE(jumps.ok());
    // The step back is absorbed by the sampler: stored time did not move.
    ASSERT_EQ(jumps->size(), 1u);
    EXPECT_EQ((*jumps)[0].new_offset_ns - (*jumps)[0].old_offset_ns, 8 * kDay);
  }
  {  // Reboot (boottime starts again) into 1970; NTP steps the clock later.
    auto st = store::RingStore::Open(db, so);
    ASSERT_TRUE(st.ok()) << st.status().message();
    Rig rig(100 * kMs, 0, 1);
    rig.clock.JumpRealtime(-rig.clock.RealtimeNs() + rig.clock.BoottimeNs());
    StoreSink sink(**st);
    rig.sampler->AddSink(&sink);
    for (int i = 0; i < 100; ++i) {
      if (i == 50) rig.clock.JumpRealtime(1'700'000'000LL * 1'000'000'000 + 9 * kDay);
      rig.sampler->TickOnce();
      rig.clock.Advance(100 * kMs);
    }
    ASSERT_TRUE((*st)->Flush().ok());
    auto stats = (*st)->Stats();
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->frames, 600);
    auto all = (*st)->Range(INT64_MIN, INT64_MAX, {}, 0);
    ASSERT_TRUE(all.ok());
    ASSERT_EQ(all->frames.size(), 600u);
    auto frames = all->frames;  // in seq order: stored time never goes back
    std::sort(frames.begin(), frames.end(),
              [](const Frame& x, const Frame& y) { return x.seq < y.seq; });
    for (size_t i = 1; i < frames.size(); ++i) {
      EXPECT_GE(frames[i].realtime_ns, frames[i - 1].realtime_ns) << i;
    }
    auto jumps = (*st)->ClockJumps(INT64_MIN, INT64_MAX);
    ASSERT_TRUE(jumps.ok());
    EXPECT_EQ(jumps->size(), 2u);  // the +8 d step and the NTP step
  }
}

TEST(Sampler, EnergyRateSamplesRailsBetweenFrames) {
  Rig rig(100 * kMs, 10 * kMs, 11);
  rig.sampler->Run();
  // 10 frame intervals with 9 fast samples in each (the 10th coincides with a frame).
  EXPECT_EQ(rig.sampler->fast_samples(), 90u);
  EXPECT_EQ(rig.collector->calls, 11 + 90);
  // 2 W for 1 s integrated from all those samples.
  const Channel* e = rig.collection->inventory().Find(Kind::kRail, "VDD_IN", Field::kEnergy);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(rig.recorder->frames.back().Get(e->id), 2000);
}

TEST(Sampler, BoostLeaseEndsByItself) {
  Rig rig(100 * kMs, 0, 21);
  Take(*rig.sampler, 0, LeaseKind::kEnergy, 10 * kMs, rig.clock.MonotonicNs() + 1000 * kMs);
  rig.sampler->Run();
  // Fast samples only during the first second of the two.
  EXPECT_GE(rig.sampler->fast_samples(), 85u);
  EXPECT_LE(rig.sampler->fast_samples(), 95u);
  EXPECT_EQ(rig.sampler->energy_period_ns(), 0);
}

// A short slow lease taken after a long fast one neither cancels nor slows
// it: each lease keeps its own rate and expiry.
TEST(Sampler, EachLeaseKeepsItsOwnRateAndExpiry) {
  Rig rig(100 * kMs, 0, 21);
  const int64_t t0 = rig.clock.MonotonicNs();
  uint64_t fast =
      Take(*rig.sampler, 0, LeaseKind::kEnergy, 1 * kMs, t0 + 1000 * kMs);  // 1 kHz, 1 s
  uint64_t slow =
      Take(*rig.sampler, 0, LeaseKind::kEnergy, 1000 * kMs, t0 + 1 * kMs);  // 1 Hz, 1 ms
  ASSERT_NE(fast, 0u);
  ASSERT_NE(slow, 0u);
  EXPECT_NE(fast, slow);
  EXPECT_EQ(rig.sampler->energy_period_ns(), 1 * kMs);
  rig.sampler->Run();
  // 1 kHz for the first of the two seconds (less the ticks that were frames).
  EXPECT_GE(rig.sampler->fast_samples(), 950u);
  EXPECT_LE(rig.sampler->fast_samples(), 1000u);
  EXPECT_EQ(rig.sampler->energy_period_ns(), 0);
}

TEST(Sampler, RenewingALeaseExtendsThatLeaseAlone) {
  Rig rig(100 * kMs, 50 * kMs, 1);  // configured: 20 Hz
  const int64_t t0 = rig.clock.MonotonicNs();
  uint64_t a = Take(*rig.sampler, 0, LeaseKind::kEnergy, 10 * kMs, t0 + 500 * kMs);
  uint64_t b = Take(*rig.sampler, 0, LeaseKind::kEnergy, 5 * kMs, t0 + 200 * kMs);
  EXPECT_EQ(Take(*rig.sampler, a, LeaseKind::kEnergy, 10 * kMs, t0 + 1000 * kMs), a);
  EXPECT_EQ(rig.sampler->energy_period_ns(), 5 * kMs);  // the fastest live lease
  rig.clock.Advance(300 * kMs);
  EXPECT_EQ(rig.sampler->energy_period_ns(), 10 * kMs);  // b expired; a was renewed
  rig.clock.Advance(800 * kMs);
  EXPECT_EQ(rig.sampler->energy_period_ns(), 50 * kMs);  // back to the configured rate
  // Renewing an expired lease gives a new one.
  uint64_t again = Take(*rig.sampler, b, LeaseKind::kEnergy, 5 * kMs, t0 + 2000 * kMs);
  EXPECT_NE(again, 0u);
  EXPECT_NE(again, b);
  EXPECT_EQ(rig.sampler->energy_period_ns(), 5 * kMs);
  rig.sampler->Release(again, kRoot);
  EXPECT_EQ(rig.sampler->energy_period_ns(), 50 * kMs);
}

// The rate log says which rail rates held over a range, lease by lease.
TEST(Sampler, RateLogHasTheRatesThatHeld) {
  Rig rig(100 * kMs, 0, 31);
  const int64_t rt0 = rig.clock.RealtimeNs();
  const int64_t t0 = rig.clock.MonotonicNs();
  Take(*rig.sampler, 0, LeaseKind::kEnergy, 1 * kMs, t0 + 1000 * kMs);   // 1 kHz for 1 s
  Take(*rig.sampler, 0, LeaseKind::kEnergy, 10 * kMs, t0 + 2000 * kMs);  // 100 Hz for 2 s
  rig.sampler->Run();                                                    // 3 s
  auto whole = rig.sampler->RatesBetween(rt0, rt0 + 3000 * kMs);
  ASSERT_TRUE(whole);
  EXPECT_DOUBLE_EQ(whole->min_hz, 10);  // frames alone in the last second
  EXPECT_DOUBLE_EQ(whole->max_hz, 1000);
  auto second = rig.sampler->RatesBetween(rt0 + 1000 * kMs, rt0 + 2000 * kMs);
  ASSERT_TRUE(second);
  EXPECT_DOUBLE_EQ(second->min_hz, 100);
  EXPECT_DOUBLE_EQ(second->max_hz, 100);
  auto third = rig.sampler->RatesBetween(rt0 + 2500 * kMs, rt0 + 2600 * kMs);
  ASSERT_TRUE(third);
  EXPECT_DOUBLE_EQ(third->max_hz, 10);
  // Before the sampler existed: unknown, not zero.
  EXPECT_FALSE(rig.sampler->RatesBetween(rt0 - 5000 * kMs, rt0 - 4000 * kMs));
}

// A stream that records every frame it is given, live ones included.
class LiveRecorder final : public FrameSink {
 public:
  void OnFrame(const Inventory&, uint64_t, const Frame&) override {}
  void OnScheduledFrame(const Inventory&, uint64_t, const Frame& f, int64_t scheduled) override {
    frames.push_back(f);
    scheduled_ns.push_back(scheduled);
  }
  bool WantsLive() const override { return true; }
  std::vector<Frame> frames;
  std::vector<int64_t> scheduled_ns;
};

// A live lease adds frames between stored ones for the sinks that want them,
// on the grid of the frames' deadlines; the store's sinks see only frames.
TEST(Sampler, LiveLeaseAddsLiveFramesNotStoredOnes) {
  Rig rig(1000 * kMs, 0, 4);
  rig.collector->cost_ns = 3 * kMs;
  LiveRecorder live;
  rig.sampler->AddSink(&live);
  uint64_t id = Take(*rig.sampler, 0, LeaseKind::kLive, 500 * kMs, Sampler::kNoExpiry);
  ASSERT_NE(id, 0u);
  EXPECT_EQ(rig.sampler->live_period_ns(), 500 * kMs);
  rig.sampler->Run();
  const auto& stored = rig.recorder->frames;
  ASSERT_EQ(stored.size(), 4u);
  for (size_t i = 1; i < stored.size(); ++i) EXPECT_EQ(stored[i].seq, stored[i - 1].seq + 1);
  // 4 frames 1 s apart and a live one between each pair.
  ASSERT_EQ(live.frames.size(), 7u);
  EXPECT_EQ(rig.sampler->live_frames(), 3u);
  for (size_t i = 1; i < live.frames.size(); ++i) {
    EXPECT_EQ(live.scheduled_ns[i] - live.scheduled_ns[i - 1], 500 * kMs) << i;
    EXPECT_EQ(live.frames[i].boottime_ns - live.frames[i - 1].boottime_ns, 500 * kMs) << i;
  }
  // A live frame carries the seq of the stored frame before it.
  EXPECT_EQ(live.frames[1].seq, live.frames[0].seq);
  EXPECT_EQ(live.frames[2].seq, live.frames[0].seq + 1);
  rig.sampler->Release(id, kRoot);
  EXPECT_EQ(rig.sampler->live_period_ns(), 0);
}

TEST(Sampler, TheLeaseTableIsBoundedAndExpiredLeasesMakeRoom) {
  Rig rig(100 * kMs, 0, 1);
  const int64_t t0 = rig.clock.MonotonicNs();
  for (size_t i = 0; i < Sampler::kMaxLeases; ++i) {
    ASSERT_NE(Take(*rig.sampler, 0, LeaseKind::kEnergy, 10 * kMs, t0 + 100 * kMs), 0u) << i;
  }
  EXPECT_EQ(Take(*rig.sampler, 0, LeaseKind::kEnergy, 1 * kMs, t0 + 100 * kMs), 0u);
  EXPECT_EQ(rig.sampler->energy_period_ns(), 10 * kMs);  // the refused one changed nothing
  rig.clock.Advance(200 * kMs);
  EXPECT_NE(Take(*rig.sampler, 0, LeaseKind::kEnergy, 1 * kMs, t0 + 1000 * kMs), 0u);
}

TEST(Sampler, LiveRateIsCappedAndOnlyFasterThanFrames) {
  Rig rig(1000 * kMs, 0, 1);
  uint64_t slow = Take(*rig.sampler, 0, LeaseKind::kLive, 2000 * kMs, Sampler::kNoExpiry);
  EXPECT_EQ(rig.sampler->live_period_ns(), 0);  // frames are faster already
  uint64_t fast = Take(*rig.sampler, 0, LeaseKind::kLive, 1 * kMs, Sampler::kNoExpiry);
  EXPECT_EQ(rig.sampler->live_period_ns(), Sampler::kMinLivePeriodNs);
  rig.sampler->Release(fast, kRoot);
  rig.sampler->Release(slow, kRoot);
  EXPECT_EQ(rig.sampler->live_period_ns(), 0);
}

}  // namespace
}  // namespace edgemon

namespace edgemon {
namespace {

TEST(Sampler, RunContinuesTheGridOfAFrameTakenBeforeIt) {
  Rig rig(100 * kMs, 0, 3);
  rig.sampler->TickOnce();  // the daemon's first frame, stored before READY=1
  rig.clock.Advance(30 * kMs);
  rig.sampler->Run();
  const auto& f = rig.recorder->frames;
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[1].boottime_ns - f[0].boottime_ns, 100 * kMs);
  EXPECT_EQ(f[2].boottime_ns - f[1].boottime_ns, 100 * kMs);
}

}  // namespace
}  // namespace edgemon

namespace edgemon {
namespace {

// A lease belongs to whoever took it: another caller can neither renew nor
// end it, nor erase it by naming its id with the other kind; root may.
TEST(SamplerLeases, AnotherCallersLeaseIsRefusedAndLeftAsItWas) {
  Rig rig(100 * kMs, 0, 1);
  const runtime::Principal alice{"uid:1000", false}, mallory{"uid:1001", false};
  const int64_t t0 = rig.clock.MonotonicNs();
  auto mine = rig.sampler->Lease(0, LeaseKind::kEnergy, 1 * kMs, t0 + 3600'000 * kMs, alice);
  ASSERT_TRUE(mine.ok());
  auto stolen = rig.sampler->Lease(*mine, LeaseKind::kEnergy, 100 * kMs, t0 + 1 * kMs, mallory);
  EXPECT_EQ(stolen.status().code(), StatusCode::kPermissionDenied);
  EXPECT_FALSE(rig.sampler->Release(*mine, mallory));
  rig.clock.Advance(10 * kMs);
  EXPECT_EQ(rig.sampler->energy_period_ns(), 1 * kMs);  // alice's 1 kHz still holds
  // A live lease named as an energy one: refused, the stream keeps its rate.
  auto live = rig.sampler->Lease(0, LeaseKind::kLive, 50 * kMs, Sampler::kNoExpiry, alice);
  ASSERT_TRUE(live.ok());
  auto wrong = rig.sampler->Lease(*live, LeaseKind::kEnergy, 1 * kMs, t0 + 1 * kMs, alice);
  EXPECT_EQ(wrong.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(rig.sampler->live_period_ns(), 50 * kMs);
  // Root may renew and end anyone's.
  EXPECT_TRUE(rig.sampler->Lease(*mine, LeaseKind::kEnergy, 2 * kMs, t0 + 1000 * kMs, kRoot).ok());
  EXPECT_TRUE(rig.sampler->Release(*mine, kRoot));
  EXPECT_TRUE(rig.sampler->Release(*live, alice));
}

TEST(SamplerLeases, IdsAreNotSequential) {
  Rig rig(100 * kMs, 0, 1);
  const int64_t t0 = rig.clock.MonotonicNs();
  std::vector<uint64_t> ids;
  for (int i = 0; i < 32; ++i)
    ids.push_back(Take(*rig.sampler, 0, LeaseKind::kEnergy, 10 * kMs, t0 + kMs));
  int consecutive = 0;
  for (size_t i = 1; i < ids.size(); ++i) consecutive += ids[i] == ids[i - 1] + 1;
  EXPECT_EQ(consecutive, 0);
  for (uint64_t id : ids) EXPECT_LT(id, uint64_t{1} << 53);
}

// One caller cannot take the table from everyone else: it has a quota, and
// a full table takes from the biggest holder, never from a newcomer.
TEST(SamplerLeases, OneCallerCannotExhaustTheTable) {
  Rig rig(100 * kMs, 0, 1);
  const int64_t t0 = rig.clock.MonotonicNs(), hour = t0 + 3600'000 * kMs;
  const runtime::Principal hog{"uid:1001", false}, user{"uid:1000", false};
  for (size_t i = 0; i < Sampler::kMaxLeasesPerPrincipal; ++i) {
    ASSERT_TRUE(rig.sampler->Lease(0, LeaseKind::kEnergy, 1 * kMs, hour, hog).ok()) << i;
  }
  auto over = rig.sampler->Lease(0, LeaseKind::kEnergy, 1 * kMs, hour, hog);
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(rig.sampler->Lease(0, LeaseKind::kEnergy, 2 * kMs, hour, user).ok());
  // Root has no quota: it fills the table; the next caller still gets a lease.
  while (Take(*rig.sampler, 0, LeaseKind::kEnergy, 10 * kMs, hour) != 0) {
  }
  EXPECT_EQ(rig.sampler->LeasesOf(hog), Sampler::kMaxLeasesPerPrincipal);
  const size_t roots = rig.sampler->LeasesOf(kRoot);
  EXPECT_TRUE(rig.sampler->Lease(0, LeaseKind::kEnergy, 2 * kMs, hour, user).ok());
  EXPECT_EQ(rig.sampler->LeasesOf(kRoot), roots - 1);  // the biggest holder gave one up
  EXPECT_EQ(rig.sampler->LeasesOf(user), 2u);
}

// "Now" on the frames' timeline: after the wall clock steps back, frames
// stay ahead at boottime's pace and so does TimelineNs; a seeded timeline
// (the store's newest frame) is continued after a restart behind.
TEST(SamplerTimeline, NowFollowsTheFramesAcrossAStepBack) {
  Rig rig(100 * kMs, 0, 1);
  const int64_t ahead = rig.sampler->TickOnce().realtime_ns;
  rig.clock.JumpRealtime(-8LL * 86400 * 1000 * kMs);  // 8 days back
  rig.clock.Advance(1000 * kMs);
  EXPECT_GE(rig.sampler->TimelineNs(), ahead + 1000 * kMs);
  EXPECT_LT(rig.sampler->TimelineNs(), ahead + 1100 * kMs);  // not the raw clock, 8 days back
  const int64_t next = rig.sampler->TickOnce().realtime_ns;
  EXPECT_GE(next, ahead + 1000 * kMs);
  EXPECT_LE(rig.sampler->TimelineNs() - next, 10 * kMs);  // the next frame agrees with "now"

  Rig restarted(100 * kMs, 0, 1);
  const int64_t raw = restarted.clock.RealtimeNs();
  restarted.sampler->SeedTimeline(raw + 30LL * 86400 * 1000 * kMs, restarted.clock.BoottimeNs());
  restarted.clock.Advance(500 * kMs);
  EXPECT_GE(restarted.sampler->TimelineNs(), raw + 30LL * 86400 * 1000 * kMs + 500 * kMs);
  EXPECT_LT(restarted.sampler->TimelineNs(), raw + 30LL * 86400 * 1000 * kMs + 600 * kMs);
  EXPECT_GE(restarted.sampler->TickOnce().realtime_ns, raw + 30LL * 86400 * 1000 * kMs + 500 * kMs);
}

// A caller's stamp taken before the wall clock stepped forward lands among
// the frames of its own stretch, not the step's size later: a record whose
// start was stamped before a step still holds the frames sampled after it.
TEST(SamplerTimeline, AStampBeforeAForwardStepLandsAmongItsOwnFrames) {
  Rig rig(100 * kMs, 0, 1);
  std::vector<Frame> before;
  int64_t stamp = 0;
  for (int i = 0; i < 5; ++i) {
    if (i == 2) stamp = rig.clock.BoottimeNs() + 30 * kMs;  // between frames 2 and 3
    before.push_back(rig.sampler->TickOnce());
    rig.clock.Advance(100 * kMs);
  }
  const int64_t ten_days = 10LL * 86400 * 1000 * kMs;
  rig.clock.JumpRealtime(ten_days);
  // Stepped, no frame since: the stamp is still among the frames before.
  const int64_t pending = rig.sampler->TimelineAtBoottime(stamp).timeline_ns;
  EXPECT_EQ(pending - before[2].realtime_ns, stamp - before[2].boottime_ns);
  std::vector<Frame> after;
  for (int i = 0; i < 5; ++i) {
    after.push_back(rig.sampler->TickOnce());
    rig.clock.Advance(100 * kMs);
  }
  ASSERT_GE(after[0].realtime_ns, before.back().realtime_ns + ten_days);  // stored time moved
  const auto at = rig.sampler->TimelineAtBoottime(stamp);
  EXPECT_GT(at.timeline_ns, before[2].realtime_ns);
  EXPECT_LT(at.timeline_ns, before[3].realtime_ns);
  EXPECT_EQ(at.timeline_ns - before[2].realtime_ns, stamp - before[2].boottime_ns);
  // After the step, stamps are still where the new frames are.
  const auto late = rig.sampler->TimelineAtBoottime(after[1].boottime_ns);
  EXPECT_EQ(late.timeline_ns, after[1].realtime_ns);
  // A step back keeps the timeline's pace: nothing moves for earlier stamps.
  rig.clock.JumpRealtime(-ten_days);
  rig.sampler->TickOnce();
  EXPECT_EQ(rig.sampler->TimelineAtBoottime(after[1].boottime_ns).timeline_ns,
            after[1].realtime_ns);
  EXPECT_EQ(rig.sampler->TimelineAtBoottime(stamp).timeline_ns, at.timeline_ns);
}

// A rail read on the fast path, on real time.
class RailCollector final : public Collector {
 public:
  std::string_view Name() const override { return "rail"; }
  bool FastPath() const override { return true; }
  void Discover(DiscoverContext& ctx) override { id_ = AddRail(ctx); }
  void Sample(SampleContext& ctx) override { ctx.Set(id_, 2000); }

 private:
  ChannelId id_ = 0;
};

// On the system clock the loop sleeps on a word (Clock::SleepOnWord), not
// on its condition variable: a lease taken, and Stop, must still wake it
// from an hour-long sleep.
TEST(Sampler, OnTheSystemClockALeaseAndStopWakeTheSleepingLoop) {
  testing::TempTree tree;
  RootedSysFs fs(tree.root());
  std::vector<std::unique_ptr<Collector>> v;
  v.push_back(std::make_unique<RailCollector>());
  Collection collection(fs, std::move(v), CollectOptions{}, nullptr);
  collection.Discover();
  SystemClock clock;
  SamplerOptions o;
  o.frame_period_ns = 3'600'000 * kMs;  // an hour
  Sampler sampler(collection, clock, o);
  sampler.TickOnce();  // Run's first frame is due an hour later: it sleeps
  std::thread loop([&] { sampler.Run(); });
  auto lease = sampler.Lease(0, LeaseKind::kEnergy, kMs, Sampler::kNoExpiry, kRoot);
  ASSERT_TRUE(lease.ok());
  while (sampler.fast_samples() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Back to sleeping out the hour; Stop wakes it.
  EXPECT_TRUE(sampler.Release(*lease, kRoot));
  sampler.Stop();
  loop.join();
  EXPECT_EQ(sampler.frames(), 1u);
  EXPECT_GE(sampler.fast_samples(), 3u);
}

// Keeps the snapshots the sampler shares (OnSharedFrame), or only the newest.
class SnapshotKeeper final : public FrameSink {
 public:
  void OnFrame(const Inventory&, uint64_t, const Frame&) override { ++copies; }
  void OnSharedFrame(const Inventory&, uint64_t, const std::shared_ptr<const Frame>& f,
                     int64_t) override {
    newest = f;
    if (keep) kept.push_back(f);
  }
  bool keep = false;
  int copies = 0;
  std::shared_ptr<const Frame> newest;
  std::vector<std::shared_ptr<const Frame>> kept;
};

TEST(Sampler, SinksShareOneSnapshotAndNoLaterFrameChangesAKeptOne) {
  Rig rig(100 * kMs, 0, 1000);
  SnapshotKeeper a, b;
  a.keep = true;
  rig.sampler->AddSink(&a);
  rig.sampler->AddSink(&b);
  for (int i = 0; i < 30; ++i) {
    if (i == 20) a.keep = false;  // what a kept stops holding is reused
    const Frame& f = rig.sampler->TickOnce();
    ASSERT_TRUE(a.newest);
    EXPECT_EQ(a.newest, b.newest);  // one snapshot for every sink of a frame
    EXPECT_EQ(a.newest->seq, f.seq);
    EXPECT_EQ(a.newest->boottime_ns, f.boottime_ns);
    EXPECT_EQ(a.newest->values, f.values);
    rig.clock.Advance(100 * kMs);
  }
  EXPECT_EQ(a.copies + b.copies, 0);
  // A sink's default OnSharedFrame still hands it the frame itself.
  ASSERT_EQ(rig.recorder->frames.size(), 30u);
  EXPECT_EQ(rig.recorder->frames.back().seq, a.newest->seq);
  // Frames sampled while (and after) they were held never wrote into them.
  ASSERT_EQ(a.kept.size(), 20u);
  for (size_t i = 0; i < a.kept.size(); ++i) {
    EXPECT_EQ(a.kept[i]->seq, rig.recorder->frames[i].seq) << i;
    EXPECT_EQ(a.kept[i]->boottime_ns, rig.recorder->frames[i].boottime_ns) << i;
    for (size_t j = 0; j < i; ++j) EXPECT_NE(a.kept[i].get(), a.kept[j].get());
  }
}

}  // namespace
}  // namespace edgemon
