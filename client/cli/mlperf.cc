// The MLPerf energy report (mlperf.h) and edgemon mlperf-energy BUNDLE.
#include "client/cli/mlperf.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "client/cli/cli.h"
#include "client/cli/record_common.h"

namespace edgemon::cli::record {

namespace {

using json = nlohmann::json;

enum class Type { kPositiveInt, kNonNegative, kTaskType, kScenario };

const std::map<std::string, Type>& GivenFields() {
  static const std::map<std::string, Type> fields = {
      {"task_type", Type::kTaskType},
      {"scenario", Type::kScenario},
      {"batch_size", Type::kPositiveInt},
      {"input_sequence_length", Type::kPositiveInt},
      {"output_sequence_length", Type::kPositiveInt},
      {"accelerator_count", Type::kPositiveInt},
      {"thermal_stabilization_seconds", Type::kNonNegative},
      {"static_power_baseline_watts", Type::kNonNegative},
  };
  return fields;
}

// What the run measures: never given.
constexpr const char* kMeasured[] = {
    "total_energy_joules", "inference_active_power_watts", "measurement_method",
    "sampling_rate_hz",    "prefill_energy_joules",        "generation_energy_joules",
    "output_token_count",  "energy_per_token_joules",      "energy_per_query_joules"};

const char* const kRequired[] = {"task_type",
                                 "total_energy_joules",
                                 "static_power_baseline_watts",
                                 "inference_active_power_watts",
                                 "measurement_method",
                                 "sampling_rate_hz",
                                 "thermal_stabilization_seconds",
                                 "scenario",
                                 "accelerator_count"};
const char* const kRequiredLlm[] = {
    "prefill_energy_joules", "generation_energy_joules", "output_token_count",     "batch_size",
    "input_sequence_length", "output_sequence_length",   "energy_per_token_joules"};

std::optional<double> Num(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  const double v = j[key].get<double>();
  return std::isfinite(v) ? std::optional(v) : std::nullopt;
}

const json* PhaseJson(const json& summary, const std::string& name) {
  if (!summary.contains("phases") || !summary["phases"].is_array()) return nullptr;
  for (const auto& p : summary["phases"]) {
    if (p.is_object() && p.value("name", json()) == name) return &p;
  }
  return nullptr;
}

// measurement_method from the input rail's source ("ina3221 1-0040",
// "rapl intel-rapl:0", "nvml 0000:01:00.0", "power_supply BAT0").
std::string Method(const std::string& device) {
  const std::string driver = device.substr(0, device.find(' '));
  if (driver == "rapl" || driver == "nvml") return driver;
  if (driver.rfind("ina", 0) == 0 || device.find(" ina") != std::string::npos) {
    return "onboard_ina";
  }
  return driver.empty() ? "unknown" : driver;
}

}  // namespace

void AddMlperfOptions(CLI::App* cmd, MlperfOptions& o, bool with_file) {
  if (with_file) {
    cmd->add_option("--mlperf-energy", o.file,
                    "Write the run's MLPerf energy report (draft schema v6.1) to FILE");
  }
  cmd->add_option("--prefill-phase", o.prefill_phase,
                  "MLPerf LLM report: the mark whose energy is the prefill's");
  cmd->add_option("--generation-phase", o.generation_phase,
                  "MLPerf LLM report: the mark whose energy is the generation's (its items are "
                  "the output tokens)");
  cmd->add_option("--mlperf", o.fields,
                  "MLPerf report field the run cannot know, KEY=VALUE (repeatable): task_type, "
                  "scenario, batch_size, input_sequence_length, output_sequence_length, "
                  "accelerator_count, thermal_stabilization_seconds, "
                  "software_runtime_versions.NAME=VERSION")
      ->allow_extra_args(false);  // one value each: a "--" after it still starts the command
}

Result<json> ParseMlperfFields(const std::vector<std::string>& fields) {
  json out = json::object();
  for (const auto& f : fields) {
    const size_t eq = f.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--mlperf " + f + ": KEY=VALUE");
    }
    const std::string key = f.substr(0, eq), value = f.substr(eq + 1);
    constexpr std::string_view kVersions = "software_runtime_versions.";
    if (key.starts_with(kVersions)) {
      const std::string name = key.substr(kVersions.size());
      if (name.empty() || value.empty()) {
        return Status::InvalidArgument("--mlperf " + f +
                                       ": software_runtime_versions.NAME=VERSION, both non-empty");
      }
      json& v = out["software_runtime_versions"];
      if (v.contains(name)) return Status::InvalidArgument("--mlperf " + key + " given twice");
      v[name] = value;
      continue;
    }
    for (const char* m : kMeasured) {
      if (key == m) {
        return Status::InvalidArgument("--mlperf " + key + ": measured by the run, not given");
      }
    }
    auto it = GivenFields().find(key);
    if (it == GivenFields().end()) {
      std::string known;
      for (const auto& [k, t] : GivenFields()) known += (known.empty() ? "" : ", ") + k;
      return Status::InvalidArgument("--mlperf " + key + ": not a field the run cannot know (" +
                                     known + ", software_runtime_versions.NAME)");
    }
    if (out.contains(key)) return Status::InvalidArgument("--mlperf " + key + " given twice");
    switch (it->second) {
      case Type::kTaskType:
      case Type::kScenario: {
        const bool task = it->second == Type::kTaskType;
        const std::vector<std::string> allowed =
            task ? std::vector<std::string>{"llm", "cv", "other"}
                 : std::vector<std::string>{"offline", "server", "singlestream"};
        if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
          return Status::InvalidArgument(
              "--mlperf " + key + "=" + value + ": one of " +
              (task ? "llm, cv, other" : "offline, server, singlestream"));
        }
        out[key] = value;
        break;
      }
      case Type::kPositiveInt: {
        int64_t n = 0;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc() || p != value.data() + value.size() || n < 1) {
          return Status::InvalidArgument("--mlperf " + key + "=" + value +
                                         ": an integer, at least 1");
        }
        out[key] = n;
        break;
      }
      case Type::kNonNegative: {
        double d = 0;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), d);
        if (ec != std::errc() || p != value.data() + value.size() || !std::isfinite(d) || d < 0) {
          return Status::InvalidArgument("--mlperf " + key + "=" + value +
                                         ": a number, at least 0");
        }
        out[key] = d;
        break;
      }
    }
  }
  return out;
}

