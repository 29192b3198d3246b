// The board simulator (daemon/sim): fixture boards copied into a scratch
// root, stepped deterministically with Step(t), and read back through
// edgemon's own collectors. Every expectation is computed from the
// simulator's analytic waveforms (RailPowerMw, RailEnergyMj, CpuBusySeconds,
// the temperature and load sines) and the fixture's own values.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"
#include "daemon/collect/sysfs.h"
#include "daemon/sim/simulator.h"
#include "tests/support/temp_tree.h"

namespace edgemon::sim {
namespace {

using edgemon::testing::Fixture;
using edgemon::testing::FixturesDir;
using edgemon::testing::TempTree;

constexpr double kSecondNs = 1e9;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// OK, or a failure that prints the status.
::testing::AssertionResult Ok(const Status& s) {
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << s.ToString();
}

// A fixture board materialised into a scratch root, a simulator on it, and
// edgemon's default collectors reading it.
class SimBoard {
 public:
  explicit SimBoard(const std::string& board, uint64_t seed = 7, double period_s = 10) {
    root_ = tree_.root() + "/board";
    EXPECT_TRUE(Ok(Simulator::Materialise(Fixture(board), root_)));
    Simulator::Options o;
    o.board = board;
    o.seed = seed;
    o.period_s = period_s;
    auto opened = Simulator::Open(root_, o);
    EXPECT_TRUE(Ok(opened.status()));
    if (opened.ok()) sim_ = std::move(opened).value();
  }

  // Builds the collection; call after Step(t0) so it discovers moving values.
  void Collect() {
    fs_ = std::make_unique<RootedSysFs>(root_);
    collection_ = std::make_unique<Collection>(*fs_, MakeDefaultCollectors(CollectOptions{}),
                                               CollectOptions{}, nullptr);
    collection_->Discover();
  }
  // Steps the simulator to t and samples at boottime t.
  void At(double t) {
    sim_->Step(t);
    if (!collection_) Collect();
    collection_->Sample(static_cast<int64_t>(std::llround(t * kSecondNs)) + 1, frame_);
  }
  Value Get(Kind kind, std::string_view name, Field field) const {
    const Channel* c = collection_->inventory().Find(kind, name, field);
    return c ? frame_.Get(c->id) : std::nullopt;
  }
  const Channel* Find(Kind kind, std::string_view name, Field field) const {
    return collection_->inventory().Find(kind, name, field);
  }

  Simulator& sim() { return *sim_; }
  const Model& model() const { return sim_->model(); }
  const std::string& root() const { return root_; }
  std::string Real(const std::string& logical) const { return root_ + logical; }
  Collection& collection() { return *collection_; }

