// Energy counters integrated from rail power, through a Collection.
#include <gtest/gtest.h>

#include "daemon/collect/collection.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

constexpr int64_t kMs = 1'000'000;

// A rail whose power the test sets directly; optionally with its own energy
// counter (like RAPL), and optionally on the fast path.
class ScriptedRail final : public Collector {
 public:
  ScriptedRail(std::string name, bool fast, bool own_energy, Value* power)
      : name_(std::move(name)), fast_(fast), own_energy_(own_energy), power_(power) {}
  std::string_view Name() const override { return "scripted"; }
  bool FastPath() const override { return fast_; }
  void Discover(DiscoverContext& ctx) override {
    Channel c;
    c.kind = Kind::kRail;
    c.name = name_;
    c.field = Field::kPower;
    c.device = "ina3221 1-0040";
    id_ = ctx.Add(c);
    if (own_energy_) {
      c.field = Field::kEnergy;
      c.flags = kFlagCounter;
      ctx.Add(c);
    }
  }
  void Sample(SampleContext& ctx) override {
    ++samples;
    if (*power_) {
      ctx.Set(id_, **power_);
    } else if (!quiet_when_missing) {
      ctx.Fail(id_, ReadError::kIo);
    }
  }
  int samples = 0;
  bool quiet_when_missing = false;  // a miss neither sets nor fails the channel

 private:
  std::string name_;
  bool fast_, own_energy_;
  Value* power_;
  ChannelId id_ = 0;
};

struct Rig {
  explicit Rig(bool fast = true, bool own_energy = false) {
    auto r = std::make_unique<ScriptedRail>("VDD_IN", fast, own_energy, &power);
    rail = r.get();
    std::vector<std::unique_ptr<Collector>> v;
    v.push_back(std::move(r));
    collection = std::make_unique<Collection>(fs, std::move(v), CollectOptions{}, nullptr);
    collection->Discover();
  }
  Value Energy(const Frame& f) const {
    const Channel* c = collection->inventory().Find(Kind::kRail, "VDD_IN", Field::kEnergy);
    return c == nullptr ? std::nullopt : f.Get(c->id);
  }
  testing::TempTree tree;
  RootedSysFs fs{tree.root()};
  Value power = 1000;
  ScriptedRail* rail = nullptr;
  std::unique_ptr<Collection> collection;
};

TEST(Energy, ConstantPowerIntegratesExactly) {
  Rig rig;
  const Channel* e = rig.collection->inventory().Find(Kind::kRail, "VDD_IN", Field::kEnergy);
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->Has(kFlagCounter));
  EXPECT_EQ(e->unit, Unit::kMillijoule);
  Frame f;
  rig.collection->Sample(1000 * kMs, f);
  EXPECT_EQ(rig.Energy(f), 0);
  // 1 W for 2 s with fast samples every 10 ms in between: 2000 mJ.
  for (int i = 1; i < 200; ++i) rig.collection->SampleFast((1000 + 10 * i) * kMs);
  rig.collection->Sample(3000 * kMs, f);
  EXPECT_EQ(rig.Energy(f), 2000);
  EXPECT_EQ(rig.rail->samples, 201);
}

TEST(Energy, LinearRampIsExactWithTrapezoids) {
  Rig rig;
  Frame f;
  for (int i = 0; i <= 100; ++i) {
    rig.power = 1000 + 20 * i;  // 1 W -> 3 W over 1 s
    rig.collection->Sample(i * 10 * kMs, f);
  }
  EXPECT_EQ(rig.Energy(f), 2000);  // mean 2 W over 1 s
}

TEST(Energy, GapsAreNotBridgedAndMissingIsNotZero) {
  Rig rig;
  rig.collection->set_max_energy_gap_ns(100 * kMs);
  Frame f;
  rig.power = std::nullopt;
  rig.collection->Sample(0, f);
  EXPECT_FALSE(rig.Energy(f));  // never measured
  rig.power = 500;
  rig.collection->Sample(50 * kMs, f);
  rig.collection->Sample(150 * kMs, f);  // +50 mJ
  EXPECT_EQ(rig.Energy(f), 50);
  rig.power = std::nullopt;
  rig.collection->Sample(200 * kMs, f);  // failed read: counter holds
  EXPECT_EQ(rig.Energy(f), 50);
  rig.power = 500;
  rig.collection->Sample(1150 * kMs, f);  // 1 s since the last good reading: not bridged
  EXPECT_EQ(rig.Energy(f), 50);
  EXPECT_EQ(rig.collection->energy().gaps(), 1u);
  rig.collection->Sample(1250 * kMs, f);
  EXPECT_EQ(rig.Energy(f), 100);
}

TEST(Energy, RailsWithTheirOwnCounterAreNotIntegrated) {
  Rig rig(true, true);
  EXPECT_EQ(rig.collection->energy().rails(), 0u);
}

TEST(Energy, SeededCountersContinueAndSurviveRediscovery) {
  Rig rig;
  rig.collection->SeedEnergy({{"rail/VDD_IN/energy", 123456}});
  Frame f;
  rig.collection->Sample(0, f);
  rig.collection->Sample(1000 * kMs, f);
  EXPECT_EQ(rig.Energy(f), 124456);
  rig.collection->Discover();
  rig.collection->Sample(2000 * kMs, f);
  EXPECT_EQ(rig.Energy(f), 125456);
}

TEST(Energy, AFastSampleStartsWithItsRailsAbsent) {
  Rig rig;
  rig.rail->quiet_when_missing = true;
  rig.collection->SampleFast(10 * kMs);
  rig.power = std::nullopt;
  rig.collection->SampleFast(20 * kMs);
  const LiveEnergy& live = rig.collection->live_energy();
  EXPECT_EQ(live.PeakIn("rail/VDD_IN/energy", 10 * kMs, 11 * kMs), 1000);
  // Not read this time: absent, not the last sample's power.
  EXPECT_FALSE(live.PeakIn("rail/VDD_IN/energy", 20 * kMs, 21 * kMs));
  EXPECT_EQ(rig.rail->samples, 2);
}

TEST(Energy, SlowCollectorsAreNotOnTheFastPath) {
  Rig rig(false);
  rig.collection->SampleFast(10 * kMs);
  EXPECT_EQ(rig.rail->samples, 0);
}

}  // namespace
}  // namespace edgemon