Result<json> MlperfEnergyJson(const json& summary, const json& given, const MlperfOptions& o) {
  const auto total = Num(summary, "total_energy_j");
  if (!total) {
    return Status::FailedPrecondition(
        "no input rail energy: the MLPerf report needs the board's total (an input rail)");
  }
  json r = json::object();
  const bool llm_phases = !o.prefill_phase.empty() || !o.generation_phase.empty();
  r["task_type"] = given.value("task_type", llm_phases ? "llm" : "other");
  r["total_energy_joules"] = *total;
  // The idle baseline: the input rail's mean power over --baseline.
  const std::string input = summary.value("total_rail", json()).is_string()
                                ? summary["total_rail"].get<std::string>()
                                : std::string();
  if (summary.contains("baseline") && summary["baseline"].is_object() &&
      summary["baseline"].contains("rails") && summary["baseline"]["rails"].is_array()) {
    if (given.contains("static_power_baseline_watts")) {
      return Status::InvalidArgument(
          "--mlperf static_power_baseline_watts: measured by --baseline in this run");
    }
    for (const auto& b : summary["baseline"]["rails"]) {
      if (b.is_object() && b.value("name", json()) == input) {
        if (auto w = Num(b, "power_w")) r["static_power_baseline_watts"] = *w;
      }
    }
  } else if (given.contains("static_power_baseline_watts")) {
    r["static_power_baseline_watts"] = given["static_power_baseline_watts"];
  }
  // Active power: the input rail's mean over the run, and its peak.
  json active = json::object();
  const double range_s = Num(summary.value("range", json::object()), "duration_s").value_or(0);
  if (range_s > 0) active["mean"] = *total / range_s;
  if (summary.contains("rails") && summary["rails"].is_array()) {
    for (const auto& rail : summary["rails"]) {
      if (rail.is_object() && rail.value("name", json()) == input) {
        if (auto peak = Num(rail, "peak_power_w"); peak && *peak > 0) active["peak"] = *peak;
      }
    }
  }
  r["inference_active_power_watts"] = active;
  r["measurement_method"] = Method(summary.value("total_rail_device", json()).is_string()
                                       ? summary["total_rail_device"].get<std::string>()
                                       : std::string());
  // The rate the rails were integrated at, the lowest that held over the run.
  std::optional<double> rate;
  if (summary.contains("rail_rate_hz") && summary["rail_rate_hz"].is_object()) {
    rate = Num(summary["rail_rate_hz"], "min");
  }
  if (!rate) {
    const auto boost = Num(summary, "boost_rate_hz");
    rate = boost && *boost > 0 ? boost : Num(summary, "energy_rate_hz");
  }
  if (rate) r["sampling_rate_hz"] = *rate;
  r["thermal_stabilization_seconds"] = given.value("thermal_stabilization_seconds", 0.0);
  if (given.contains("scenario")) r["scenario"] = given["scenario"];
  r["accelerator_count"] = given.value("accelerator_count", 1);
  for (const char* k : {"batch_size", "input_sequence_length", "output_sequence_length"}) {
    if (given.contains(k)) r[k] = given[k];
  }
  if (given.contains("software_runtime_versions")) {
    r["software_runtime_versions"] = given["software_runtime_versions"];
  }
  // LLM: prefill and generation from their marks; tokens are the run's
  // items, counted over the generation phase.
  const json* items =
      summary.contains("items") && summary["items"].is_object() ? &summary["items"] : nullptr;
  for (const auto& [name, key] : {std::pair{o.prefill_phase, "prefill_energy_joules"},
                                  std::pair{o.generation_phase, "generation_energy_joules"}}) {
    if (name.empty()) continue;
    const json* p = PhaseJson(summary, name);
    if (!p) return Status::NotFound("no phase (mark) named '" + name + "' in the run");
    if (auto e = Num(*p, "total_energy_j")) r[key] = *e;
  }
  if (!o.generation_phase.empty() && items) {
    if (items->contains("phase") && (*items)["phase"].is_string() &&
        (*items)["phase"] != o.generation_phase) {
      return Status::InvalidArgument("the items count phase '" +
                                     (*items)["phase"].get<std::string>() +
                                     "', not the generation phase '" + o.generation_phase + "'");
    }
    if (auto tokens = Num(*items, "count"); tokens && *tokens > 0) {
      r["output_token_count"] = static_cast<int64_t>(std::llround(*tokens));
      if (r.contains("generation_energy_joules")) {
        json per = {{"mean", r["generation_energy_joules"].get<double>() / *tokens}};
        // Repeats: the spread of J/item over the runs (the generation's items).
        if (summary.contains("aggregate") && summary["aggregate"].is_object()) {
          if (auto sd = Num(summary["aggregate"].value("j_per_item", json::object()), "std")) {
            per["std"] = *sd;
          }
        }
        r["energy_per_token_joules"] = per;
      }
    }
  }
  if (r["task_type"] == "cv" && items) {
    if (auto per = Num(*items, "energy_j_per_item")) {
      json q = {{"mean", *per}};
      if (summary.contains("aggregate") && summary["aggregate"].is_object()) {
        if (auto sd = Num(summary["aggregate"].value("j_per_item", json::object()), "std")) {
          q["std"] = *sd;
        }
      }
      r["energy_per_query_joules"] = q;
    }
  }
  return r;
}

