// edgetop's view model on real fixture boards: the inventory and the values
// come from edgemon's own collectors reading tests/fixtures/<board> (as the
// daemon would serve them), with CPU loads, timestamps and a power history
// set by the test. Checks values in their places, widths, overlaps, and the
// checked-in goldens (EDGETOP_UPDATE_GOLDEN=1 rewrites them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/collect/sysfs.h"
#include "tui/telemetry.h"
#include "tui/view_model.h"

namespace edgemon::tui {
namespace {

constexpr int64_t kBoottimeNs =
    ((2LL * 24 + 3) * 3600 + 4 * 60 + 5) * 1'000'000'000LL;  // 2d 03:04:05
constexpr int64_t kRealtimeNs = 1'790'000'000'000'000'000LL;
constexpr int kFrames = 30;  // 1 s apart

struct Board {
  client::DeviceInfo info;
  Frame last;  // the fixture's values (CPU loads set by the test)
};

// Discovers and samples a fixture board with the daemon's collectors.
Board LoadBoard(const std::string& name) {
  RootedSysFs fs(std::string(EDGEMON_FIXTURES_DIR) + "/" + name);
  CollectOptions options;
  Collection collection(fs, MakeDefaultCollectors(options), options, [](const std::string&) {});
  collection.Discover();
  Frame frame;
  collection.Sample(kBoottimeNs, frame);
  collection.Sample(kBoottimeNs + 1'000'000'000, frame);
  Board b;
  b.info.inventory = collection.inventory();
  b.info.generation = 1;
  b.info.interval_ms = 100;
  b.info.energy_rate_hz = 10;
  b.info.daemon_version = "test";
  // Per-core loads: core i at (i * 83 + 70) % 1000 permille; aggregate 420.
  for (const Channel& c : b.info.inventory.channels) {
    if (c.kind == Kind::kCpu && c.field == Field::kLoad) {
      if (c.name == "cpu") {
        frame.values[c.id] = 420;
      } else {
        int n = std::stoi(c.name.substr(3));
        frame.values[c.id] = (n * 83 + 70) % 1000;
      }
    }
  }
  frame.seq = kFrames;
  frame.boottime_ns = kBoottimeNs;
  frame.realtime_ns = kRealtimeNs;
  b.last = frame;
  return b;
}

// Power of a rail in frame k is the fixture's value times Scale(k): the last
// frame keeps the fixture value exactly; earlier frames are 0.5 to 1.5 times it.
double Scale(int k) {
  if (k == kFrames - 1) return 1.0;
  return 0.5 + (k % 10) / 9.0;
}

client::ProcessList Processes() {
  client::ProcessList list;
  list.realtime_ns = kRealtimeNs;
  list.processes = {
      {101, "root", "edgemond", "/usr/sbin/edgemond --root /", 12, 9000, std::nullopt},
      {2345, "alice", "python3", "python3 train.py --epochs 10", 987, 1'572'864, 524'288},
      {777, "bob", "gst-launch-1.0", "gst-launch-1.0 nvarguscamerasrc ! nvv4l2h264enc", 250,
       204'800, 65'536},
      {42, "root", "systemd", "/sbin/init", 0, 12'000, std::nullopt},
  };
  return list;
}

// Feeds kFrames frames 1 s apart; returns the Telemetry.
Telemetry Feed(const Board& b, bool with_processes = true) {
  Telemetry t;
  t.SetDeviceInfo(b.info);
  std::vector<int64_t> energy(b.info.inventory.channels.size(), 0);
  for (int k = 0; k < kFrames; ++k) {
    Frame f = b.last;
    f.seq = static_cast<uint64_t>(k);
    f.boottime_ns = kBoottimeNs - int64_t{kFrames - 1 - k} * 1'000'000'000;
    f.realtime_ns = kRealtimeNs - int64_t{kFrames - 1 - k} * 1'000'000'000;
    for (const Channel& c : b.info.inventory.channels) {
      if (c.kind != Kind::kRail || c.field != Field::kPower || !b.last.Get(c.id)) continue;
      f.values[c.id] = static_cast<int64_t>(static_cast<double>(*b.last.Get(c.id)) * Scale(k));
    }
    t.AddFrame(f);
  }
  if (with_processes) t.SetProcesses(Processes());
  return t;
}

UiState Ui(int width, int height, Page page = Page::kOverview) {
  UiState ui;
  ui.width = width;
  ui.height = height;
  ui.page = page;
  ui.connection = client::ConnectionState::kConnected;
  ui.target = "unix:/run/edgemon/edgemond.sock";
  return ui;
}

Value ValueOf(const Board& b, Kind k, const std::string& name, Field f) {
  const Channel* c = b.info.inventory.Find(k, name, f);
  return c != nullptr ? b.last.Get(c->id) : std::nullopt;
}

// The line holding `needle` (first match), or "".
std::string LineWith(const std::vector<std::string>& lines, const std::string& needle,
                     int* row = nullptr) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(needle) != std::string::npos) {
      if (row != nullptr) *row = static_cast<int>(i);
      return lines[i];
    }
  }
  return "";
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// Renders and checks the layout invariants every screen must hold.
std::vector<std::string> Render(const Telemetry& t, const UiState& ui) {
  Screen s = BuildScreen(t, ui);
  TextRender r = RenderText(s);
  EXPECT_EQ(r.overlaps, 0) << Joined(r.lines);
  EXPECT_EQ(r.out_of_bounds, 0);
  EXPECT_EQ(static_cast<int>(r.lines.size()), ui.height);
  for (const std::string& line : r.lines) {
    EXPECT_LE(Utf8Width(line), ui.width) << line;
  }
  if (!ui.utf8) {
    for (const std::string& line : r.lines) {
      EXPECT_TRUE(std::all_of(line.begin(), line.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x80;
      })) << line;
    }
  }
  return r.lines;
}

void CheckGolden(const std::string& name, const std::vector<std::string>& lines) {
  const std::string path = std::string(EDGETOP_GOLDEN_DIR) + "/" + name + ".txt";
  const std::string text = Joined(lines);
  const char* update = std::getenv("EDGETOP_UPDATE_GOLDEN");
  if (update != nullptr && *update != '\0' && std::string(update) != "0") {
    std::filesystem::create_directories(EDGETOP_GOLDEN_DIR);
    std::ofstream(path) << text;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path << " is missing: run with EDGETOP_UPDATE_GOLDEN=1";
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(golden.str(), text) << "golden " << path
                                << " differs (EDGETOP_UPDATE_GOLDEN=1 rewrites it)";
}

std::string Watts(Value mw) {
  return FormatWatts(mw ? std::optional<double>(static_cast<double>(*mw)) : std::nullopt);
}

// ------------------------------------------------------------------ tests

TEST(EdgetopFormat, MissingIsADashNeverZero) {
  EXPECT_EQ(FormatWatts(std::nullopt), "-");
  EXPECT_EQ(FormatTempC(std::nullopt, true), "-");
  EXPECT_EQ(FormatMhz(std::nullopt), "-");
  EXPECT_EQ(FormatPercent(std::nullopt), "-");
  EXPECT_EQ(FormatKib(std::nullopt), "-");
  EXPECT_EQ(FormatEnergy(std::nullopt), "-");
  EXPECT_EQ(FormatWatts(2292.0), "2.29");
  EXPECT_EQ(FormatWatts(19317.0), "19.3");
  EXPECT_EQ(FormatTempC(44562, false), "44.6C");
  EXPECT_EQ(FormatTempC(44562, true),
            "44.6\xC2\xB0"
            "C");
  EXPECT_EQ(FormatMhz(1190400), "1190MHz");
  EXPECT_EQ(FormatPercent(301), "30%");
  EXPECT_EQ(FormatKib(4096), "4M");
  EXPECT_EQ(FormatKib(64308216), "61.3G");
  EXPECT_EQ(FormatDuration(kBoottimeNs / 1'000'000'000), "2d 03:04");
  EXPECT_EQ(FormatEnergy(7'200'000.0), "2.00 Wh");
}

TEST(EdgetopView, LockedClocksShowInTheHeaderOnlyWhenEveryCpuIsPinned) {
  Board b = LoadBoard("agx-orin");
  auto header = [&] { return Render(Feed(b), Ui(120, 40))[1]; };
  EXPECT_EQ(header().find("clocks locked"), std::string::npos) << header();
  int pinned = 0;
  for (const Channel& c : b.info.inventory.channels) {
    if (c.kind != Kind::kCpu || c.field != Field::kFreqMin) continue;
    const Channel* max = b.info.inventory.Find(Kind::kCpu, c.name, Field::kFreqMax);
    if (max == nullptr || !b.last.Get(max->id)) continue;
    b.last.values[c.id] = *b.last.Get(max->id);
    ++pinned;
  }
  ASSERT_GT(pinned, 0);
  EXPECT_NE(header().find("nvpmodel MAXN  clocks locked"), std::string::npos) << header();
}

// A stuck fan, an INA alert and a power-mode cap: said in the header on
// every page, on the fan's row, and in the Power page's Diagnostics.
TEST(EdgetopView, EventsAndCapsAreSaid) {
  Board b = LoadBoard("agx-orin");
  const Inventory& inv = b.info.inventory;
  auto header = [&] { return Render(Feed(b), Ui(120, 40))[1]; };
  EXPECT_EQ(header().find("capped"), std::string::npos) << header();
  EXPECT_EQ(header().find("!"), std::string::npos) << header();
  const Channel* stuck = inv.Find(Kind::kEvent, "pwmfan:stuck", Field::kState);
  const Channel* crit = inv.Find(Kind::kEvent, "VDD_GPU_SOC:crit", Field::kState);
  const Channel* crit_n = inv.Find(Kind::kEvent, "VDD_GPU_SOC:crit", Field::kEvents);
  const Channel* cap = inv.Find(Kind::kCpu, "cpu11", Field::kFreqMax);
  ASSERT_TRUE(stuck && crit && crit_n && cap && cap->max);
  b.last.values[stuck->id] = 1;
  b.last.values[crit->id] = 1;
  b.last.values[crit_n->id] = 3;
  b.last.values[cap->id] = *cap->max / 2;
  EXPECT_NE(header().find("capped  ! pwmfan:stuck  ! VDD_GPU_SOC:crit"), std::string::npos)
      << header();
  EXPECT_NE(LineWith(Render(Feed(b), Ui(120, 40)), "Fan pwmfan").find("STUCK"), std::string::npos);
  auto lines = Render(Feed(b), Ui(120, 40, Page::kPower));
  // (the header names them too: "  ! <name>")
  EXPECT_NE(LineWith(lines, "  VDD_GPU_SOC:crit ").find("3 events ALERT"), std::string::npos);
  EXPECT_NE(LineWith(lines, "  pwmfan:stuck ").find("STUCK (PWM on, 0 rpm)"), std::string::npos);
  EXPECT_NE(LineWith(lines, "capped by the power mode").find("cpu11"), std::string::npos);
}

TEST(EdgetopView, OrinOverviewShowsTheFixtureValuesInPlace) {
  Board b = LoadBoard("agx-orin");
  Telemetry t = Feed(b);
  for (auto [w, h] : {std::pair{80, 24}, std::pair{120, 40}}) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    auto lines = Render(t, Ui(w, h));
    const BoardInfo& board = b.info.inventory.board;
    // Header: identity, software, mode, uptime, daemon rate, connection.
    EXPECT_NE(lines[0].find(board.hostname), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find("connected"), std::string::npos);
    EXPECT_NE(lines[1].find("L4T " + board.l4t), std::string::npos) << lines[1];
    EXPECT_NE(lines[1].find("JetPack " + board.jetpack), std::string::npos);
    EXPECT_NE(lines[1].find("nvpmodel " + board.nvpmodel), std::string::npos);
    EXPECT_NE(lines[1].find("up 2d 03:04"), std::string::npos);
    EXPECT_NE(lines[1].find("daemon 100 ms/10 Hz"), std::string::npos);
    if (w >= 120) {
      EXPECT_NE(lines[0].find(board.model), std::string::npos) << lines[0];
    }

    // CPU cells: label, the load the test set, the fixture's frequency.
    for (int n : {0, 5, 11}) {
      std::string label = "CPU" + std::to_string(n) + " ";
      std::string line = LineWith(lines, label);
      ASSERT_FALSE(line.empty()) << label << "\n" << Joined(lines);
      std::string cell = line.substr(line.find(label));
      Value freq = ValueOf(b, Kind::kCpu, "cpu" + std::to_string(n), Field::kFreq);
      std::istringstream in(cell.substr(cell.find(']') + 1));
      std::string pct, mhz;
      in >> pct >> mhz;
      EXPECT_EQ(pct, FormatPercent((n * 83 + 70) % 1000)) << cell;
      EXPECT_EQ(mhz, FormatMhz(freq)) << cell;
    }
    // GPU and EMC.
    std::string gpu = LineWith(lines, "GPU   [");
    EXPECT_NE(gpu.find(FormatMhz(ValueOf(b, Kind::kGpu, "gpu", Field::kFreq))), std::string::npos);
    std::string emc = LineWith(lines, "EMC ");
    std::string emc_cell = emc.substr(emc.find("EMC "));
    std::istringstream emc_in(emc_cell.substr(emc_cell.find(']') + 1));
    std::string emc_pct, emc_mhz;
    emc_in >> emc_pct >> emc_mhz;
    EXPECT_EQ(emc_pct, FormatPercent(ValueOf(b, Kind::kEmc, "emc", Field::kLoad))) << emc;
    EXPECT_EQ(emc_mhz, FormatMhz(ValueOf(b, Kind::kEmc, "emc", Field::kFreq))) << emc;
    // RAM with lfb, swap.
    std::string ram = LineWith(lines, "RAM ");
    EXPECT_NE(ram.find(FormatKib(ValueOf(b, Kind::kMemory, "ram", Field::kUsed)) + "/" +
                       FormatKib(ValueOf(b, Kind::kMemory, "ram", Field::kTotal))),
              std::string::npos)
        << ram;
    EXPECT_NE(
        ram.find("lfb " + std::to_string(*ValueOf(b, Kind::kMemory, "ram", Field::kLfbBlocks)) +
                 "x" + FormatKib(ValueOf(b, Kind::kMemory, "ram", Field::kLfbSize))),
        std::string::npos)
        << ram;
    EXPECT_NE(ram.find("Swap "), std::string::npos);

    // Rails: now = the fixture value; avg and peak over the fed frames.
    int rails_seen = 0;
    for (const Channel& c : b.info.inventory.channels) {
      if (c.kind != Kind::kRail || c.field != Field::kPower) continue;
      std::string line = LineWith(lines, c.name + " ");
      ASSERT_FALSE(line.empty()) << c.name << "\n" << Joined(lines);
      double p = static_cast<double>(*b.last.Get(c.id));
      double sum = 0;
      double peak = 0;
      for (int k = 0; k < kFrames; ++k) {
        double v = static_cast<double>(static_cast<int64_t>(p * Scale(k)));
        sum += v;
        peak = std::max(peak, v);
      }
      std::string cells = line.substr(line.find(c.name) + c.name.size());
      std::istringstream in(cells);
      std::string now, avg, pk;
      in >> now >> avg >> pk;
      EXPECT_EQ(now, FormatWatts(p)) << line;
      EXPECT_EQ(avg, FormatWatts(sum / kFrames)) << line;
      EXPECT_EQ(pk, FormatWatts(peak)) << line;
      ++rails_seen;
    }
    EXPECT_EQ(rails_seen, 4);
    // No VDD_IN on the AGX Orin's monitors: the total is the sum of the
    // top-level rails, and says so.
    double total = 0;
    for (const char* r : {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"}) {
      total += static_cast<double>(*ValueOf(b, Kind::kRail, r, Field::kPower));
    }
    std::string tot = LineWith(lines, "Total ");
    EXPECT_NE(tot.find("Total " + FormatWatts(total) + " W (sum of 4 rails)"), std::string::npos)
        << tot;
    EXPECT_NE(LineWith(lines, "Energy ").find("J"), std::string::npos);

    // Temperatures: present ones with their value, gated ones as "-".
    std::string cpu_t = LineWith(lines, "CPU-therm");
    EXPECT_NE(cpu_t.find(FormatTempC(ValueOf(b, Kind::kThermal, "CPU-therm", Field::kTemp), true)),
              std::string::npos)
        << cpu_t;
    std::string gpu_t = LineWith(lines, "GPU-therm");
    ASSERT_FALSE(gpu_t.empty());
    std::string after = gpu_t.substr(gpu_t.find("GPU-therm") + 9);
    EXPECT_EQ(after.substr(after.find_first_not_of(' '), 1), "-") << gpu_t;
    // Fan duty and speed; engines.
    std::string fan = LineWith(lines, "Fan ");
    EXPECT_NE(fan.find(FormatPercent(ValueOf(b, Kind::kFan, "pwmfan", Field::kDuty)) + " " +
                       std::to_string(*ValueOf(b, Kind::kFan, "pwmfan", Field::kSpeed)) + " rpm"),
              std::string::npos)
        << fan;
    std::string eng = Joined(lines);
    EXPECT_NE(eng.find("VIC " + FormatMhz(ValueOf(b, Kind::kEngine, "VIC", Field::kFreq))),
              std::string::npos);
    EXPECT_NE(eng.find("NVENC off"), std::string::npos);
  }
}

TEST(EdgetopView, GoldensAtBothSizesOnEveryPage) {
  for (const char* board : {"agx-orin", "x86-laptop"}) {
    Board b = LoadBoard(board);
    Telemetry t = Feed(b);
    for (auto [w, h] : {std::pair{80, 24}, std::pair{120, 40}}) {
      for (Page p : {Page::kOverview, Page::kProcesses, Page::kPower}) {
        std::string name = std::string(board) + "-" + std::to_string(w) + "x" + std::to_string(h) +
                           "-" + std::to_string(static_cast<int>(p) + 1);
        SCOPED_TRACE(name);
        CheckGolden(name, Render(t, Ui(w, h, p)));
      }
    }
    UiState ascii = Ui(80, 24);
    ascii.utf8 = false;
    CheckGolden(std::string(board) + "-80x24-ascii", Render(t, ascii));
  }
}

TEST(EdgetopView, EveryFixtureBoardFitsWithoutOverlapAtAnySize) {
  for (const char* board : {"agx-orin", "orin-nano", "agx-orin-r39", "agx-thor-r38", "xavier-nx",
                            "tx2", "jetson-nano", "x86-laptop", "no-sensors"}) {
    Board b = LoadBoard(board);
    Telemetry t = Feed(b);
    for (auto [w, h] :
         {std::pair{80, 24}, std::pair{81, 25}, std::pair{100, 30}, std::pair{120, 40},
          std::pair{200, 60}, std::pair{79, 24}, std::pair{40, 10}}) {
      for (Page p : {Page::kOverview, Page::kProcesses, Page::kPower}) {
        for (bool utf8 : {true, false}) {
          SCOPED_TRACE(std::string(board) + " " + std::to_string(w) + "x" + std::to_string(h));
          UiState ui = Ui(w, h, p);
          ui.utf8 = utf8;
          auto lines = Render(t, ui);
          if (w >= kMinWidth && h >= kMinHeight) {
            EXPECT_NE(lines[0].find(b.info.inventory.board.hostname), std::string::npos);
          } else {
            EXPECT_NE(lines[0].find("needs 80x24"), std::string::npos);
          }
        }
      }
      UiState help = Ui(w, h);
      help.help = true;
      Render(t, help);
    }
  }
}

TEST(EdgetopView, X86UsesTheInputRailAndShowsAbsentValuesAsDashes) {
  Board b = LoadBoard("x86-laptop");
  Telemetry t = Feed(b);
  auto lines = Render(t, Ui(120, 40, Page::kPower));
  // psys is the input rail: the total names it; package-0 is its sub-rail,
  // indented under it; its power is absent in a one-shot sample: "-".
  std::string tot = LineWith(lines, "Total ");
  EXPECT_NE(tot.find("(psys)"), std::string::npos) << tot;
  int psys_row = -1;
  int pkg_row = -1;
  std::string psys = LineWith(lines, " psys ", &psys_row);
  std::string pkg = LineWith(lines, "  package-0 ", &pkg_row);
  ASSERT_FALSE(pkg.empty()) << Joined(lines);
  EXPECT_GT(pkg_row, psys_row);
  EXPECT_EQ(pkg.find("package-0") - psys.find("psys"), 2u) << psys << "\n" << pkg;
  EXPECT_NE(psys.find(" - "), std::string::npos) << psys;
  // BAT0 has a power reading: V, A, now.
  std::string bat = LineWith(lines, "BAT0");
  Value mv = ValueOf(b, Kind::kRail, "BAT0", Field::kVoltage);
  char volts[16];
  std::snprintf(volts, sizeof(volts), "%.2f", static_cast<double>(*mv) / 1000.0);
  EXPECT_NE(bat.find(volts), std::string::npos) << bat;
  EXPECT_NE(bat.find(Watts(ValueOf(b, Kind::kRail, "BAT0", Field::kPower))), std::string::npos);
  EXPECT_NE(tot.find("Total " + Watts(ValueOf(b, Kind::kRail, "psys", Field::kPower)) + " W"),
            std::string::npos)
      << tot;
  // RAPL sub-rails named "package-0/core" show as "core" under package-0.
  int core_row = -1;
  std::string core = LineWith(lines, "     core ", &core_row);
  EXPECT_EQ(core_row, pkg_row + 1) << Joined(lines);
  // hwmon zones show their label when it is unique.
  EXPECT_FALSE(LineWith(lines, " Core 0 ").empty());
  EXPECT_FALSE(LineWith(lines, "thinkpad/temp1").empty());
  // No Jetson lines: no L4T, no GPU meter, no engines.
  auto ov = Render(t, Ui(80, 24));
  EXPECT_EQ(ov[1].find("L4T"), std::string::npos);
  EXPECT_NE(ov[1].find("Linux " + b.info.inventory.board.kernel), std::string::npos) << ov[1];
  EXPECT_TRUE(LineWith(ov, "GPU   [").empty());
  EXPECT_TRUE(LineWith(ov, "Engines").empty());
}

// An engine with a load (NVML's codecs) shows it with its clock.
TEST(EdgetopView, EngineLoadShowsWithItsClock) {
  Board b = LoadBoard("agx-orin");
  const Channel* state = b.info.inventory.Find(Kind::kEngine, "NVENC", Field::kState);
  ASSERT_NE(state, nullptr);
  b.last.values[state->id] = 1;
  Channel load;
  load.id = static_cast<ChannelId>(b.info.inventory.channels.size());
  load.kind = Kind::kEngine;
  load.name = "NVENC";
  load.field = Field::kLoad;
  load.unit = Unit::kPermille;
  b.info.inventory.channels.push_back(load);
  b.last.values.push_back(120);
  const std::string eng = Joined(Render(Feed(b), Ui(120, 40)));
  EXPECT_NE(eng.find("NVENC 12%@" + FormatMhz(ValueOf(b, Kind::kEngine, "NVENC", Field::kFreq))),
            std::string::npos)
      << eng;
}

TEST(EdgetopView, OfflineCoreShowsOffAndHotZoneIsColouredByItsTrips) {
  Board b = LoadBoard("agx-orin");
  const Channel* online = b.info.inventory.Find(Kind::kCpu, "cpu7", Field::kOnline);
  const Channel* temp = b.info.inventory.Find(Kind::kThermal, "CPU-therm", Field::kTemp);
  const Channel* tj = b.info.inventory.Find(Kind::kThermal, "tj-therm", Field::kTemp);
  ASSERT_NE(online, nullptr);
  ASSERT_NE(temp, nullptr);
  // The passive trip from the fixture's trip points.
  int64_t passive = 0;
  int64_t critical = 0;
  for (const TripPoint& tp : temp->trips) {
    if (tp.type == "passive") passive = tp.temp_mc;
    if (tp.type == "critical") critical = tp.temp_mc;
  }
  ASSERT_GT(passive, 0);
  ASSERT_GT(critical, passive);
  b.last.values[online->id] = 0;
  b.last.values[temp->id] = passive + 500;
  b.last.values[tj->id] = critical + 1000;
  Telemetry t = Feed(b);
  Screen s = BuildScreen(t, Ui(80, 24));
  auto lines = RenderText(s).lines;
  std::string cpu7 = LineWith(lines, "CPU7 ");
  std::string cell = cpu7.substr(cpu7.find("CPU7 "));
  EXPECT_NE(cell.find("off"), std::string::npos) << cell;
  auto role_of = [&](const std::string& text) {
    for (const Span& sp : s.spans) {
      if (sp.text.find(text) != std::string::npos) return sp.role;
    }
    return Role::kText;
  };
  EXPECT_EQ(role_of(FormatTempC(passive + 500, true)), Role::kHot);
  EXPECT_EQ(role_of(FormatTempC(critical + 1000, true)), Role::kCrit);
  EXPECT_EQ(role_of(FormatTempC(ValueOf(b, Kind::kThermal, "SOC0-therm", Field::kTemp), true)),
            Role::kGood);
}

TEST(EdgetopView, DisconnectedIsSaidAndLastValuesStay) {
  Board b = LoadBoard("agx-orin");
  Telemetry t = Feed(b);
  UiState ui = Ui(80, 24);
  ui.connection = client::ConnectionState::kDisconnected;
  ui.connection_message = "failed to connect to all addresses";
  auto lines = Render(t, ui);
  EXPECT_NE(lines[0].find("DISCONNECTED"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("unreachable: failed to connect"), std::string::npos) << lines[1];
  EXPECT_NE(LineWith(lines, "VDD_GPU_SOC")
                .find(Watts(ValueOf(b, Kind::kRail, "VDD_GPU_SOC", Field::kPower))),
            std::string::npos);
  // Never connected: no data yet, no zeros.
  Telemetry empty;
  ui.connection = client::ConnectionState::kConnecting;
  auto none = Render(empty, ui);
  EXPECT_NE(LineWith(none, "no data yet").find(ui.target), std::string::npos);
}

// The reason for a lost daemon is shown whole, wrapped under the header,
// however long (what to do next is at its end); the screen moves down.
TEST(EdgetopView, DisconnectedReasonIsShownWhole) {
  Board b = LoadBoard("agx-orin");
  Telemetry t = Feed(b);
  UiState ui = Ui(80, 24);
  ui.connection = client::ConnectionState::kDisconnected;
  ui.connection_message =
      "permission denied: only members of the `edgemon` group may connect: join it (`sudo "
      "usermod -aG edgemon $USER`), then log out and in again";
  auto lines = Render(t, ui);
  std::string text;
  for (int i = 1; i < 5; ++i) text += lines[static_cast<size_t>(i)] + " ";
  auto squeeze = [](std::string s) {
    std::string out;
    for (char c : s) {
      if (c != ' ') out += c;
    }
    return out;
  };
  EXPECT_NE(squeeze(text).find(squeeze("daemon at " + ui.target +
                                       " unreachable: " + ui.connection_message + "; retrying")),
            std::string::npos)
      << Joined(lines);
  EXPECT_EQ(lines[2].find("1 Overview"), std::string::npos) << Joined(lines);  // moved down
  EXPECT_NE(LineWith(lines, "1 Overview"), "");
  EXPECT_NE(LineWith(lines, "VDD_GPU_SOC"), "");
}

TEST(EdgetopView, MissingRailValueIsADash) {
  Board b = LoadBoard("agx-orin");
  const Channel* cv = b.info.inventory.Find(Kind::kRail, "VDD_CPU_CV", Field::kPower);
  b.last.values[cv->id].reset();
  Telemetry t;
  t.SetDeviceInfo(b.info);
  t.AddFrame(b.last);
  auto lines = Render(t, Ui(80, 24));
  std::string line = LineWith(lines, "VDD_CPU_CV");
  std::istringstream in(line.substr(line.find("VDD_CPU_CV") + 10));
  std::string now, avg, peak;
  in >> now >> avg >> peak;
  EXPECT_EQ(now, "-");
  EXPECT_EQ(avg, "-");
  EXPECT_EQ(peak, "-");
  EXPECT_NE(LineWith(lines, "Total ").find("Total - W"), std::string::npos);
}

TEST(EdgetopView, EnergyFromCountersOrIntegratedPower) {
  Board b = LoadBoard("agx-orin");
  Telemetry t;
  t.SetDeviceInfo(b.info);
  // 10 frames 1 s apart at constant power: the energy is P x 9 s, from the
  // counters when they move, else from the power.
  double p_total = 0;
  for (const char* r : {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"}) {
    p_total += static_cast<double>(*ValueOf(b, Kind::kRail, r, Field::kPower));
  }
  for (int k = 0; k < 10; ++k) {
    Frame f = b.last;
    f.realtime_ns = kRealtimeNs + int64_t{k} * 1'000'000'000;
    for (const Channel& c : b.info.inventory.channels) {
      if (c.kind == Kind::kRail && c.field == Field::kEnergy) f.values[c.id].reset();
    }
    t.AddFrame(f);
  }
  ASSERT_TRUE(t.energy_mj().has_value());
  EXPECT_NEAR(*t.energy_mj(), p_total * 9, 1e-6);
  EXPECT_EQ(t.total().Label(), "sum of 4 rails");
  EXPECT_EQ(t.history().size(), 10u);

  // Moving counters win over the power: 3 frames, counters +1000 mJ each.
  Telemetry c;
  c.SetDeviceInfo(b.info);
  for (int k = 0; k < 3; ++k) {
    Frame f = b.last;
    f.realtime_ns = kRealtimeNs + int64_t{k} * 1'000'000'000;
    for (const Channel& ch : b.info.inventory.channels) {
      if (ch.kind == Kind::kRail && ch.field == Field::kEnergy) f.values[ch.id] = 5000 + 1000 * k;
    }
    c.AddFrame(f);
  }
  EXPECT_NEAR(*c.energy_mj(), 4 * 2 * 1000.0, 1e-6);
  auto lines = Render(c, Ui(80, 24));
  EXPECT_NE(LineWith(lines, "Energy ").find("Energy " + FormatEnergy(8000.0)), std::string::npos);
}

TEST(EdgetopView, ProcessesSortByKeyAndShowGpuMemoryWhereReported) {
  Board b = LoadBoard("agx-orin");
  Telemetry t = Feed(b);
  UiState ui = Ui(80, 24, Page::kProcesses);
  auto first_pid = [&]() {
    auto lines = Render(t, ui);
    int row = -1;
    LineWith(lines, "COMMAND", &row);
    std::istringstream in(lines[static_cast<size_t>(row + 1)]);
    int pid = 0;
    in >> pid;
    return pid;
  };
  EXPECT_EQ(first_pid(), 2345);  // highest CPU
  EXPECT_EQ(HandleKey('m', ui), Command::kSortChanged);
  EXPECT_EQ(first_pid(), 2345);  // largest RSS
  HandleKey('n', ui);
  EXPECT_EQ(first_pid(), 42);  // lowest pid first
  HandleKey('n', ui);
  EXPECT_EQ(first_pid(), 2345);  // reversed
  HandleKey('u', ui);
  EXPECT_EQ(first_pid(), 2345);  // alice
  HandleKey('g', ui);
  auto lines = Render(t, ui);
  EXPECT_NE(lines[3].find("GPU"), std::string::npos) << lines[3];
  std::string gst = LineWith(lines, "gst-launch");
  EXPECT_NE(gst.find(FormatKib(65'536)), std::string::npos) << gst;
  std::string init = LineWith(lines, "/sbin/init");
  EXPECT_NE(init.find(" - "), std::string::npos) << init;  // no GPU memory reported
}

TEST(EdgetopView, ProcessesPageSaysWhyGpuMemoryOrTheListIsMissing) {
  Board b = LoadBoard("agx-orin");
  Telemetry t = Feed(b, /*with_processes=*/false);
  UiState ui = Ui(80, 24, Page::kProcesses);
  t.SetProcessesError("UNAVAILABLE: connection refused");
  auto lines = Render(t, ui);
  EXPECT_NE(LineWith(lines, "process list unavailable: UNAVAILABLE: connection refused"), "")
      << Joined(lines);

  client::ProcessList list = Processes();
  for (auto& p : list.processes) p.gpu_mem_kib.reset();
  list.gpu_mem_unavailable = "cannot read /sys/kernel/debug/nvmap/iovmm/maps";
  t.SetProcesses(list);
  lines = Render(t, ui);
  EXPECT_EQ(LineWith(lines, "process list unavailable"), "");
  EXPECT_NE(LineWith(lines, "GPU memory unavailable: cannot read /sys/kernel/debug/nvmap"), "")
      << Joined(lines);
  int row = -1;
  LineWith(lines, "COMMAND", &row);
  EXPECT_NE(lines[static_cast<size_t>(row)].find("GPU"), std::string::npos);  // the column stays
  std::string init = LineWith(lines, "/sbin/init");
  EXPECT_NE(init.find(" - "), std::string::npos) << init;  // a dash, never 0

  // The Overview shows no such line: the GPU column's dashes say it quietly.
  lines = Render(t, Ui(120, 50));
  EXPECT_EQ(LineWith(lines, "GPU memory unavailable"), "") << Joined(lines);
  row = -1;
  LineWith(lines, "COMMAND", &row);
  ASSERT_GE(row, 0) << Joined(lines);
  EXPECT_NE(lines[static_cast<size_t>(row)].find("GPU"), std::string::npos);

  // A process seen for the first time has no CPU share yet: a dash, never 0.0.
  list = Processes();
  list.processes[1].cpu_permille.reset();
  t.SetProcesses(list);
  lines = Render(t, ui);
  std::string py = LineWith(lines, "train.py");
  EXPECT_EQ(py.find("98.7"), std::string::npos) << py;
  EXPECT_EQ(py.find(" 0.0 "), std::string::npos) << py;
  EXPECT_NE(py.find(" - "), std::string::npos) << py;

  // A resident set the daemon could not read: a dash too, never 0.
  list = Processes();
  list.processes[1].rss_kib.reset();
  t.SetProcesses(list);
  lines = Render(t, ui);
  py = LineWith(lines, "train.py");
  EXPECT_EQ(py.find("1.5G"), std::string::npos) << py;
  EXPECT_NE(py.find(" - "), std::string::npos) << py;
}

TEST(EdgetopView, PowerPageSaysWhenTheBoardHasNoRails) {
  Board b = LoadBoard("no-sensors");
  Telemetry t = Feed(b);
  auto lines = Render(t, Ui(80, 24, Page::kPower));
  EXPECT_NE(LineWith(lines, "No power rails on this board"), "") << Joined(lines);
  Board orin = LoadBoard("agx-orin");
  Telemetry o = Feed(orin);
  EXPECT_EQ(LineWith(Render(o, Ui(80, 24, Page::kPower)), "No power rails"), "");
}

TEST(EdgetopView, ZoneNamesUseTheWidthThereIs) {
  Board b = LoadBoard("x86-laptop");
  Telemetry t = Feed(b);
  auto lines = Render(t, Ui(120, 40));
  for (const char* zone : {"x86_pkg_temp", "thinkpad/temp1", "Package id 0", "acpitz/temp1"}) {
    EXPECT_NE(LineWith(lines, std::string(zone) + " "), "") << zone << "\n" << Joined(lines);
  }
  lines = Render(t, Ui(120, 40, Page::kPower));
  EXPECT_NE(LineWith(lines, "thinkpad/temp1 "), "") << Joined(lines);
}

TEST(EdgetopKeys, PagesHelpPauseIntervalQuit) {
  UiState ui;
  EXPECT_EQ(HandleKey('2', ui), Command::kRedraw);
  EXPECT_EQ(ui.page, Page::kProcesses);
  HandleKey(kKeyTab, ui);
  EXPECT_EQ(ui.page, Page::kPower);
  HandleKey(kKeyTab, ui);
  EXPECT_EQ(ui.page, Page::kOverview);
  HandleKey(kKeyBackTab, ui);
  EXPECT_EQ(ui.page, Page::kPower);
  HandleKey('h', ui);
  EXPECT_TRUE(ui.help);
  HandleKey('x', ui);
  EXPECT_FALSE(ui.help);
  HandleKey(' ', ui);
  EXPECT_TRUE(ui.paused);
  HandleKey('p', ui);
  EXPECT_FALSE(ui.paused);
  ui.interval_ms = 1000;
  EXPECT_EQ(HandleKey('+', ui), Command::kIntervalChanged);
  EXPECT_EQ(ui.interval_ms, 2000u);
  HandleKey('-', ui);
  HandleKey('-', ui);
  EXPECT_EQ(ui.interval_ms, 500u);
  for (int i = 0; i < 10; ++i) HandleKey('-', ui);
  EXPECT_EQ(ui.interval_ms, kIntervalsMs[0]);
  EXPECT_EQ(HandleKey('q', ui), Command::kQuit);
  EXPECT_EQ(HandleKey('Z', ui), Command::kNone);
}

TEST(EdgetopView, PausedAndHelpAreShown) {
  Board b = LoadBoard("agx-orin");
  Telemetry t = Feed(b);
  UiState ui = Ui(80, 24);
  ui.paused = true;
  auto lines = Render(t, ui);
  EXPECT_NE(lines[2].find("PAUSED"), std::string::npos) << lines[2];
  ui.help = true;
  lines = Render(t, ui);
  EXPECT_FALSE(LineWith(lines, "edgetop keys").empty());
  EXPECT_FALSE(LineWith(lines, "sort processes by CPU").empty());
}

}  // namespace
}  // namespace edgemon::tui
