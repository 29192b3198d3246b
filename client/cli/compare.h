// edgemon compare A B ...: runs side by side, each figure's difference from
// the first side in %, and whether it exceeds the runs' own spread.
//
// A side is a window id, a label (every recorded run with it: repeats share
// one label) or a bundle directory (its summary.json; a summary with `runs`
// counts each of them). Its figures come from summary.json-shaped objects
// (SummaryJson in record_report.h): the run's duration, the input rail's
// energy and average power, each rail's and each phase's energy and each
// phase's duration, J/item and items/s.
//
// Thread safety: plain functions.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "client/cli/record_report.h"

namespace edgemon::cli::record {

// The two-sided p-value of Welch's t-test for a difference of the means of
// two samples (Spread, record_report.h; each n >= 2 with a std): 1 when
// neither has spread and the means are equal, 0 when neither has spread and
// they differ.
double WelchP(const Spread& a, const Spread& b);

// One side: its name and its runs (summary.json objects).
struct CompareSide {
  std::string name;
  std::vector<nlohmann::json> runs;
};

// The comparison as data (the --json output and compare.html's):
//   {"format": "edgemon-compare", "version": 1,
//    "sides": [{"name", "n"}],
//    "rows": [{"figure", "unit",
//              "values": [{"mean", "std", "n"} or null per side],
//              "diff": [null for the first side, then {"pct" (or null when
//                       the first side's mean is 0 or either is missing),
//                       "p" (Welch, or null), "verdict"}]}]}
// verdict: "beyond the spread" / "within the spread" (Welch's t-test at
// 95 % when both sides have n >= 2), else "single runs: no spread".
nlohmann::json CompareData(const std::vector<CompareSide>& sides);

// The text table of CompareData.
std::string RenderCompare(const nlohmann::json& data);

}  // namespace edgemon::cli::record
