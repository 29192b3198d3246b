#include "daemon/sim/waveform.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace edgemon::sim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kFormatVersion = 1;

using Json = nlohmann::json;

Json SineJson(const Sine& s) {
  return Json{
      {"mean", s.mean}, {"amplitude", s.amplitude}, {"phase", s.phase}, {"period_s", s.period_s}};
}

Sine SineFrom(const Json& j) {
  Sine s;
  s.mean = j.at("mean").get<double>();
  s.amplitude = j.at("amplitude").get<double>();
  s.phase = j.at("phase").get<double>();
  s.period_s = j.at("period_s").get<double>();
  return s;
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

double Sine::At(double t_s) const {
  return mean + amplitude * std::sin(2 * kPi * t_s / period_s + phase);
}

double Sine::Integral(double t0_s, double t1_s) const {
  const double w = 2 * kPi / period_s;
  return mean * (t1_s - t0_s) -
         amplitude / w * (std::cos(w * t1_s + phase) - std::cos(w * t0_s + phase));
}

double RailWave::PowerMw(double t_s, double period_s) const {
  return base_mw * (1 + amplitude * std::sin(2 * kPi * t_s / period_s + phase));
}

double RailWave::EnergyMj(double t0_s, double t1_s, double period_s) const {
  Sine s{base_mw, base_mw * amplitude, phase, period_s};
  return s.Integral(t0_s, t1_s);
}

const RailWave* Model::FindRail(std::string_view name) const {
  for (const auto& r : rails) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

double Model::RailPowerMw(std::string_view rail, double t_s) const {
  const RailWave* r = FindRail(rail);
  return r ? r->PowerMw(t_s, period_s) : kNaN;
}

double Model::RailEnergyMj(std::string_view rail, double t0_s, double t1_s) const {
  const RailWave* r = FindRail(rail);
  return r ? r->EnergyMj(t0_s, t1_s, period_s) : kNaN;
}

double Model::CpuLoad(int cpu, double t_s) const {
  for (const auto& c : cpus) {
    if (c.cpu == cpu) return c.load.At(t_s);
  }
  return kNaN;
}

double Model::CpuBusySeconds(int cpu, double t0_s, double t1_s) const {
  for (const auto& c : cpus) {
    if (c.cpu == cpu) return c.load.Integral(t0_s, t1_s);
  }
  return kNaN;
}

std::string Model::ToJson(int64_t start_realtime_ns, int64_t start_boottime_ns,
                          double rate_hz) const {
  Json j;
  j["format"] = "edgemon-sim";
  j["version"] = kFormatVersion;
  j["board"] = board;
  j["seed"] = seed;
  j["period_s"] = period_s;
  j["rate_hz"] = rate_hz;
  j["start_realtime_ns"] = start_realtime_ns;
  j["start_boottime_ns"] = start_boottime_ns;
  j["time"] =
      "t = (CLOCK_BOOTTIME ns - start_boottime_ns) / 1e9 "
      "(or (CLOCK_REALTIME ns - start_realtime_ns) / 1e9)";
  j["power_formula"] = "P_mw(t) = base_mw * (1 + amplitude * sin(2*pi*t/period_s + phase))";
  j["energy_formula"] =
      "E_mj(t0,t1) = base_mw * ((t1 - t0) - amplitude * period_s / (2*pi) * "
      "(cos(2*pi*t1/period_s + phase) - cos(2*pi*t0/period_s + phase)))";
  j["sine_formula"] = "x(t) = mean + amplitude * sin(2*pi*t/period_s + phase)";
  Json rails_json = Json::object();
  for (const auto& r : rails) {
    Json e{{"base_mw", r.base_mw},       {"amplitude", r.amplitude}, {"phase", r.phase},
           {"voltage_mv", r.voltage_mv}, {"source", r.source},       {"device", r.device}};
    if (r.source == "rapl") {
      e["energy_uj_start"] = r.energy_uj_start;
      e["max_energy_range_uj"] = r.max_energy_range_uj;
    }
    rails_json[r.name] = std::move(e);
  }
  j["rails"] = std::move(rails_json);
  Json cpus_json = Json::object();
  for (const auto& c : cpus) cpus_json["cpu" + std::to_string(c.cpu)] = SineJson(c.load);
  j["cpus_load_fraction"] = std::move(cpus_json);
  Json temps_json = Json::object();
  for (const auto& t : temps) {
    Json e = SineJson(t.temp_mc);
    e["name"] = t.name;
    temps_json[t.key] = std::move(e);
  }
  j["temps_mc"] = std::move(temps_json);
  Json gpus_json = Json::object();
  for (const auto& g : gpus) gpus_json[g.entry] = SineJson(g.load_permille);
  j["gpus_load_permille"] = std::move(gpus_json);
  if (emc_load_permille) j["emc_load_permille"] = SineJson(*emc_load_permille);
  return j.dump(2) + "\n";
}

Result<Sidecar> ParseSidecar(std::string_view text) {
  auto fail = [](const std::string& why) -> Result<Sidecar> {
    return Status::InvalidArgument(why);
  };
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return fail("not a JSON object");
  try {
    if (j.value("format", std::string()) != "edgemon-sim")
      return fail("not an edgemon-sim sidecar");
    if (j.value("version", 0) != kFormatVersion) return fail("unknown sidecar version");
    Sidecar s;
    s.start_realtime_ns = j.at("start_realtime_ns").get<int64_t>();
    s.start_boottime_ns = j.at("start_boottime_ns").get<int64_t>();
    s.rate_hz = j.value("rate_hz", 0.0);
    Model& m = s.model;
    m.board = j.value("board", std::string());
    m.seed = j.value("seed", uint64_t{0});
    m.period_s = j.at("period_s").get<double>();
    if (!(m.period_s > 0)) return fail("period_s must be positive");
    auto section = [&](const char* key) -> const Json* {
      auto it = j.find(key);
      return it != j.end() && it->is_object() ? &*it : nullptr;
    };
    const Json* rails_json = section("rails");
    if (rails_json == nullptr) return fail("no rails object");
    for (const auto& [name, e] : rails_json->items()) {
      RailWave r;
      r.name = name;
      r.base_mw = e.at("base_mw").get<double>();
      r.amplitude = e.at("amplitude").get<double>();
      r.phase = e.at("phase").get<double>();
      r.voltage_mv = e.value("voltage_mv", 0.0);
      r.source = e.value("source", std::string());
      r.device = e.value("device", std::string());
      r.energy_uj_start = e.value("energy_uj_start", int64_t{0});
      r.max_energy_range_uj = e.value("max_energy_range_uj", int64_t{0});
      m.rails.push_back(std::move(r));
    }
    static const Json kEmpty = Json::object();
    auto items = [&](const char* key) {
      const Json* found = section(key);
      return (found ? *found : kEmpty).items();
    };
    for (const auto& [name, e] : items("cpus_load_fraction")) {
      if (name.size() < 4 || name.compare(0, 3, "cpu") != 0) return fail("bad cpu key " + name);
      CpuWave c;
      c.cpu = std::stoi(name.substr(3));
      c.load = SineFrom(e);
      m.cpus.push_back(c);
    }
    for (const auto& [key, e] : items("temps_mc")) {
      m.temps.push_back({key, e.value("name", std::string()), SineFrom(e)});
    }
    for (const auto& [entry, e] : items("gpus_load_permille")) {
      m.gpus.push_back({entry, SineFrom(e)});
    }
    if (j.contains("emc_load_permille")) m.emc_load_permille = SineFrom(j["emc_load_permille"]);
    return s;
  } catch (const std::exception& e) {
    return fail(std::string("malformed sidecar: ") + e.what());
  }
}

Result<Sidecar> LoadSidecar(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return ParseSidecar(text.str());
}

double Uniform(uint64_t seed, std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (char ch : key) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001b3ULL;
  }
  uint64_t x = SplitMix64(SplitMix64(seed) ^ h);
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

}  // namespace edgemon::sim
