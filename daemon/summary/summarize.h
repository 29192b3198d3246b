// Summarizer: energy, power, temperatures and clock residency of a time
// range, read from the store (and from the sampler's live energy counters
// past the newest stored frame), as the model's Summary
// (include/edgemon/model.h). No gRPC: the API service decodes a request,
// runs a Summarizer on its worker thread and encodes the result.
//
// A summary is computed in steps, so a long range never holds the caller's
// thread for long:
//   Start     clips the range (up to now at the end, from the oldest data
//             held at the start), reads each rail's energy counter at the
//             edges and, for a range older than the raw tier, the rollup
//             tier's peaks and temperatures;
//   ReadPage  (until done()) folds the range's frames in pages of
//             page_frames (FrameSummary): peaks and temperatures in the raw
//             tier, clock residency, samples and gaps; after the last page
//             the notes are added (a short range, undecodable frames,
//             wall-clock steps inside the range). Where the store describes
//             a stretch of whole rollup periods with span aggregates (store
//             invariant 15), one ReadPage folds the stretch's aggregates
//             instead of its frames: the same figures, from a few hundred
//             rows for a week; only the partial periods at the edges, and
//             periods the aggregates do not describe exactly, are read as
//             frames.
// Summarize() runs every step at once. The frames still queued for the
// store's batched writer are read from its memory where the range reaches
// them (RingStore's *WithQueued reads): a summary commits nothing.
//
// Figures:
//   energy_mj     counter at `to` - counter at `from` (live counters where
//                 they reach, else the store's, interpolated); absent without
//                 a reading at both edges, 0 when the counter stood still.
//   avg_power_mw  energy_mj / duration for a rail with a counter, else the
//                 mean of its power samples.
//   peak_power_mw the highest power sample in the range: the live rail-rate
//                 samples and the frames'; absent when none fell in it.
//   temps         first reading (absent when unread: never the minimum),
//                 min, max; non-constant thermal zones only.
//   loads         GPUs' and engines' mean and highest load over the samples
//                 that had one (a missing reading is left out, never 0).
//
// Thread safety: a Summarizer is used by one thread at a time; the store,
// live counters and rate log it reads are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/collect/live_energy.h"
#include "daemon/sampler.h"
#include "daemon/store/ring_store.h"
#include "daemon/summary/frame_summary.h"
#include "edgemon/model.h"
#include "edgemon/status.h"

namespace edgemon::summary {

struct SummaryOptions {
  // The configured frame period (gaps are counted against it, or against
  // the history's own spacing where that is longer).
  int64_t frame_period_ns = 1'000'000'000;
  // The configured rail sampling rate (0: rails only with frames); a short
  // range's note says what is coarse accordingly.
  uint32_t energy_rate_hz = 0;
  // Frames read per ReadPage.
  uint32_t page_frames = 2000;
  // Read every frame of the range, never the span aggregates (the reference
  // the aggregates are checked against).
  bool raw_frames = false;
  // The sampler's live energy counters (null: the store only).
  const LiveEnergy* live_energy = nullptr;
  // The effective rail sampling rates that held over a range (the sampler's
  // rate log; empty: unknown).
  std::function<std::optional<RateRange>(int64_t from_ns, int64_t to_ns)> rates;
};

// A range wider than this past now is noted (requested_to_ns): a client's
// clock a little ahead of the daemon's is not worth a remark.
inline constexpr int64_t kClockSkewNs = 1'000'000'000;

class Summarizer {
 public:
  // Begins a summary of [from_ns, to_ns) as of `now_ns` (the daemon's now,
  // on the frames' timeline). The caller has refused from_ns >= to_ns and a
  // range starting after now. Errors: the store could not list its channels
  // (StoreFailure).
  static Result<Summarizer> Start(store::RingStore& store, const SummaryOptions& options,
                                  int64_t from_ns, int64_t to_ns, int64_t now_ns);

  // Whether every page has been read (the summary is complete).
  bool done() const { return done_; }
  // Reads and folds the next page of frames; a store read error ends the
  // summary with that error.
  Status ReadPage();
  // The summary so far (complete once done()).
  const Summary& summary() const { return summary_; }
  Summary&& Take() && { return std::move(summary_); }

 private:
  Summarizer(store::RingStore& store, SummaryOptions options)
      : store_(&store), options_(std::move(options)) {}
  Status Begin(int64_t from_ns, int64_t to_ns, int64_t now_ns);
  // A rail energy counter at t: the live counters where they reach, else the store.
  std::optional<double> CounterAt(const std::string& key, int64_t t_ns) const;
  // The raw tier's power peaks and averages, the frames' figures and the notes.
  void Finish();
  RailSummary& Rail(const Channel& c);
  // Splits [from, to) into stretches read as frames and stretches of spans.
  void Plan(int64_t from, int64_t to);
  Status ReadSpans(const std::vector<store::Span>& spans);

  // A stretch of the range: frames read in pages, or consecutive spans.
  struct Part {
    int64_t from_ns = 0;
    int64_t to_ns = 0;
    std::vector<store::Span> spans;  // empty: read as frames
  };

  store::RingStore* store_;
  SummaryOptions options_;
  Summary summary_;
  bool done_ = false;
  int64_t next_from_ = 0;
  std::vector<Part> parts_;
  std::vector<bool> zone_;   // by column: a temperature whose first reading is reported
  size_t part_ = 0;          // the part ReadPage reads next
  bool in_raw_ = false;      // peaks and temperatures from the pages (else from the rollup tier)
  uint64_t bad_frames_ = 0;  // frames in the range whose data did not decode, left out
  std::vector<std::string> keys_;  // the columns read from frames
  std::optional<FrameSummary> frames_;
  std::map<std::string, Channel> power_;           // rail power channels by key (in_raw_)
  std::map<std::string, std::string> energy_key_;  // rail name -> energy channel key
  std::map<std::string, size_t> rail_index_;       // rail name -> index in summary_.rails
};

// Start, then ReadPage until done.
Result<Summary> Summarize(store::RingStore& store, const SummaryOptions& options, int64_t from_ns,
                          int64_t to_ns, int64_t now_ns);

// A rail energy counter (mJ) at t: `live` where its readings reach (null:
// none), else the store's, interpolated; nullopt without a reading around t.
std::optional<double> EnergyCounterAt(store::RingStore& store, const LiveEnergy* live,
                                      const std::string& key, int64_t t_ns);

// A store read or write that failed (ring_store.h).
using store::StoreFailure;

}  // namespace edgemon::summary
