// edgemon record --nvtx: the NVTX ranges the injection library
// (client/nvtx/edgemon_nvtx.cc) wrote during the run, with the energy of each
// range name summed over its occurrences.
//
// Each occurrence's energy is the daemon's Summarize over [start, end] (the
// same integral the phases of `edgemon mark` get), so it is exact to the rail
// sample. Attribution is inclusive: a range's energy includes every range
// nested in it, and ranges open at the same time on several threads each get
// the board's whole energy over their span.
//
// Thread safety: plain functions and values.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "client/edgemon_client.h"
#include "edgemon/status.h"

namespace edgemon::cli::record {

// One range as the library wrote it, on the daemon's clock once read.
struct NvtxRange {
  char kind = 'P';  // 'P' push/pop, 'S' start/end
  int64_t pid = 0, tid = 0;
  int depth = 0;  // open push/pop ranges under it on its thread
  int64_t start_ns = 0, end_ns = 0;
  std::string domain;  // "": NVTX's default domain
  std::string name;
  std::optional<double> energy_mj;  // the board's (input rail) energy over it
};

// One range name (per domain) over the run.
struct NvtxStat {
  std::string domain, name;
  uint64_t count = 0;
  double total_s = 0;
  uint64_t max_depth = 0;
  // Per rail (the summaries' order): the sum over the occurrences; none when
  // an occurrence had no figure for it (missing is never counted as 0).
  struct Rail {
    std::string name;
    bool input = false;
    std::optional<double> energy_mj;
  };
  std::vector<Rail> rails;
  bool summarized = false;  // every occurrence was summarized
};

struct NvtxData {
  std::string file;               // where the ranges were read from
  std::vector<NvtxRange> ranges;  // ended ranges, in start order
  std::vector<NvtxStat> stats;    // by first occurrence
  std::vector<std::string> notes;
};

// At most this many occurrences are summarized (one daemon call each);
// names with occurrences beyond it get no energy (said in a note).
inline constexpr size_t kMaxNvtxSummaries = 5000;

// Reads the library's file: ranges still open at the end (END_NS -1) and
// lines that do not parse are left out and counted in `notes`.
std::vector<NvtxRange> ParseNvtxRanges(std::istream& in, std::vector<std::string>* notes);

// Groups ended ranges by (domain, name), in order of first occurrence; the
// energies come from `summaries` (one per range, in `ranges`' order; a null
// optional: not summarized).
std::vector<NvtxStat> NvtxStats(std::vector<NvtxRange>& ranges,
                                const std::vector<std::optional<client::Summary>>& summaries);

// Reads the file from `fd` (the one record created before the run), moves
// the stamps onto the daemon's clock (+offset_ns), summarizes each range and
// groups them; failures become notes.
NvtxData CollectNvtx(client::Client& c, int fd, const std::string& file, int64_t offset_ns);

// The injection library: $EDGEMON_NVTX_LIBRARY, else ../nvtx/libedgemon_nvtx.so
// beside this executable (the build tree), else the installed one
// (LIBDIR/edgemon/libedgemon_nvtx.so); "" when none exists.
std::string NvtxLibrary();

// The file of one recorded run: created empty before the command starts
// (DIR/nvtx-ranges.tsv in the bundle, else a temporary file removed at
// the end), kept open so the ranges are read from the file that was made.
class NvtxCapture {
 public:
  // INVALID_ARGUMENT when the library is not there, UNAVAILABLE when the
  // file cannot be made.
  static Result<std::unique_ptr<NvtxCapture>> Create(const std::string& bundle_dir);
  ~NvtxCapture();
  NvtxCapture(const NvtxCapture&) = delete;
  NvtxCapture& operator=(const NvtxCapture&) = delete;

  // Sets NVTX_INJECTION64_PATH and EDGEMON_NVTX_OUT in the command's
  // environment (replacing any it had; a note says so).
  void AddEnv(std::vector<std::string>& env, std::vector<std::string>* notes) const;
  NvtxData Collect(client::Client& c, int64_t offset_ns) const;

 private:
  NvtxCapture() = default;
  std::string library_, file_;
  int fd_ = -1;
  bool temporary_ = false;
};

// summary.json's "nvtx": [{domain, name, count, total_s, mean_s, energy_j,
// avg_w, max_depth, rails: [{name, input, energy_j, avg_w}]}].
nlohmann::json NvtxJson(const NvtxData& data);

// The summary's "NVTX ranges" table (empty without ranges).
std::string RenderNvtx(const NvtxData& data);

// The sentence the summary, summary.json and the report state.
inline constexpr const char* kNvtxAttribution =
    "inclusive: a range's energy includes the ranges nested in it, and ranges open at the same "
    "time on several threads each count the board's energy over their span";

}  // namespace edgemon::cli::record
