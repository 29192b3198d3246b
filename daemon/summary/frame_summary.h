// FrameSummary: the parts of a Summary read from stored frames (power peaks
// and averages, temperatures, clock residency, samples and gaps), folded
// from pages of frames so a long range is read in bounded pages and the
// reader can yield between them. A pure accumulator: no store, no gRPC
// (summarize.h runs it over the store).
//
// Feed Add() the pages of one range in time order (each page oldest first,
// continuing the previous one); results do not depend on where pages split.
// Stretches of the range the store describes with span aggregates (I15 in
// ring_store.h) are fed with AddSpans() in their place, giving the same
// figures. The frame period used for gaps is the configured one, or the
// median spacing of the range's first page of frames when that is longer
// (history written at another rate): Add() takes it from its first page,
// or SetPeriod() gives it (PeriodOf that page) when stretches were fed as
// spans. Gaps longer than the configured period allows wait for it.
//
// Thread safety: none (one summarize run owns it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "daemon/store/ring_store.h"
#include "edgemon/model.h"

namespace edgemon::summary {

// The channels a summary reports from frames: the clock residency of a
// CPU, GPU or EMC frequency, the temperatures of a thermal zone that is
// not constant, and the load of a GPU or a hardware engine.
using store::IsClock;
bool IsZoneTemp(const Channel& c);
bool IsUnitLoad(const Channel& c);

class FrameSummary {
 public:
  // `columns`: the channels of the pages' values (FrameSet::channels).
  // `period_from_first_page`: the first page Add() gets is the range's
  // first page (else SetPeriod gives the period).
  FrameSummary(std::vector<store::StoredChannel> columns, int64_t frame_period_ns,
               bool period_from_first_page = true);

  void Add(const std::vector<Frame>& page);
  // Consecutive spans (adjacent, no frame between them) and, per column, the
  // store's totals over them; `firsts[c]`: column c's first value in them
  // (needed only where Fill reports it: zone temperatures).
  void AddSpans(const std::vector<store::Span>& spans,
                const std::vector<std::optional<store::SpanTotal>>& totals,
                const std::vector<std::optional<int64_t>>& firsts);
  // The period gaps are counted against, from the range's first page.
  static int64_t PeriodOf(int64_t frame_period_ns, const std::vector<Frame>& first_page);
  // The same from the page's frame times, oldest first.
  static int64_t PeriodOf(int64_t frame_period_ns, const std::vector<int64_t>& first_page_ns);
  // Whether gaps() needs SetPeriod (a step longer than the configured
  // period allows was seen and no first page was read).
  bool needs_period() const { return !period_known_ && !long_steps_.empty(); }
  void SetPeriod(int64_t period_ns) {
    period_ns_ = period_ns;
    period_known_ = true;
  }

  struct Column {
    int64_t count = 0;  // present values
    int64_t min = 0;
    int64_t max = 0;
    double sum = 0;
    std::optional<int64_t> first;  // the range's first present value
    double avg() const { return count ? sum / static_cast<double>(count) : 0; }
  };
  // Statistics of column `i`; nullopt when it had no value in the range.
  std::optional<Column> column(size_t i) const;
  uint64_t samples() const { return samples_; }
  uint64_t gaps() const;

  // Adds temperatures (non-constant thermal zones) when `temps`, and the
  // clock residency of CPU/GPU/EMC frequency columns, the mean and peak
  // load of GPUs and engines, samples and gaps.
  void Fill(Summary* out, bool temps) const;

 private:
  // The step from the previous frame to one at (seq, realtime_ns).
  void Step(uint64_t seq, int64_t realtime_ns);

  std::vector<store::StoredChannel> columns_;
  int64_t configured_ns_;
  int64_t period_ns_;
  bool period_from_first_page_;
  bool period_known_ = false;
  std::vector<Column> stats_;
  std::vector<std::map<int64_t, uint64_t>> residency_;  // by column (freq columns only)
  // The previous frame (seq, realtime_ns).
  std::optional<std::pair<uint64_t, int64_t>> last_;
  uint64_t samples_ = 0;
  uint64_t holes_ = 0;  // seqs missing between consecutive frames
  // Spans between frames with consecutive seqs longer than 1.5 configured
  // periods: gaps once the period is known.
  std::vector<uint64_t> long_steps_;
};

}  // namespace edgemon::summary
