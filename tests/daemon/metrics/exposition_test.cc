// The Prometheus exposition: names, base-unit values derived from the
// inputs, escaping, absent values, both formats, content negotiation, and
// (when Debian's promtool is installed) promtool's own validation.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "daemon/metrics/exposition.h"
#include "tests/support/inventory.h"
#include "tests/support/orin_inventory.h"

namespace edgemon::metrics {
namespace {

// One sample line of an exposition, parsed independently of the renderer.
struct Line {
  std::string name;
  std::map<std::string, std::string> labels;  // unescaped
  std::string value;
};

// Parses the sample lines (comments skipped); fails the test on a line it
// cannot read.
std::vector<Line> Parse(const std::string& text) {
  std::vector<Line> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    EXPECT_NE(end, std::string::npos) << "the exposition must end with a newline";
    if (end == std::string::npos) break;
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    Line l;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') l.name += line[i++];
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::string key;
        while (i < line.size() && line[i] != '=') key += line[i++];
        EXPECT_EQ(line.substr(i, 2), "=\"") << line;
        i += 2;
        std::string val;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) {
            char e = line[i + 1];
            val += e == 'n' ? '\n' : e;
            i += 2;
          } else {
            val += line[i++];
          }
        }
        ++i;  // closing quote
        l.labels[key] = val;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    EXPECT_EQ(i < line.size() ? line[i] : '\0', ' ') << line;
    l.value = line.substr(i + 1);
    out.push_back(std::move(l));
  }
  return out;
}

const Line* Find(const std::vector<Line>& lines, const std::string& name, const std::string& label,
                 const std::string& value) {
  for (const auto& l : lines) {
    auto it = l.labels.find(label);
    if (l.name == name && it != l.labels.end() && it->second == value) return &l;
  }
  return nullptr;
}

struct Board {
  Inventory inv;
  Frame frame;
  ChannelId Add(Kind k, std::string name, Field f, std::optional<int64_t> v, uint32_t flags = 0,
                std::string device = "") {
    Channel& c = testing::AddChannel(inv, k, std::move(name), f);
    c.unit = UnitOf(f);
    c.flags = flags;
    c.device = std::move(device);
    frame.values.push_back(v);
    return c.id;
  }
};

