// FrameSummary: the parts of a Summary read from stored frames (power peaks
// and averages, temperatures, clock residency, samples and gaps), folded
// from pages of frames so a long range is read in bounded pages and the
// reader can yield between them. A pure accumulator: no store, no gRPC
// (summarize.h runs it over the store).
//
// Feed Add() the pages of one range in time order (each page oldest first,
// continuing the previous one); results do not depend on where pages split.
// The frame period used for gaps is the configured one, or the median
// spacing of the first page's frames when that is longer (history written
// at another rate).
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
// CPU, GPU or EMC frequency, and the temperatures of a thermal zone that is
// not constant.
bool IsClock(const Channel& c);
bool IsZoneTemp(const Channel& c);

class FrameSummary {
 public:
  // `columns`: the channels of the pages' values (FrameSet::channels).
  FrameSummary(std::vector<store::StoredChannel> columns, int64_t frame_period_ns);

  void Add(const std::vector<Frame>& page);

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
  uint64_t gaps() const { return gaps_; }

  // Adds temperatures (non-constant thermal zones) when `temps`, and the
  // clock residency of CPU/GPU/EMC frequency columns, samples and gaps.
  void Fill(Summary* out, bool temps) const;

 private:
  std::vector<store::StoredChannel> columns_;
  int64_t period_ns_;
  bool period_known_ = false;
  std::vector<Column> stats_;
  std::vector<std::map<int64_t, uint64_t>> residency_;  // by column (freq columns only)
  std::optional<Frame> last_;                           // the previous page's last frame
  uint64_t samples_ = 0;
  uint64_t gaps_ = 0;
};

}  // namespace edgemon::summary
