// Prometheus remote-write 1.0 (a snappy-compressed protobuf WriteRequest):
// edgemond's channels under the names /metrics gives them
// (metrics::PlanSeries), each sample at its frame's own time, with the
// board's identity as external labels.
//
// Thread safety: a SeriesLabels is immutable after construction; the free
// functions are pure.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/metrics/exposition.h"
#include "daemon/push/types.h"
#include "edgemon/channel.h"

namespace edgemon::push {

using LabelSet = std::vector<std::pair<std::string, std::string>>;

// One series to send: labels sorted by name with __name__ first, samples
// (milliseconds since the epoch, value) in time order.
struct Series {
  LabelSet labels;
  std::vector<std::pair<int64_t, double>> samples;
};

// The external labels of a board: job="edgemon", instance=<hostname>,
// machine_id, board_model, soc, l4t where known, then the configured labels
// (a configured name replaces a built-in one).
LabelSet ExternalLabels(const Identity& identity);

// Sorts `labels` into remote-write order: __name__ first, then by name; a
// name given twice keeps its first value.
void SortLabels(LabelSet& labels);

// The label sets of an inventory's exported channels: the series' own
// labels and __name__, then the external labels for names the series does
// not carry, sorted.
class SeriesLabels {
 public:
  SeriesLabels(const Inventory& inventory, const LabelSet& external);
  struct Entry {
    ChannelId id = 0;
    metrics::Scale scale = metrics::Scale::kOne;
    LabelSet labels;
  };
  const std::vector<Entry>& entries() const { return entries_; }
  // Labels of any other series (name and own labels) with the external ones.
  LabelSet With(std::string_view name, LabelSet own) const;

 private:
  LabelSet external_;
  std::vector<Entry> entries_;
};

// One series per exported channel with a value in any of `frames` (values
// indexed by the inventory the SeriesLabels was built from), a sample per
// present value at the frame's realtime_ns in ms. Absent values are left
// out, never sent as 0.
std::vector<Series> FrameSeries(const SeriesLabels& plan, std::span<const Frame> frames);

// Closed windows as one sample each per rail with an energy:
// edgemon_window_energy_joules{window=<label>, window_id=<id>, rail=<rail>}
// at the window's end.
std::vector<Series> WindowSeries(const SeriesLabels& plan, std::span<const WindowEnergy> windows);

// The serialized (uncompressed) WriteRequest of `series`.
std::string EncodeWriteRequest(std::span<const Series> series);
// Snappy block format, as remote-write's Content-Encoding: snappy means.
std::string SnappyCompress(std::string_view data);
size_t SampleCount(std::span<const Series> series);

}  // namespace edgemon::push