// A small Jetson-like board: values chosen so each conversion is visible.
Board Fixture() {
  Board b;
  b.inv.board.model = "NVIDIA Jetson AGX Orin Developer Kit";
  b.inv.board.soc = "tegra234";
  b.inv.board.l4t = "36.4.3";
  b.inv.board.jetpack = "6";
  b.inv.board.nvpmodel = "MAXN";
  b.inv.board.nvpmodel_modes = {{0, "MAXN"}, {3, "50W"}};
  b.Add(Kind::kRail, "VDD_IN", Field::kPower, 5123, kFlagInputRail, "ina3221 1-0040");
  b.Add(Kind::kRail, "VDD_IN", Field::kVoltage, 19008, kFlagInputRail, "ina3221 1-0040");
  b.Add(Kind::kRail, "VDD_IN", Field::kCurrent, 269, kFlagInputRail, "ina3221 1-0040");
  b.Add(Kind::kRail, "VDD_IN", Field::kEnergy, 123'456'789, kFlagInputRail | kFlagCounter,
        "ina3221 1-0040");
  b.Add(Kind::kRail, "VDD_GPU_SOC", Field::kPower, 2292, 0, "ina3221 1-0040");
  b.inv.channels.back().parent = "VDD_IN";
  b.Add(Kind::kRail, "VDD_CPU_CV", Field::kPower, std::nullopt, 0, "ina3221 1-0040");
  b.Add(Kind::kThermal, "cpu-thermal", Field::kTemp, 45'500, 0, "thermal_zone0");
  b.Add(Kind::kThermal, "gpu-thermal", Field::kTemp, -1'250, 0, "thermal_zone1");
  b.Add(Kind::kThermal, "PMIC-Die", Field::kTemp, 100'000, kFlagConstant, "thermal_zone9");
  b.Add(Kind::kCpu, "cpu", Field::kLoad, 253, 0, "proc/stat");
  b.Add(Kind::kCpu, "cpu0", Field::kFreq, 1'190'400, 0, "cpu0");
  b.Add(Kind::kCpu, "cpu0", Field::kOnline, 1, 0, "cpu0");
  b.Add(Kind::kGpu, "gpu", Field::kFreq, 306'000, 0, "devfreq 17000000.gpu");
  b.Add(Kind::kEmc, "emc", Field::kLoad, 28, 0, "bpmp clk emc");
  b.Add(Kind::kMemory, "ram", Field::kUsed, 4'634'860, 0, "proc/meminfo");
  b.Add(Kind::kFan, "pwmfan", Field::kDuty, 301, 0, "hwmon pwmfan");
  b.Add(Kind::kFan, "pwmfan", Field::kSpeed, 1478, 0, "hwmon pwm_tach");
  b.Add(Kind::kEngine, "NVENC", Field::kState, 0, 0, "clk nvenc");
  b.Add(Kind::kEngine, "VIC", Field::kFreq, 729'600, 0, "clk vic");
  b.Add(Kind::kBoard, "nvpmodel", Field::kMode, 3, 0, "nvpmodel");
  b.Add(Kind::kDevfreq, "15340000.vic", Field::kFreq, std::nullopt, 0, "devfreq 15340000.vic");
  b.frame.realtime_ns = 1'700'000'000'123'456'789;
  return b;
}

Health SomeHealth(const Board& b, std::vector<uint64_t>& errors) {
  Health h;
  h.version = "0.1.0";
  h.frames = 42;
  h.energy_samples = 4200;
  h.deadline_misses = 0;
  h.frame_period_ns = 1'000'000'000;
  h.energy_period_ns = 10'000'000;
  errors.assign(b.inv.channels.size(), 0);
  errors[5] = 7;  // VDD_CPU_CV/power failed 7 times
  h.read_errors = errors;
  h.store = StoreHealth{.bytes = 5 << 20, .max_bytes = 512 << 20, .frames = 42};
  return h;
}

double Num(const Line* l) {
  return l ? std::stod(l->value) : -1e300;
}

TEST(ExpositionTest, ControlHelperCountsOnlyWhenItsStateIsKnown) {
  Board b = Fixture();
  std::vector<uint64_t> errors;
  Health h = SomeHealth(b, errors);
  auto value = [](const std::vector<Line>& lines, const std::string& name) -> const Line* {
    for (const auto& l : lines) {
      if (l.name == name) return &l;
    }
    return nullptr;
  };
  auto without = Parse(RenderExposition(b.inv, &b.frame, h, Format::kPrometheus));
  EXPECT_FALSE(value(without, "edgemon_control_changes_total"));  // absent, never 0
  EXPECT_FALSE(value(without, "edgemon_control_leases"));
  h.control = ControlHealth{.changes = 7, .leases = 2};
  auto with = Parse(RenderExposition(b.inv, &b.frame, h, Format::kPrometheus));
  EXPECT_EQ(Num(value(with, "edgemon_control_changes_total")), 7);
  EXPECT_EQ(Num(value(with, "edgemon_control_leases")), 2);
}

TEST(ExpositionTest, ValuesInBaseUnitsDerivedFromTheInputs) {
  Board b = Fixture();
  std::vector<uint64_t> errors;
  auto lines = Parse(RenderExposition(b.inv, &b.frame, SomeHealth(b, errors), Format::kPrometheus));

  const Line* p = Find(lines, "edgemon_rail_power_watts", "rail", "VDD_IN");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->value, "5.123");  // 5123 mW, exact decimal
  EXPECT_EQ(p->labels.at("device"), "ina3221 1-0040");
  EXPECT_EQ(p->labels.at("input"), "true");
  EXPECT_EQ(Find(lines, "edgemon_rail_power_watts", "rail", "VDD_GPU_SOC")->labels.at("input"),
            "false");
  // The parent label: the sub-rail names its input rail; a top-level rail
  // carries parent="" (what {parent=""} selects in the README's PromQL).
  EXPECT_EQ(Find(lines, "edgemon_rail_power_watts", "rail", "VDD_GPU_SOC")->labels.at("parent"),
            "VDD_IN");
  EXPECT_EQ(p->labels.at("parent"), "");
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_rail_voltage_volts", "rail", "VDD_IN")), 19008 / 1e3);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_rail_current_amperes", "rail", "VDD_IN")), 269 / 1e3);
  EXPECT_EQ(Find(lines, "edgemon_rail_energy_joules_total", "rail", "VDD_IN")->value, "123456.789");
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_temperature_celsius", "zone", "cpu-thermal")), 45.5);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_temperature_celsius", "zone", "gpu-thermal")), -1.25);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_cpu_load_ratio", "cpu", "cpu")), 0.253);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_cpu_frequency_hertz", "cpu", "cpu0")), 1'190'400e3);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_cpu_online", "cpu", "cpu0")), 1);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_gpu_frequency_hertz", "gpu", "gpu")), 306e6);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_emc_load_ratio", "emc", "emc")), 0.028);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_memory_used_bytes", "memory", "ram")),
                   4'634'860.0 * 1024);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_fan_duty_ratio", "fan", "pwmfan")), 0.301);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_fan_speed_rpm", "fan", "pwmfan")), 1478);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_engine_enabled", "engine", "NVENC")), 0);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_engine_frequency_hertz", "engine", "VIC")), 729.6e6);
  // The cpu0 channel names itself as its device: no redundant label.
  EXPECT_EQ(Find(lines, "edgemon_cpu_online", "cpu", "cpu0")->labels.count("device"), 0u);

  // Board identity: the nvpmodel label follows the frame's mode id (3 -> 50W).
  const Line* info = nullptr;
  for (const auto& l : lines) {
    if (l.name == "edgemon_board_info") info = &l;
  }
  ASSERT_TRUE(info);
  EXPECT_EQ(info->value, "1");
  EXPECT_EQ(info->labels.at("model"), b.inv.board.model);
  EXPECT_EQ(info->labels.at("l4t"), "36.4.3");
  EXPECT_EQ(info->labels.at("nvpmodel"), "50W");
  EXPECT_EQ(info->labels.count("cpu_model"), 0u);  // empty: left out

  // Health.
  auto health = [&](const std::string& name) -> std::string {
    for (const auto& l : lines) {
      if (l.name == name && l.labels.empty()) return l.value;
    }
    return "(missing)";
  };
  EXPECT_EQ(health("edgemon_samples_total"), "42");
  EXPECT_EQ(health("edgemon_deadline_misses_total"), "0");
  EXPECT_EQ(health("edgemon_frame_interval_seconds"), "1");
  EXPECT_EQ(health("edgemon_energy_interval_seconds"), "0.01");
  EXPECT_EQ(health("edgemon_last_frame_timestamp_seconds"), "1700000000.123456789");
  EXPECT_EQ(health("edgemon_store_bytes"), std::to_string(5 << 20));
  EXPECT_EQ(health("edgemon_store_frames"), "42");
  EXPECT_EQ(health("edgemon_store_damaged"), "0");
  EXPECT_EQ(health("edgemon_channels"), std::to_string(b.inv.channels.size()));
  EXPECT_EQ(Find(lines, "edgemon_read_errors_total", "channel", "rail/VDD_CPU_CV/power")->value,
            "7");
  EXPECT_EQ(Find(lines, "edgemon_read_errors_total", "channel", "rail/VDD_IN/power")->value, "0");
}