std::vector<std::string> MissingMlperfFields(const json& report) {
  std::vector<std::string> missing;
  auto check = [&](const char* k) {
    if (!report.contains(k) || report[k].is_null()) missing.emplace_back(k);
  };
  for (const char* k : kRequired) check(k);
  if (report.value("task_type", "") == "llm") {
    for (const char* k : kRequiredLlm) check(k);
  }
  if (report.value("task_type", "") == "cv") check("energy_per_query_joules");
  if (report.contains("inference_active_power_watts") &&
      !report["inference_active_power_watts"].contains("mean")) {
    missing.emplace_back("inference_active_power_watts.mean");
  }
  return missing;
}

bool WriteMlperfReport(const std::string& path, const json& summary, const json& given,
                       const MlperfOptions& o) {
  auto report = MlperfEnergyJson(summary, given, o);
  if (!report.ok()) {
    std::fprintf(stderr, "edgemon: MLPerf energy report: %s\n",
                 TerminalSafe(report.status().message()).c_str());
    return false;
  }
  std::ofstream w(path, std::ios::trunc);
  w << JsonText(*report, 2) << "\n";
  w.close();
  if (!w) {
    std::fprintf(stderr, "edgemon: MLPerf energy report: %s: cannot be written\n",
                 TerminalSafe(path).c_str());
    return false;
  }
  for (const auto& m : MissingMlperfFields(*report)) {
    std::fprintf(stderr,
                 "edgemon: MLPerf energy report %s: %s is missing (required by the schema)\n",
                 TerminalSafe(path).c_str(), m.c_str());
  }
  return true;
}

namespace {

int RunMlperf(const std::string& bundle, const std::string& out, const MlperfOptions& o) {
  namespace fs = std::filesystem;
  auto given = ParseMlperfFields(o.fields);
  if (!given.ok()) {
    std::fprintf(stderr, "edgemon mlperf-energy: %s\n",
                 TerminalSafe(given.status().message()).c_str());
    return kExitUsage;
  }
  const fs::path in = fs::path(bundle) / "summary.json";
  std::ifstream f(in);
  json summary = f ? json::parse(f, nullptr, false) : json();
  if (!f || summary.is_discarded() || !summary.is_object() ||
      summary.value("format", "") != "edgemon-record") {
    std::fprintf(stderr, "edgemon mlperf-energy: %s: not an edgemon record summary\n",
                 TerminalSafe(in.string()).c_str());
    return kExitDataErr;
  }
  const fs::path to = out.empty() ? fs::path(bundle) / "mlperf_energy.json" : fs::path(out);
  return WriteMlperfReport(to.string(), summary, *given, o) ? kExitOk : kExitDataErr;
}

}  // namespace

void AddMlperfCommand(CLI::App& app, Registry& registry) {
  struct Options {
    std::string bundle, out;
    MlperfOptions mlperf;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("mlperf-energy",
                                 "Write the MLPerf energy report (draft v6.1) of a record bundle");
  cmd->add_option("bundle", o->bundle, "The bundle directory (edgemon record --out DIR)")
      ->required();
  cmd->add_option("--out", o->out, "The file to write (default: BUNDLE/mlperf_energy.json)");
  AddMlperfOptions(cmd, o->mlperf, false);
  cmd->callback(
      [&registry, o] { registry.run = [o] { return RunMlperf(o->bundle, o->out, o->mlperf); }; });
}

}  // namespace edgemon::cli::record