 private:
  TempTree tree_;
  std::string root_;
  std::unique_ptr<Simulator> sim_;
  std::unique_ptr<RootedSysFs> fs_;
  std::unique_ptr<Collection> collection_;
  Frame frame_;
};

std::vector<const RailWave*> RailsOf(const Model& m, std::string_view source) {
  std::vector<const RailWave*> out;
  for (const auto& r : m.rails) {
    if (r.source == source) out.push_back(&r);
  }
  return out;
}

const TempWave* TempOf(const Model& m, std::string_view key) {
  for (const auto& t : m.temps) {
    if (t.key == key) return &t;
  }
  return nullptr;
}

// Simpson's rule over n (even) intervals.
double Simpson(const Model& m, const std::string& rail, double t0, double t1, int n) {
  const double h = (t1 - t0) / n;
  double sum = m.RailPowerMw(rail, t0) + m.RailPowerMw(rail, t1);
  for (int i = 1; i < n; ++i) sum += (i % 2 ? 4 : 2) * m.RailPowerMw(rail, t0 + i * h);
  return sum * h / 3;
}

// ---------------------------------------------------------------------------

TEST(SimWaveform, EnergyIsTheExactIntegralOfPower) {
  for (const char* board : {"agx-orin", "jetson-nano", "x86-laptop"}) {
    SimBoard b(board, 3, 7.5);
    ASSERT_FALSE(b.model().rails.empty()) << board;
    for (const auto& r : b.model().rails) {
      for (auto [t0, t1] : std::vector<std::pair<double, double>>{
               {0, 7.5}, {0.3, 4.1}, {2, 27.5}, {13.37, 13.38}, {100, 100}}) {
        const double exact = b.sim().RailEnergyMj(r.name, t0, t1);
        const double numeric = Simpson(b.model(), r.name, t0, t1, 2000);
        EXPECT_NEAR(exact, numeric, 1e-6 * std::max(1.0, std::fabs(numeric)))
            << board << " " << r.name << " [" << t0 << ", " << t1 << "]";
      }
      // A whole period averages to the base power.
      EXPECT_NEAR(b.sim().RailEnergyMj(r.name, 1.25, 1.25 + 7.5), r.base_mw * 7.5, 1e-6 * r.base_mw)
          << r.name;
      EXPECT_GE(r.amplitude, 0);
      EXPECT_LT(r.amplitude, 1);
    }
  }
  SimBoard b("orin-nano");
  EXPECT_TRUE(std::isnan(b.sim().RailPowerMw("NO_SUCH_RAIL", 1)));
  EXPECT_TRUE(std::isnan(b.sim().RailEnergyMj("NO_SUCH_RAIL", 0, 1)));
}

TEST(SimWaveform, UniformIsDeterministicAndSpread) {
  EXPECT_EQ(Uniform(1, "VDD_IN"), Uniform(1, "VDD_IN"));
  EXPECT_NE(Uniform(1, "VDD_IN"), Uniform(2, "VDD_IN"));
  EXPECT_NE(Uniform(1, "VDD_IN"), Uniform(1, "VDD_SOC"));
  double lo = 1, hi = 0;
  for (int i = 0; i < 1000; ++i) {
    double u = Uniform(42, "k" + std::to_string(i));
    ASSERT_GE(u, 0);
    ASSERT_LT(u, 1);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  EXPECT_LT(lo, 0.01);
  EXPECT_GT(hi, 0.99);
}

// INA3221 (hwmon): edgemon reads mV and mA and computes V x I / 1000
// (truncated); the simulator writes mA = round(P * 1000 / V).
TEST(SimBoards, Ina3221RailsFollowTheWaveform) {
  for (const char* board : {"orin-nano", "agx-orin", "xavier-nx"}) {
    SimBoard b(board);
    const auto rails = RailsOf(b.model(), "ina3221");
    ASSERT_FALSE(rails.empty()) << board;
    std::map<std::string, std::pair<int64_t, int64_t>> range;  // min, max power read
    for (double t : {0.0, 0.7, 2.5, 3.9, 6.1, 7.3, 9.95}) {
      b.At(t);
      for (const RailWave* r : rails) {
        const double p = b.sim().RailPowerMw(r->name, t);
        const auto mv = static_cast<int64_t>(r->voltage_mv);
        const int64_t ma = std::llround(p * 1000 / r->voltage_mv);
        EXPECT_EQ(b.Get(Kind::kRail, r->name, Field::kVoltage), mv) << board << " " << r->name;
        EXPECT_EQ(b.Get(Kind::kRail, r->name, Field::kCurrent), ma) << board << " " << r->name;
        Value mw = b.Get(Kind::kRail, r->name, Field::kPower);
        ASSERT_TRUE(mw) << board << " " << r->name;
        EXPECT_EQ(*mw, mv * ma / 1000) << board << " " << r->name;
        // Quantisation: half a mA at the bus voltage, plus the truncation.
        EXPECT_NEAR(static_cast<double>(*mw), p, r->voltage_mv / 2000 + 1)
            << board << " " << r->name << " t=" << t;
        auto& [lo, hi] = range.try_emplace(r->name, *mw, *mw).first->second;
        lo = std::min(lo, *mw);
        hi = std::max(hi, *mw);
      }
    }
    for (const RailWave* r : rails) {
      if (r->base_mw < 100) continue;
      auto [lo, hi] = range[r->name];
      EXPECT_GT(static_cast<double>(hi - lo), 0.1 * r->base_mw) << board << " " << r->name;
    }
  }
}

TEST(SimBoards, Ina3221BaseIsTheFixtureReading) {
  SimBoard b("orin-nano");
  const std::string dir = b.Real(SysPath("class/hwmon/hwmon1"));
  ASSERT_EQ(parse::Trim(ReadAll(dir + "/name")), "ina3221");
  const RailWave* r = b.model().FindRail("VDD_IN");
  ASSERT_NE(r, nullptr);
  const auto mv = parse::Int(ReadAll(dir + "/in1_input"));
  const auto ma = parse::Int(ReadAll(dir + "/curr1_input"));
  ASSERT_TRUE(mv && ma);
  EXPECT_DOUBLE_EQ(r->voltage_mv, static_cast<double>(*mv));
  EXPECT_DOUBLE_EQ(r->base_mw, static_cast<double>(*mv * *ma) / 1000);
  EXPECT_EQ(r->device, "ina3221 1-0040");
  // The shunt and sum channels stay consistent with the currents.
  b.sim().Step(3.3);
  int64_t sum_ma = 0, sum_shunt = 0;
  for (int k = 1; k <= 3; ++k) {
    const auto c = parse::Int(ReadAll(dir + "/curr" + std::to_string(k) + "_input"));
    const auto shunt = parse::Int(ReadAll(dir + "/in" + std::to_string(k + 3) + "_input"));
    const auto uohm = parse::Int(ReadAll(dir + "/shunt" + std::to_string(k) + "_resistor"));
    ASSERT_TRUE(c && shunt && uohm);
    EXPECT_EQ(*shunt, *c * *uohm / 1000);
    sum_ma += *c;
    sum_shunt += *shunt;
  }
  EXPECT_EQ(parse::Int(ReadAll(dir + "/curr4_input")), sum_ma);
  EXPECT_EQ(parse::Int(ReadAll(dir + "/in7_input")), sum_shunt);
  // NC channels of the AGX Orin's second chip are not rails and do not move.
  SimBoard agx("agx-orin");
  for (const auto& rail : agx.model().rails) EXPECT_NE(rail.name, "NC");
}

// ina3221x (iio): edgemon reads in_power directly; current and voltage agree.
TEST(SimBoards, Ina3221IioRailsFollowTheWaveform) {
  for (const char* board : {"jetson-nano", "tx2"}) {
    SimBoard b(board);
    const auto rails = RailsOf(b.model(), "ina3221x");
    ASSERT_FALSE(rails.empty()) << board;
    for (double t : {0.0, 1.1, 4.4, 8.8}) {
      b.At(t);
      for (const RailWave* r : rails) {
        const double p = b.sim().RailPowerMw(r->name, t);
        EXPECT_EQ(b.Get(Kind::kRail, r->name, Field::kPower), std::llround(p)) << r->name;
        EXPECT_EQ(b.Get(Kind::kRail, r->name, Field::kCurrent),
                  std::llround(p * 1000 / r->voltage_mv))
            << r->name;
        EXPECT_EQ(b.Get(Kind::kRail, r->name, Field::kVoltage), static_cast<int64_t>(r->voltage_mv))
            << r->name;
      }
    }
  }
  // The Nano's three rails, with their fixture power as base.
  SimBoard nano("jetson-nano");
  for (const char* rail : {"POM_5V_IN", "POM_5V_GPU", "POM_5V_CPU"}) {
    const RailWave* r = nano.model().FindRail(rail);
    ASSERT_NE(r, nullptr) << rail;
    EXPECT_GT(r->base_mw, 0) << rail;
    EXPECT_EQ(r->device, "ina3221x 6-0040");
  }
  const RailWave* in = nano.model().FindRail("POM_5V_IN");
  ASSERT_NE(in, nullptr);
  const std::string dir = nano.Real(SysPath("bus/iio/devices/iio:device0"));
  EXPECT_EQ(parse::Int(ReadAll(dir + "/in_power0_input")), std::llround(in->base_mw));
  nano.sim().Step(2.2);
  const std::string ui = ReadAll(dir + "/ui_input_0");
  EXPECT_EQ(ui, std::to_string(std::llround(in->voltage_mv)) + " " +
                    std::to_string(std::llround(in->PowerMw(2.2, 10) * 1000 / in->voltage_mv)) +
                    "\n");
}

// RAPL: the counter advances by the exact integral; edgemon's accumulated
// energy over a window matches RailEnergyMj.
TEST(SimBoards, RaplCounterIsTheIntegral) {
  SimBoard b("x86-laptop");
  const auto zones = RailsOf(b.model(), "rapl");
  ASSERT_EQ(zones.size(), 4u);  // package-0, package-0/core, package-0/uncore, psys
  ASSERT_NE(b.model().FindRail("package-0/core"), nullptr);
  b.At(0);
  std::map<std::string, int64_t> first;
  for (const RailWave* z : zones) {
    Value e = b.Get(Kind::kRail, z->name, Field::kEnergy);
    ASSERT_TRUE(e) << z->name;
    EXPECT_EQ(*e, z->energy_uj_start / 1000) << z->name;
    first[z->name] = *e;
  }
  for (int i = 1; i <= 200; ++i) {
    const double t = i * 0.1;
    b.At(t);
    for (const RailWave* z : zones) {
      // The derived power is the counter's slope over the last step.
      Value mw = b.Get(Kind::kRail, z->name, Field::kPower);
      ASSERT_TRUE(mw) << z->name;
      EXPECT_NEAR(static_cast<double>(*mw), b.sim().RailEnergyMj(z->name, t - 0.1, t) / 0.1, 1.5)
          << z->name << " t=" << t;
    }
  }
  for (const RailWave* z : zones) {
    Value e = b.Get(Kind::kRail, z->name, Field::kEnergy);
    ASSERT_TRUE(e);
    EXPECT_NEAR(static_cast<double>(*e - first[z->name]), b.sim().RailEnergyMj(z->name, 0, 20), 1.5)
        << z->name;
  }
}

TEST(SimBoards, RaplCounterWrapsAtItsRange) {
  TempTree tree;
  const std::string root = tree.root() + "/board";
  ASSERT_TRUE(Ok(Simulator::Materialise(Fixture("x86-laptop"), root)));
  // A 3 J range: package-0 (8 W +-45%) wraps every few tenths of a second;
  // the fixture's counter, beyond the range, starts at its remainder.
  const std::string zone = root + SysPath("class/powercap/intel-rapl:0");
  const auto start = parse::Int(ReadAll(zone + "/energy_uj"));
  ASSERT_TRUE(start);
  const int64_t range = 3'000'000;
  { std::ofstream(zone + "/max_energy_range_uj") << range << "\n"; }
  auto opened = Simulator::Open(root, {});
  ASSERT_TRUE(Ok(opened.status()));
  auto sim = std::move(opened).value();
  RootedSysFs fs(root);
  Collection c(fs, MakeDefaultCollectors(CollectOptions{}), CollectOptions{}, nullptr);
  Frame f;
  sim->Step(0);
  c.Discover();
  c.Sample(1, f);
  const Channel* ch = c.inventory().Find(Kind::kRail, "package-0", Field::kEnergy);
  ASSERT_NE(ch, nullptr);
  ASSERT_TRUE(f.Get(ch->id));
  const int64_t e0 = *f.Get(ch->id);
  int wraps = 0;
  int64_t last_raw = *start % range;
  EXPECT_EQ(sim->model().FindRail("package-0")->energy_uj_start, last_raw);
  for (int i = 1; i <= 100; ++i) {
    const double t = i * 0.05;
    sim->Step(t);
    c.Sample(static_cast<int64_t>(t * kSecondNs), f);
    const auto raw = parse::Int(ReadAll(zone + "/energy_uj"));
    ASSERT_TRUE(raw);
    ASSERT_GE(*raw, 0);
    ASSERT_LT(*raw, range);
    if (*raw < last_raw) ++wraps;
    last_raw = *raw;
  }
  EXPECT_GE(wraps, 5);
  ASSERT_TRUE(f.Get(ch->id));
  EXPECT_NEAR(static_cast<double>(*f.Get(ch->id) - e0), sim->RailEnergyMj("package-0", 0, 5), 1.5);
}

// Batteries: current_now follows P / V; power is V x I.
TEST(SimBoards, BatteryFollowsTheWaveform) {
  SimBoard b("x86-laptop");
  const RailWave* bat = b.model().FindRail("BAT0");
  ASSERT_NE(bat, nullptr);
  EXPECT_EQ(bat->source, "power_supply");
  const std::string dir = b.Real(SysPath("class/power_supply/BAT0"));
  const auto charge0 = parse::Int(ReadAll(dir + "/charge_now"));
  ASSERT_TRUE(charge0);
  for (double t : {0.0, 2.0, 5.0}) {
    b.At(t);
    Value mw = b.Get(Kind::kRail, "BAT0", Field::kPower);
    ASSERT_TRUE(mw);
    EXPECT_NEAR(static_cast<double>(*mw), b.sim().RailPowerMw("BAT0", t), 1.0) << t;
    EXPECT_EQ(b.Get(Kind::kRail, "BAT0", Field::kVoltage), static_cast<int64_t>(bat->voltage_mv));
  }
  // Charging: the charge grows by the energy over the voltage.
  const auto charge = parse::Int(ReadAll(dir + "/charge_now"));
  ASSERT_TRUE(charge);
  const double expect_uah = static_cast<double>(*charge0) +
                            b.sim().RailEnergyMj("BAT0", 0, 5) / bat->voltage_mv * 1e6 / 3600;
  EXPECT_NEAR(static_cast<double>(*charge), expect_uah, 1.0);
}

// /proc/stat: per-core jiffy deltas give the waveform's mean load.
TEST(SimBoards, ProcStatDeltasGiveTheIntendedLoad) {
  for (const char* board : {"orin-nano", "tx2", "agx-orin"}) {
    SimBoard b(board);
    ASSERT_FALSE(b.model().cpus.empty()) << board;
    b.At(1.0);
    b.At(3.0);
    double mean = 0;
    std::map<int, int64_t> first_window;
    for (const auto& c : b.model().cpus) {
      const std::string name = "cpu" + std::to_string(c.cpu);
      const double expect = 1000 * b.model().CpuBusySeconds(c.cpu, 1, 3) / 2;
      mean += expect;
      Value load = b.Get(Kind::kCpu, name, Field::kLoad);
      ASSERT_TRUE(load) << board << " " << name;
      // 200 jiffies per window: one jiffy of rounding at each end.
      EXPECT_NEAR(static_cast<double>(*load), expect, 11) << board << " " << name;
      first_window[c.cpu] = *load;
      EXPECT_EQ(b.Get(Kind::kCpu, name, Field::kOnline), 1);
    }
    mean /= static_cast<double>(b.model().cpus.size());
    Value total = b.Get(Kind::kCpu, "cpu", Field::kLoad);
    ASSERT_TRUE(total);
    EXPECT_NEAR(static_cast<double>(*total), mean, 6) << board;

    // The load moves: another window gives other loads.
    b.At(6.0);
    b.At(8.0);
    double moved = 0;
    for (const auto& c : b.model().cpus) {
      Value load = b.Get(Kind::kCpu, "cpu" + std::to_string(c.cpu), Field::kLoad);
      ASSERT_TRUE(load);
      EXPECT_NEAR(static_cast<double>(*load), 1000 * b.model().CpuBusySeconds(c.cpu, 6, 8) / 2, 11);
      moved += std::fabs(static_cast<double>(*load - first_window[c.cpu]));
    }
    EXPECT_GT(moved / static_cast<double>(b.model().cpus.size()), 30) << board;
  }
}

TEST(SimBoards, OfflineCoresStayOffline) {
  SimBoard b("tx2");  // cpus 1 and 2 (Denver) are offline
  for (const auto& c : b.model().cpus) EXPECT_TRUE(c.cpu != 1 && c.cpu != 2) << c.cpu;
  EXPECT_EQ(b.model().cpus.size(), 4u);
  const std::string policy1 =
      b.Real(SysPath("devices/system/cpu/cpufreq/policy1/scaling_cur_freq"));
  const std::string before = ReadAll(policy1);
  for (double t : {0.0, 2.0, 4.0}) {
    b.At(t);
    for (const char* cpu : {"cpu1", "cpu2"}) {
      EXPECT_EQ(b.Get(Kind::kCpu, cpu, Field::kOnline), 0) << cpu;
      EXPECT_FALSE(b.Get(Kind::kCpu, cpu, Field::kLoad)) << cpu;
    }
  }
  EXPECT_EQ(ReadAll(policy1), before);
  EXPECT_EQ(parse::Trim(ReadAll(b.Real(SysPath("devices/system/cpu/online")))), "0,3-5");
}

TEST(SimBoards, CpuFrequencyFollowsLoadWithinTheTable) {
  SimBoard b("tx2");
  std::set<int64_t> table;
  for (const auto& tok : {"345600", "499200", "652800", "806400", "960000", "1113600", "1267200",
                          "1420800", "1574400", "1728000", "1881600", "2035200"}) {
    table.insert(*parse::Int(tok));
  }
  std::set<int64_t> seen;
  for (double t = 0; t < 10; t += 0.5) {
    b.At(t);
    Value khz = b.Get(Kind::kCpu, "cpu0", Field::kFreq);
    ASSERT_TRUE(khz);
    EXPECT_TRUE(table.count(*khz)) << *khz;
    seen.insert(*khz);
    // min + (max - min) * mean load of cores 0, 3, 4, 5, snapped.
    double load = 0;
    for (int cpu : {0, 3, 4, 5}) load += b.model().CpuLoad(cpu, t);
    const double want = 345600 + (2035200 - 345600) * load / 4;
    for (int64_t f : table) {
      EXPECT_LE(std::fabs(static_cast<double>(*khz) - want),
                std::fabs(static_cast<double>(f) - want) + 1e-9);
    }
  }
  EXPECT_GE(seen.size(), 2u);
}

// Thermal zones move along their slow sine; gated zones stay absent and
// PMIC-Die stays the constant it is.
TEST(SimBoards, TemperaturesMoveGatedZonesStayAbsent) {
  SimBoard b("agx-orin");
  EXPECT_EQ(TempOf(b.model(), "thermal_zone1"), nullptr);  // GPU-therm, gated
  std::map<std::string, std::pair<int64_t, int64_t>> range;
  for (double t : {0.0, 5.0, 10.0, 20.0, 30.0}) {
    b.At(t);
    for (const char* gated : {"GPU-therm", "CV0-therm", "CV1-therm", "CV2-therm"}) {
      EXPECT_FALSE(b.Get(Kind::kThermal, gated, Field::kTemp)) << gated;
    }
    for (const auto& z : b.model().temps) {
      Value mc = b.Get(Kind::kThermal, z.name, Field::kTemp);
      ASSERT_TRUE(mc) << z.name;
      EXPECT_EQ(*mc, std::llround(z.temp_mc.At(t))) << z.name;
      auto& [lo, hi] = range.try_emplace(z.name, *mc, *mc).first->second;
      lo = std::min(lo, *mc);
      hi = std::max(hi, *mc);
    }
  }
  ASSERT_GE(range.size(), 7u);  // CPU, SOC0-2, Tboard, Tdiode, tj
  for (const auto& [name, r] : range) EXPECT_GT(r.second - r.first, 1000) << name;
  // The gated files still read -256000.
  EXPECT_EQ(parse::Int(ReadAll(b.Real(SysPath("class/thermal/thermal_zone1/temp")))), -256000);

  SimBoard nx("xavier-nx");
  for (double t : {0.0, 7.0, 14.0}) {
    nx.At(t);
    EXPECT_EQ(nx.Get(Kind::kThermal, "PMIC-Die", Field::kTemp), 100000);
  }
  Value cpu0 = nx.Get(Kind::kThermal, "CPU-therm", Field::kTemp);
  ASSERT_TRUE(cpu0);
  EXPECT_EQ(*cpu0, std::llround(TempOf(nx.model(), "thermal_zone1")->temp_mc.At(14.0)));
}

TEST(SimBoards, HwmonTemperaturesMove) {
  SimBoard b("x86-laptop");
  bool any = false;
  for (const auto& z : b.model().temps) {
    if (z.name.rfind("coretemp/", 0) != 0) continue;
    any = true;
    b.At(0);
    Value a = b.Get(Kind::kThermal, z.name, Field::kTemp);
    b.At(10);
    Value c = b.Get(Kind::kThermal, z.name, Field::kTemp);
    ASSERT_TRUE(a && c) << z.name;
    EXPECT_EQ(*c, std::llround(z.temp_mc.At(10))) << z.name;
    EXPECT_NE(*a, *c) << z.name;
  }
  EXPECT_TRUE(any);
  EXPECT_NE(TempOf(b.model(), "thermal_zone0"), nullptr);  // acpitz
}

TEST(SimBoards, GpuLoadAndFrequencyMove) {
  for (const char* board : {"orin-nano", "jetson-nano", "xavier-nx"}) {
    SimBoard b(board);
    ASSERT_EQ(b.model().gpus.size(), 1u) << board;
    const Sine& s = b.model().gpus[0].load_permille;
    std::set<int64_t> loads, freqs;
    for (double t = 0; t < 10; t += 1.25) {
      b.At(t);
      Value load = b.Get(Kind::kGpu, "gpu", Field::kLoad);
      Value khz = b.Get(Kind::kGpu, "gpu", Field::kFreq);
      ASSERT_TRUE(load && khz) << board;
      EXPECT_EQ(*load, std::llround(std::clamp(s.At(t), 0.0, 1000.0))) << board;
      const Channel* ch = b.Find(Kind::kGpu, "gpu", Field::kFreq);
      ASSERT_TRUE(ch && ch->min && ch->max);
      EXPECT_GE(*khz, *ch->min);
      EXPECT_LE(*khz, *ch->max);
      loads.insert(*load);
      freqs.insert(*khz);
    }
    EXPECT_GE(loads.size(), 5u) << board;
    EXPECT_GE(freqs.size(), 2u) << board;
  }
}

// Thor: the GPU clock (gpu-gpc-0, which has no load file) moves, and the
// carrier's INA238 "VIN" follows its waveform (power in uW, current P / V).
TEST(SimBoards, ThorGpcClockAndIna238Move) {
  SimBoard b("agx-thor-r38");
  ASSERT_EQ(b.model().gpus.size(), 1u);
  EXPECT_EQ(b.model().gpus[0].entry, "gpu-gpc-0");
  const RailWave* vin = b.model().FindRail("VIN");
  ASSERT_NE(vin, nullptr);
  EXPECT_EQ(vin->source, "ina238");
  EXPECT_EQ(vin->device, "ina238 2-0044");
  std::set<int64_t> freqs, powers;
  for (double t = 0; t < 10; t += 1.25) {
    b.At(t);
    EXPECT_EQ(b.Find(Kind::kGpu, "gpu", Field::kLoad), nullptr);
    Value khz = b.Get(Kind::kGpu, "gpu", Field::kFreq);
    ASSERT_TRUE(khz);
    freqs.insert(*khz);
    const double p = b.sim().RailPowerMw("VIN", t);
    Value mw = b.Get(Kind::kRail, "VIN", Field::kPower);
    ASSERT_TRUE(mw);
    EXPECT_EQ(*mw, std::llround(p * 1000) / 1000) << t;
    EXPECT_EQ(b.Get(Kind::kRail, "VIN", Field::kCurrent), std::llround(p * 1000 / vin->voltage_mv));
    EXPECT_EQ(b.Get(Kind::kRail, "VIN", Field::kVoltage), static_cast<int64_t>(vin->voltage_mv));
    powers.insert(*mw);
  }
  EXPECT_GE(freqs.size(), 2u);
  EXPECT_GE(powers.size(), 5u);
}

TEST(SimBoards, EmcLoadAndRateMove) {
  for (const char* board : {"orin-nano", "agx-orin", "jetson-nano"}) {
    SimBoard b(board);
    ASSERT_TRUE(b.model().emc_load_permille) << board;
    const Sine& s = *b.model().emc_load_permille;
    std::set<int64_t> rates;
    for (double t = 0; t < 10; t += 0.5) {
      b.At(t);
      Value load = b.Get(Kind::kEmc, "emc", Field::kLoad);
      Value khz = b.Get(Kind::kEmc, "emc", Field::kFreq);
      ASSERT_TRUE(load && khz) << board;
      EXPECT_NEAR(static_cast<double>(*load), s.At(t), 1.5) << board << " t=" << t;
      rates.insert(*khz);
    }
    EXPECT_EQ(rates.size(), 2u) << board;  // the fixture's rate and half of it
  }
}

// End to end: edgemon's own energy counter (trapezoid over 100 Hz samples)
// matches the analytic energy of the window.
TEST(SimBoards, IntegratedEnergyMatchesTheAnalyticEnergy) {
  SimBoard b("orin-nano");
  b.At(0);
  const Channel* ch = b.Find(Kind::kRail, "VDD_IN", Field::kEnergy);
  ASSERT_NE(ch, nullptr);
  Value e0 = b.Get(Kind::kRail, "VDD_IN", Field::kEnergy);
  ASSERT_TRUE(e0);
  for (int i = 1; i <= 1000; ++i) b.At(i * 0.01);
  Value e1 = b.Get(Kind::kRail, "VDD_IN", Field::kEnergy);
  ASSERT_TRUE(e1);
  const RailWave* r = b.model().FindRail("VDD_IN");
  ASSERT_NE(r, nullptr);
  // Each reading is within V/2000 + 1 mW of the truth; over 10 s.
  EXPECT_NEAR(static_cast<double>(*e1 - *e0), b.sim().RailEnergyMj("VDD_IN", 0, 10),
              10 * (r->voltage_mv / 2000 + 1) + 1);
}

// Files are rewritten in place: a reader's open descriptor sees new values,
// the inode stays, and a shorter value truncates the file.
TEST(SimBoards, WritesInPlace) {
  TempTree tree;
  const std::string root = tree.root() + "/board";
  ASSERT_TRUE(Ok(Simulator::Materialise(Fixture("orin-nano"), root)));
  const std::string curr = root + SysPath("class/hwmon/hwmon1/curr1_input");
  {
    std::ofstream(curr, std::ios::trunc) << "000000000000001416\n";  // long, same value
  }
  int fd = ::open(curr.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  struct stat before;
  ASSERT_EQ(::fstat(fd, &before), 0);
  auto opened = Simulator::Open(root, {});
  ASSERT_TRUE(Ok(opened.status()));
  auto sim = std::move(opened).value();
  for (double t : {0.0, 2.5, 5.0}) {
    sim->Step(t);
    char buf[64];
    ssize_t n = ::pread(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0);
    const std::string via_fd(buf, static_cast<size_t>(n));
    EXPECT_EQ(via_fd, ReadAll(curr));
    const double p = sim->RailPowerMw("VDD_IN", t);
    EXPECT_EQ(via_fd, std::to_string(std::llround(p * 1000 / 5080)) + "\n");
  }
  struct stat after;
  ASSERT_EQ(::stat(curr.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_LT(after.st_size, 10);
  ::close(fd);
  EXPECT_EQ(sim->write_errors(), 0u);
}

// A reader that keeps the file open and re-reads it while the simulator
// rewrites it (values of changing length: a RAPL counter wrapping in a 3 J
// range) only ever sees one integer, never an empty file, blanks alone or a
// stale tail after the newline ("12345\n7"). Its digits are not checked: the
// kernel copies a page-cache read without a lock against a write, so a read
// that overlaps the copy of a write can mix old and new digits (seen about
// once in 10^7 reads here); every value the simulator writes is checked
// between steps instead.
TEST(SimBoards, ConcurrentReadersSeeOneIntegerAndEveryValueIsInRange) {
  TempTree tree;
  const std::string root = tree.root() + "/board";
  ASSERT_TRUE(Ok(Simulator::Materialise(Fixture("x86-laptop"), root)));
  const std::string zone = root + SysPath("class/powercap/intel-rapl:0");
  { std::ofstream(zone + "/max_energy_range_uj") << 3'000'000 << "\n"; }
  auto opened = Simulator::Open(root, {});
  ASSERT_TRUE(Ok(opened.status()));
  auto sim = std::move(opened).value();
  sim->Step(0);
  const int fd = ::open((zone + "/energy_uj").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, bad{0};
  std::thread reader([&] {
    char buf[64];
    while (!done.load()) {
      ssize_t n = ::pread(fd, buf, sizeof buf, 0);
      if (n <= 0 || !parse::Int(std::string_view(buf, static_cast<size_t>(n)))) bad.fetch_add(1);
      reads.fetch_add(1);
    }
  });
  std::set<size_t> lengths;
  int out_of_range = 0;
  for (int i = 1; i <= 20000; ++i) {
    sim->Step(i * 0.0007);
    const std::string text = ReadAll(zone + "/energy_uj");
    lengths.insert(text.size());
    auto v = parse::Int(text);
    if (!v || *v < 0 || *v >= 3'000'000 || text.back() != '\n') ++out_of_range;
  }
  done = true;
  reader.join();
  ::close(fd);
  EXPECT_GE(lengths.size(), 2u);  // the text did shrink and grow
  EXPECT_EQ(out_of_range, 0);
  EXPECT_GT(reads.load(), 100);
  EXPECT_EQ(bad.load(), 0) << "of " << reads.load() << " reads";
}

TEST(SimBoards, StepIsAPureFunctionOfTime) {
  SimBoard a("agx-orin", 11), b("agx-orin", 11), c("agx-orin", 12);
  a.sim().Step(1.0);
  a.sim().Step(4.2);
  b.sim().Step(4.2);
  c.sim().Step(4.2);
  const std::string stat = ProcPath("stat");
  const std::string curr = SysPath("class/hwmon/hwmon3/curr1_input");
  EXPECT_EQ(ReadAll(a.Real(stat)), ReadAll(b.Real(stat)));
  EXPECT_EQ(ReadAll(a.Real(curr)), ReadAll(b.Real(curr)));
  EXPECT_NE(ReadAll(a.Real(stat)), ReadAll(c.Real(stat)));
  EXPECT_NE(a.model().rails[0].phase, c.model().rails[0].phase);
}

// Every fixture board runs under the simulator without a value turning into
// garbage: whatever the fixture shows, the simulated board shows too, and
// what is absent on the fixture (gated zones, offline cores) stays absent.
TEST(SimBoards, EveryBoardSimulatesCleanly) {
  std::vector<std::string> boards;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(FixturesDir() + "/expected", ec)) {
    if (e.path().extension() == ".json") boards.push_back(e.path().stem().string());
  }
  ASSERT_GE(boards.size(), 7u);
  for (const auto& board : boards) {
    RootedSysFs plain_fs(Fixture(board));
    Collection plain(plain_fs, MakeDefaultCollectors(CollectOptions{}), CollectOptions{}, nullptr);
    plain.Discover();
    Frame pf;
    plain.Sample(1'000'000'000, pf);
    plain.Sample(2'000'000'000, pf);

    SimBoard b(board);
    b.At(1.0);
    b.At(2.0);
    EXPECT_EQ(b.sim().write_errors(), 0u) << board;
    EXPECT_EQ(b.collection().total_errors(), plain.total_errors()) << board;
    for (const auto& ch : plain.inventory().channels) {
      ASSERT_NE(b.Find(ch.kind, ch.name, ch.field), nullptr) << board << ": " << ch.Key();
      const Value pv = pf.Get(ch.id);
      const Value sv = b.Get(ch.kind, ch.name, ch.field);
      if (pv) {
        EXPECT_TRUE(sv) << board << ": " << ch.Key() << " lost its value";
      }
      if (ch.kind == Kind::kThermal && !pv) {
        EXPECT_FALSE(sv) << board << ": " << ch.Key() << " should stay absent";
      }
      if (ch.field == Field::kOnline) {
        EXPECT_EQ(sv, pv) << board << ": " << ch.Key();
      }
      if (ch.kind == Kind::kCpu && ch.field == Field::kLoad && ch.name != "cpu") {
        const Channel* online = plain.inventory().Find(Kind::kCpu, ch.name, Field::kOnline);
        ASSERT_NE(online, nullptr);
        EXPECT_EQ(sv.has_value(), pf.Get(online->id) == 1) << board << ": " << ch.Key();
      }
    }
    EXPECT_EQ(b.collection().inventory().channels.size(), plain.inventory().channels.size())
        << board;
  }
}

TEST(SimSidecar, RoundTripsTheModel) {
  SimBoard b("x86-laptop", 5, 12.5);
  ASSERT_TRUE(Ok(b.sim().WriteSidecar(1'700'000'000'123'456'789, 42'000'000'000, 50)));
  EXPECT_EQ(b.sim().SidecarPath(), b.root() + "/.edgemon-sim.json");
  const auto j = nlohmann::json::parse(ReadAll(b.sim().SidecarPath()));
  EXPECT_EQ(j["board"], "x86-laptop");
  EXPECT_EQ(j["start_realtime_ns"].get<int64_t>(), 1'700'000'000'123'456'789);
  EXPECT_EQ(j["start_boottime_ns"].get<int64_t>(), 42'000'000'000);
  EXPECT_EQ(j["period_s"].get<double>(), 12.5);
  const auto& core = j["rails"]["package-0/core"];
  for (const char* key : {"base_mw", "amplitude", "phase", "voltage_mv"}) {
    EXPECT_TRUE(core.contains(key)) << key;
  }
  EXPECT_EQ(j["rails"]["BAT0"]["source"], "power_supply");

  // What a test process in another language does: the formula from the JSON.
  const auto& bat = j["rails"]["BAT0"];
  const double t0 = 3.25, t1 = 17.5, w = 2 * kPi / 12.5;
  const double base = bat["base_mw"], a = bat["amplitude"], ph = bat["phase"];
  const double e = base * ((t1 - t0) - a / w * (std::cos(w * t1 + ph) - std::cos(w * t0 + ph)));
  EXPECT_NEAR(e, b.sim().RailEnergyMj("BAT0", t0, t1), 1e-6);

  auto loaded = LoadSidecar(b.sim().SidecarPath());
  ASSERT_TRUE(Ok(loaded.status()));
  EXPECT_EQ(loaded->start_realtime_ns, 1'700'000'000'123'456'789);
  EXPECT_EQ(loaded->start_boottime_ns, 42'000'000'000);
  EXPECT_EQ(loaded->rate_hz, 50);
  const Model& m = loaded->model;
  ASSERT_EQ(m.rails.size(), b.model().rails.size());
  EXPECT_EQ(m.cpus.size(), b.model().cpus.size());
  EXPECT_EQ(m.temps.size(), b.model().temps.size());
  for (const auto& r : b.model().rails) {
    EXPECT_DOUBLE_EQ(m.RailPowerMw(r.name, 3.3), r.PowerMw(3.3, 12.5)) << r.name;
    EXPECT_DOUBLE_EQ(m.RailEnergyMj(r.name, 1, 9), b.sim().RailEnergyMj(r.name, 1, 9)) << r.name;
    EXPECT_EQ(m.FindRail(r.name)->max_energy_range_uj, r.max_energy_range_uj);
  }
  for (const auto& c : b.model().cpus) {
    EXPECT_DOUBLE_EQ(m.CpuLoad(c.cpu, 2.2), b.model().CpuLoad(c.cpu, 2.2));
  }

  EXPECT_EQ(ParseSidecar("{}").status(), Status::InvalidArgument("not an edgemon-sim sidecar"));
  EXPECT_EQ(ParseSidecar("not json").status(), Status::InvalidArgument("not a JSON object"));
  EXPECT_EQ(ParseSidecar(R"({"format":"edgemon-sim","version":1,"period_s":0,
      "start_realtime_ns":0,"start_boottime_ns":0,"rails":{}})")
                .status(),
            Status::InvalidArgument("period_s must be positive"));
  auto malformed = ParseSidecar(R"({"format":"edgemon-sim","version":1,"period_s":1,
      "start_realtime_ns":0,"start_boottime_ns":0,"rails":{"X":{"base_mw":"a"}}})");
  ASSERT_FALSE(malformed.ok());
  EXPECT_EQ(malformed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(malformed.status().message().starts_with("malformed sidecar: "));
  EXPECT_EQ(LoadSidecar(b.root() + "/absent.json").status().code(), StatusCode::kNotFound);
}

// The real-time loop: steps at the rate, writes the sidecar once the first
// values are there, stops at the duration or when asked.
TEST(SimRun, RunsForItsDurationAndStops) {
  SimBoard b("orin-nano");
  Simulator::RunOptions o;
  o.rate_hz = 100;
  o.duration_s = 0.3;
  bool ready = false;
  o.on_ready = [&] {
    ready = true;
    EXPECT_TRUE(std::filesystem::exists(b.sim().SidecarPath()));
  };
  Simulator::RunStats stats;
  timespec now;
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  const int64_t before = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  ASSERT_TRUE(Ok(b.sim().Run(o, nullptr, &stats)));
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  const int64_t after = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  EXPECT_TRUE(ready);
  // It stepped, and never more often than its rate over its duration; how
  // many of the 30 deadlines a loaded machine meets is not asserted (missed
  // ones are skipped, not bunched).
  EXPECT_GE(stats.ticks, 1u);
  EXPECT_LE(stats.ticks, 32u);
  auto side = LoadSidecar(b.sim().SidecarPath());
  ASSERT_TRUE(Ok(side.status()));
  EXPECT_GE(side->start_boottime_ns, before);
  EXPECT_LE(side->start_boottime_ns, after);
  EXPECT_EQ(side->model.board, "orin-nano");

  volatile std::sig_atomic_t stop = 1;
  Simulator::RunStats none;
  o.duration_s = 0;
  ASSERT_TRUE(Ok(b.sim().Run(o, &stop, &none)));
  EXPECT_EQ(none.ticks, 0u);
  o.rate_hz = 0;
  EXPECT_EQ(b.sim().Run(o, &stop, &none), Status::InvalidArgument("rate_hz must be in (0, 10000]"));
}

TEST(SimSafety, RefusesLiveTreesAndForeignDirectories) {
  EXPECT_EQ(Simulator::Open("/", {}).status(),
            Status::InvalidArgument("refusing to simulate on /: not a scratch tree"));
  EXPECT_FALSE(Simulator::Open(SysPath(""), {}).ok());
  EXPECT_FALSE(Simulator::Open(ProcPath("self"), {}).ok());

  TempTree tree;
  tree.Write("/keep/me", "precious\n");
  EXPECT_FALSE(Simulator::Materialise(Fixture("no-sensors"), tree.root() + "/keep").ok());
  EXPECT_EQ(ReadAll(tree.Real("/keep/me")), "precious\n");
  EXPECT_FALSE(Simulator::Materialise(Fixture("no-sensors"), tree.Real("/keep/me")).ok());
  EXPECT_FALSE(Simulator::Materialise(tree.root() + "/absent", tree.root() + "/out").ok());

  // An earlier simulator output is replaced.
  ASSERT_TRUE(Ok(Simulator::Materialise(Fixture("orin-nano"), tree.root() + "/out")));
  tree.Write("/out/.edgemon-sim.json", "{}\n");
  ASSERT_TRUE(Ok(Simulator::Materialise(Fixture("no-sensors"), tree.root() + "/out")));
  EXPECT_FALSE(std::filesystem::exists(tree.Real("/out/etc")));
  EXPECT_TRUE(std::filesystem::is_directory(tree.Real("/out/proc")));

  // The copy keeps relative symlinks verbatim.
  ASSERT_TRUE(Ok(Simulator::Materialise(Fixture("orin-nano"), tree.root() + "/nano")));
  const std::string link = SysPath("class/hwmon/hwmon1");
  EXPECT_EQ(std::filesystem::read_symlink(tree.Real("/nano" + link)),
            std::filesystem::read_symlink(Fixture("orin-nano") + link));
}

TEST(SimBoards, NoSensorsBoardStillSteps) {
  SimBoard b("no-sensors");
  EXPECT_TRUE(b.model().rails.empty());
  b.At(0);
  b.At(2);
  EXPECT_TRUE(b.Get(Kind::kCpu, "cpu", Field::kLoad));
  EXPECT_EQ(b.sim().write_errors(), 0u);
}

}  // namespace
}  // namespace edgemon::sim