// A damaged store: the store's series stay, the damage gauge says 1, and the
// frame count it cannot read is left out rather than shown as 0.
TEST(ExpositionTest, DamagedStoreKeepsItsSeriesAndLeavesOutWhatIsUnknown) {
  Board b = Fixture();
  Health h;
  h.store = StoreHealth{.bytes = 4096,
                        .max_bytes = 1 << 20,
                        .frames = std::nullopt,
                        .dropped_frames = 3,
                        .failed_commits = 0,
                        .damaged = true};
  for (Format f : {Format::kPrometheus, Format::kOpenMetrics}) {
    std::string text = RenderExposition(b.inv, &b.frame, h, f);
    auto lines = Parse(text);
    auto value = [&](const std::string& name) -> std::string {
      for (const auto& l : lines) {
        if (l.name == name && l.labels.empty()) return l.value;
      }
      return "(missing)";
    };
    EXPECT_EQ(value("edgemon_store_damaged"), "1");
    EXPECT_EQ(value("edgemon_store_bytes"), "4096");
    EXPECT_EQ(value("edgemon_store_max_bytes"), std::to_string(1 << 20));
    EXPECT_EQ(value("edgemon_store_dropped_frames_total"), "3");
    EXPECT_EQ(value("edgemon_store_failed_commits_total"), "0");
    EXPECT_EQ(text.find("edgemon_store_frames"), std::string::npos) << text;
  }
}

