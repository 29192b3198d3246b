// LiveEnergy: the sampler's counters read back at any instant from the
// oldest reading held up to now (edges of ranges past the newest frame).
#include "daemon/collect/live_energy.h"

#include <gtest/gtest.h>

namespace edgemon {
namespace {

constexpr int64_t kMs = 1'000'000;

LiveEnergy::Keys Keys() {
  return std::make_shared<const std::vector<std::string>>(
      std::vector<std::string>{"rail/VDD_IN/energy", "rail/PKG/energy"});
}

LiveEnergy::Reading At(int64_t t, std::optional<double> mj, std::optional<int64_t> mw,
                       std::optional<double> pkg = std::nullopt) {
  LiveEnergy::Reading r;
  r.realtime_ns = t;
  r.mj = {mj, pkg};
  r.mw = {mw, std::nullopt};
  return r;
}

TEST(LiveEnergy, PublishHandsBackTheReadingTheRingLetGo) {
  LiveEnergy live(2);
  auto keys = Keys();
  // While the ring fills it hands back buffers sized for the keys, allocated
  // when the keys came, so the sampler fills it without the allocator.
  for (int64_t t : {1000 * kMs, 1010 * kMs}) {
    LiveEnergy::Reading spare = live.Publish(keys, At(t, t == 1000 * kMs ? 100.0 : 120.0, 2000));
    EXPECT_TRUE(spare.mj.empty());
    EXPECT_GE(spare.mj.capacity(), keys->size());
    EXPECT_GE(spare.mw.capacity(), keys->size());
  }
  LiveEnergy::Reading gone = live.Publish(keys, At(1020 * kMs, 140.0, 2000));
  EXPECT_EQ(gone.realtime_ns, 1000 * kMs);
  ASSERT_EQ(gone.mj.size(), 2u);
  EXPECT_EQ(gone.mj[0], 100.0);
  EXPECT_EQ(live.oldest_ns(), 1010 * kMs);
  EXPECT_EQ(live.CounterAt("rail/VDD_IN/energy", 1020 * kMs), 140.0);
}

TEST(LiveEnergy, HoldsThePowerOfTheReadingUpToTheInstant) {
  LiveEnergy live;
  auto keys = Keys();
  // 2 W then 4 W: readings 10 ms apart.
  live.Publish(keys, At(1000 * kMs, 100.0, 2000));
  live.Publish(keys, At(1010 * kMs, 130.0, 4000));
  const std::string k = "rail/VDD_IN/energy";
  EXPECT_FALSE(live.CounterAt(k, 999 * kMs));               // before the ring: the store's
  EXPECT_DOUBLE_EQ(*live.CounterAt(k, 1000 * kMs), 100.0);  // on a reading
  EXPECT_DOUBLE_EQ(*live.CounterAt(k, 1005 * kMs), 110.0);  // 2 W held for 5 ms
  EXPECT_DOUBLE_EQ(*live.CounterAt(k, 1010 * kMs), 130.0);
  // Past the newest reading (now, between rail samples): 4 W held.
  EXPECT_DOUBLE_EQ(*live.CounterAt(k, 1012 * kMs), 138.0);
  // A reading taken at an instant reads the same once newer samples exist.
  const double at_end = *live.CounterAt(k, 1012 * kMs);
  live.Publish(keys, At(1020 * kMs, 170.0, 4000));
  EXPECT_DOUBLE_EQ(*live.CounterAt(k, 1012 * kMs), at_end);
  EXPECT_FALSE(live.CounterAt("rail/NOPE/energy", 1012 * kMs));
}

TEST(LiveEnergy, NeverInventsEnergyOverAStalledSampler) {
  LiveEnergy live;
  live.set_max_hold_ns(100 * kMs);
  auto keys = Keys();
  live.Publish(keys, At(1000 * kMs, 100.0, 2000));
  EXPECT_DOUBLE_EQ(*live.CounterAt("rail/VDD_IN/energy", 1100 * kMs), 300.0);
  EXPECT_FALSE(live.CounterAt("rail/VDD_IN/energy", 1101 * kMs));  // stalled: unknown
  live.Publish(keys, At(2000 * kMs, 100.0, 2000));                 // the integrator held too
  EXPECT_DOUBLE_EQ(*live.CounterAt("rail/VDD_IN/energy", 1500 * kMs), 100.0);
}

TEST(LiveEnergy, StaysMonotonicBeforeALowerSample) {
  LiveEnergy live;
  auto keys = Keys();
  live.Publish(keys, At(0, 0.0, 4000));
  live.Publish(keys, At(10 * kMs, 30.0, 2000));                            // trapezoid: 3 W average
  EXPECT_DOUBLE_EQ(*live.CounterAt("rail/VDD_IN/energy", 9 * kMs), 30.0);  // not 36
}

TEST(LiveEnergy, HardwareCountersReadWithFramesOnly) {
  LiveEnergy live;
  auto keys = Keys();
  const std::string pkg = "rail/PKG/energy";
  live.Publish(keys, At(0, 0.0, 1000, 500.0));
  live.Publish(keys, At(5 * kMs, 5.0, 1000));              // a rail-rate reading without PKG
  EXPECT_DOUBLE_EQ(*live.CounterAt(pkg, 7 * kMs), 500.0);  // held, no power sample
  live.Publish(keys, At(10 * kMs, 10.0, 1000, 520.0));
  EXPECT_DOUBLE_EQ(*live.CounterAt(pkg, 10 * kMs), 520.0);
}

TEST(LiveEnergy, PeakOnlyFromSamplesInTheRange) {
  LiveEnergy live;
  auto keys = Keys();
  live.Publish(keys, At(0, 0.0, 1000));
  live.Publish(keys, At(10 * kMs, 10.0, 7000));
  live.Publish(keys, At(20 * kMs, 80.0, 3000));
  const std::string k = "rail/VDD_IN/energy";
  EXPECT_EQ(live.PeakIn(k, 0, 30 * kMs), 7000);
  EXPECT_EQ(live.PeakIn(k, 11 * kMs, 30 * kMs), 3000);
  EXPECT_FALSE(live.PeakIn(k, 21 * kMs, 22 * kMs));  // no sample: no peak, never 0
}

TEST(LiveEnergy, ANewInventoryStartsAfresh) {
  LiveEnergy live;
  live.Publish(Keys(), At(0, 0.0, 1000));
  live.Publish(Keys(), At(10 * kMs, 10.0, 1000));  // another key list
  EXPECT_EQ(live.oldest_ns(), 10 * kMs);
}

}  // namespace
}  // namespace edgemon
