// The sampler's schedule on fake time: absolute deadlines, skipped (not
// bunched) late ticks, monotonic stored time, the energy rate and its boost.
#include "sampler.h"

#include <gtest/gtest.h>

#include "fake_clock.h"
#include "temp_tree.h"

namespace edgemon {
namespace {

constexpr int64_t kMs = 1'000'000;

// A collector whose sampling costs fake time.
class CostlyCollector final : public Collector {
 public:
  CostlyCollector(testing::FakeClock& clock, bool fast) : clock_(clock), fast_(fast) {}
  std::string_view Name() const override { return "costly"; }
  bool FastPath() const override { return fast_; }
  void Discover(DiscoverContext& ctx) override {
    Channel c;
    c.kind = Kind::kRail;
    c.name = "VDD_IN";
    c.field = Field::kPower;
    c.device = "ina3221 1-0040";
    id_ = ctx.Add(c);
  }
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
  std::vector<int64_t> rt;
  for (int i = 0; i < 10; ++i) {
    if (i == 3) rig.clock.JumpRealtime(-3600LL * 1'000'000'000);  // an hour back
    if (i == 6) rig.clock.JumpRealtime(7200LL * 1'000'000'000);   // two hours forward
    rt.push_back(rig.sampler->TickOnce().realtime_ns);
    rig.clock.Advance(100 * kMs);
  }
  for (size_t i = 1; i < rt.size(); ++i) EXPECT_GT(rt[i], rt[i - 1]) << i;
  EXPECT_EQ(rt[3] - rt[2], 100 * kMs);  // advanced with boottime after the backwards jump
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
  rig.sampler->Boost(10 * kMs, rig.clock.MonotonicNs() + 1000 * kMs);
  rig.sampler->Run();
  // Fast samples only during the first second of the two.
  EXPECT_GE(rig.sampler->fast_samples(), 85u);
  EXPECT_LE(rig.sampler->fast_samples(), 95u);
  EXPECT_EQ(rig.sampler->energy_period_ns(), 0);
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