TEST(ExpositionTest, AbsentValuesAndConstantSourcesAreLeftOut) {
  Board b = Fixture();
  std::string text = RenderExposition(b.inv, &b.frame, Health{}, Format::kPrometheus);
  auto lines = Parse(text);
  EXPECT_FALSE(Find(lines, "edgemon_rail_power_watts", "rail", "VDD_CPU_CV"));   // absent, not 0
  EXPECT_FALSE(Find(lines, "edgemon_temperature_celsius", "zone", "PMIC-Die"));  // constant
  // A family without any present value has no HELP/TYPE either.
  EXPECT_EQ(text.find("edgemon_devfreq_frequency_hertz"), std::string::npos);
  // Health fields that are not given are not made up.
  EXPECT_EQ(text.find("edgemon_samples_total"), std::string::npos);
  EXPECT_EQ(text.find("edgemon_store_bytes"), std::string::npos);

  // Without a frame: the board info and health only (and rails' limits,
  // which this board's sensors do not have).
  auto none = Parse(RenderExposition(b.inv, nullptr, Health{}, Format::kPrometheus));
  for (const auto& l : none) EXPECT_NE(l.name.rfind("edgemon_rail", 0), 0u) << l.name;
}

TEST(ExpositionTest, RailLimitsAreGaugesBesideTheirRailWithOrWithoutAFrame) {
  Board b = Fixture();
  for (Channel& c : b.inv.channels) {
    if (c.kind == Kind::kRail && c.name == "VDD_IN" && c.field == Field::kCurrent) {
      c.max = 7784;   // mA: the INA3221's warning limit
      c.crit = 8000;  // and its critical one
    }
    if (c.kind == Kind::kRail && c.name == "VDD_GPU_SOC" && c.field == Field::kPower)
      c.crit = 15000;
  }
  const Frame* frames[] = {&b.frame, nullptr};
  for (const Frame* frame : frames) {
    auto lines = Parse(RenderExposition(b.inv, frame, Health{}, Format::kPrometheus));
    const Line* max = Find(lines, "edgemon_rail_current_max_amperes", "rail", "VDD_IN");
    const Line* crit = Find(lines, "edgemon_rail_current_crit_amperes", "rail", "VDD_IN");
    const Line* pcrit = Find(lines, "edgemon_rail_power_crit_watts", "rail", "VDD_GPU_SOC");
    ASSERT_TRUE(max && crit && pcrit);
    EXPECT_EQ(max->value, "7.784");
    EXPECT_EQ(crit->value, "8");
    EXPECT_EQ(pcrit->value, "15");
    // The same labels as the rail's own series, so `value / limit` needs no matching clause.
    EXPECT_EQ(max->labels,
              Find(Parse(RenderExposition(b.inv, &b.frame, Health{}, Format::kPrometheus)),
                   "edgemon_rail_current_amperes", "rail", "VDD_IN")
                  ->labels);
    // No limit, no series: never a 0.
    EXPECT_FALSE(Find(lines, "edgemon_rail_power_max_watts", "rail", "VDD_GPU_SOC"));
    EXPECT_FALSE(Find(lines, "edgemon_rail_current_max_amperes", "rail", "VDD_GPU_SOC"));
  }
}

