// The MLPerf energy report of a recorded run: mlperf_energy.json, in the
// fields of MLCommons' draft energy-reporting schema v6.1
// (docs/schemas/mlperf_energy_schema_v6.json holds them as a JSON Schema,
// docs/benchmarks.md says where edgemon departs from the draft).
//
// Built from summary.json (SummaryJson in record_report.h) and what a run
// cannot know, given as --mlperf KEY=VALUE. Thread safety: plain functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgemon/status.h"

namespace CLI {
class App;
}

namespace edgemon::cli::record {

struct MlperfOptions {
  std::string file;                 // --mlperf-energy FILE ("": only the bundle's copy)
  std::string prefill_phase;        // --prefill-phase NAME
  std::string generation_phase;     // --generation-phase NAME
  std::vector<std::string> fields;  // --mlperf KEY=VALUE, as given

  // True when the run asked for a report (a file, phases or fields).
  bool asked() const {
    return !file.empty() || !prefill_phase.empty() || !generation_phase.empty() || !fields.empty();
  }
};

// Adds --mlperf-energy, --prefill-phase, --generation-phase and --mlperf to
// `cmd` (edgemon record; edgemon mlperf-energy without --mlperf-energy).
void AddMlperfOptions(CLI::App* cmd, MlperfOptions& o, bool with_file);

// The --mlperf fields checked against the schema's types: integers >= 1
// (batch_size, input_sequence_length, output_sequence_length,
// accelerator_count), numbers >= 0 (thermal_stabilization_seconds,
// static_power_baseline_watts), the enums (task_type, scenario) and
// software_runtime_versions.NAME=VERSION strings. INVALID_ARGUMENT naming the
// field for anything else, for a field the run measures itself, or for one
// given twice.
Result<nlohmann::json> ParseMlperfFields(const std::vector<std::string>& fields);

// The report: measured fields from `summary`, the rest from `given`
// (ParseMlperfFields). measurement_method is "rapl" or "nvml" where the
// input rail is read from there, "onboard_ina" for an INA sensor (a value the
// draft does not list), else the rail's driver. NOT_FOUND when a named phase
// is not in the summary; FAILED_PRECONDITION when the summary has no input
// rail (no total energy to report).
Result<nlohmann::json> MlperfEnergyJson(const nlohmann::json& summary, const nlohmann::json& given,
                                        const MlperfOptions& o);

// The required fields (checker rules 01 and 02) the report lacks, so that a
// run can say which it could not fill.
std::vector<std::string> MissingMlperfFields(const nlohmann::json& report);

// Builds the report and writes it to `path` (indented JSON), then prints
// each required field it could not fill to stderr. False, with a message on
// stderr, when it cannot be built or written.
bool WriteMlperfReport(const std::string& path, const nlohmann::json& summary,
                       const nlohmann::json& given, const MlperfOptions& o);

}  // namespace edgemon::cli::record