TEST(ExpositionTest, OddLabelValuesAreEscaped) {
  Board b;
  std::string odd = "a\\b \"quoted\"\nnext";
  std::string bad_utf8 = std::string("t\xff") + "\xc3\xa9";  // invalid byte, then a valid e-acute
  b.Add(Kind::kThermal, odd, Field::kTemp, 1000);
  b.Add(Kind::kThermal, bad_utf8, Field::kTemp, 2000);
  b.Add(Kind::kThermal, "nvme/Sensor 2", Field::kTemp, 3000, 0, "hwmon nvme");
  b.inv.board.model = "Model \"X\"\\";
  std::string text = RenderExposition(b.inv, &b.frame, Health{}, Format::kPrometheus);
  EXPECT_NE(text.find(R"(zone="a\\b \"quoted\"\nnext")"), std::string::npos) << text;
  EXPECT_NE(text.find("zone=\"t\xEF\xBF\xBD\xC3\xA9\""), std::string::npos) << text;
  auto lines = Parse(text);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_temperature_celsius", "zone", odd)), 1);
  EXPECT_DOUBLE_EQ(Num(Find(lines, "edgemon_temperature_celsius", "zone", "nvme/Sensor 2")), 3);
  bool model = false;
  for (const auto& l : lines)
    model = model || (l.labels.count("model") && l.labels.at("model") == b.inv.board.model);
  EXPECT_TRUE(model);
  EXPECT_EQ(EscapeLabelValue("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(SanitizeName("3v3-rail.x"), "_3v3_rail_x");
}

TEST(ExpositionTest, OpenMetricsVariant) {
  Board b = Fixture();
  std::vector<uint64_t> errors;
  std::string text = RenderExposition(b.inv, &b.frame, SomeHealth(b, errors), Format::kOpenMetrics);
  ASSERT_GE(text.size(), 6u);
  EXPECT_EQ(text.substr(text.size() - 6), "# EOF\n");
  EXPECT_EQ(text.find("# EOF"), text.size() - 6);  // once, at the end
  // Counter families are named without _total; their samples carry it.
  EXPECT_NE(text.find("# TYPE edgemon_rail_energy_joules counter\n"), std::string::npos);
  EXPECT_NE(text.find("# UNIT edgemon_rail_energy_joules joules\n"), std::string::npos);
  EXPECT_NE(text.find("\nedgemon_rail_energy_joules_total{rail=\"VDD_IN\""), std::string::npos);
  EXPECT_NE(text.find("# TYPE edgemon_board info\n"), std::string::npos);
  EXPECT_NE(text.find("\nedgemon_board_info{"), std::string::npos);
  EXPECT_NE(text.find("# UNIT edgemon_rail_power_watts watts\n"), std::string::npos);
  // The 0.0.4 text has neither EOF nor UNIT, and types the _total sample.
  std::string prom = RenderExposition(b.inv, &b.frame, SomeHealth(b, errors), Format::kPrometheus);
  EXPECT_EQ(prom.find("# EOF"), std::string::npos);
  EXPECT_EQ(prom.find("# UNIT"), std::string::npos);
  EXPECT_NE(prom.find("# TYPE edgemon_rail_energy_joules_total counter\n"), std::string::npos);
  EXPECT_NE(prom.find("# TYPE edgemon_board_info gauge\n"), std::string::npos);
  // Same samples in both.
  auto a = Parse(prom), o = Parse(text);
  ASSERT_EQ(a.size(), o.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, o[i].name);
    EXPECT_EQ(a[i].value, o[i].value);
  }
}

TEST(ExpositionTest, NegotiatesOpenMetricsFromTheAcceptHeader) {
  // What Prometheus 2.42 sends.
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text;version=1.0.0,application/"
                            "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,"
                            "*/*;q=0.1"),
            Format::kOpenMetrics);
  EXPECT_EQ(NegotiateFormat(""), Format::kPrometheus);
  EXPECT_EQ(NegotiateFormat("*/*"), Format::kPrometheus);
  EXPECT_EQ(NegotiateFormat("text/plain;version=0.0.4"), Format::kPrometheus);
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text; q=0"), Format::kPrometheus);
  EXPECT_EQ(NegotiateFormat("text/plain, application/openmetrics-text;q=0.5"), Format::kPrometheus);
  EXPECT_EQ(NegotiateFormat("Application/OpenMetrics-Text"), Format::kOpenMetrics);
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text;version=2.0.0"), Format::kPrometheus);
  EXPECT_EQ(ContentType(Format::kOpenMetrics),
            "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_EQ(ContentType(Format::kPrometheus), "text/plain; version=0.0.4; charset=utf-8");
}

// Every kind x field the channel model has maps to one valid, unique series.
Board EveryKindAndField() {
  Board b;
  for (int k = 0; k <= static_cast<int>(Kind::kBoard); ++k) {
    for (int f = 0; f <= static_cast<int>(Field::kMode); ++f) {
      auto kind = static_cast<Kind>(k);
      auto field = static_cast<Field>(f);
      uint32_t flags = field == Field::kEnergy ? uint32_t{kFlagCounter} : 0u;
      b.Add(kind, std::string(ToString(kind)) + "-x", field, 1000 + f, flags, "dev");
    }
  }
  return b;
}

TEST(ExpositionTest, EveryKindAndFieldMapsToOneValidSeries) {
  Board b = EveryKindAndField();
  std::vector<uint64_t> errors;
  auto lines = Parse(RenderExposition(b.inv, &b.frame, SomeHealth(b, errors), Format::kPrometheus));
  std::regex name_re("[a-zA-Z_:][a-zA-Z0-9_:]*");
  std::set<std::string> series;
  size_t channel_lines = 0;
  for (const auto& l : lines) {
    EXPECT_TRUE(std::regex_match(l.name, name_re)) << l.name;
    std::string id = l.name;
    for (const auto& [k, v] : l.labels) id += "," + k + "=" + v;
    EXPECT_TRUE(series.insert(id).second) << "duplicate series " << id;
    if (l.labels.count("device")) ++channel_lines;
  }
  EXPECT_EQ(channel_lines, b.inv.channels.size());
}

// Debian's promtool (the same parser and linter Prometheus uses).
TEST(ExpositionTest, PromtoolAcceptsTheExposition) {
#ifdef EDGEMON_PROMTOOL
  for (const Board& b : {Fixture(), EveryKindAndField()}) {
    std::vector<uint64_t> errors;
    std::string text =
        RenderExposition(b.inv, &b.frame, SomeHealth(b, errors), Format::kPrometheus);
    auto dir =
        std::filesystem::temp_directory_path() / ("edgemon-promtool-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "m.txt") << text;
    std::string cmd = std::string(EDGEMON_PROMTOOL) + " check metrics < " +
                      (dir / "m.txt").string() + " > " + (dir / "out.txt").string() + " 2>&1";
    int rc = std::system(cmd.c_str());
    std::ifstream in(dir / "out.txt");
    std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "") << "promtool lint findings:\n" << out;
    std::filesystem::remove_all(dir);
  }
#else
  GTEST_SKIP() << "promtool not found at configure time";
#endif
}

TEST(ExpositionTest, OrinInventoryRendersEveryPresentChannel) {
  Inventory inv = edgemon::testing::OrinLikeInventory();
  Frame f;
  for (const auto& c : inv.channels) f.values.push_back(static_cast<int64_t>(c.id) * 7);
  auto lines = Parse(Exposition(inv).Render(&f, Health{}, Format::kPrometheus));
  size_t channels = 0;
  for (const auto& l : lines)
    channels += l.name != "edgemon_board_info" && l.name != "edgemon_channels" &&
                l.name != "edgemon_last_frame_timestamp_seconds";
  EXPECT_EQ(channels, inv.channels.size());
}

}  // namespace
}  // namespace edgemon::metrics
