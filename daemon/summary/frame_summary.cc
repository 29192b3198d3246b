#include "daemon/summary/frame_summary.h"

#include <algorithm>
#include <cmath>

#include "edgemon/checked.h"

namespace edgemon::summary {

bool IsClock(const Channel& c) {
  return c.field == Field::kFreq &&
         (c.kind == Kind::kCpu || c.kind == Kind::kGpu || c.kind == Kind::kEmc);
}

bool IsZoneTemp(const Channel& c) {
  return c.kind == Kind::kThermal && c.field == Field::kTemp && !c.Has(kFlagConstant);
}

FrameSummary::FrameSummary(std::vector<store::StoredChannel> columns, int64_t frame_period_ns)
    : columns_(std::move(columns)),
      period_ns_(frame_period_ns),
      stats_(columns_.size()),
      residency_(columns_.size()) {}

void FrameSummary::Add(const std::vector<Frame>& page) {
  if (page.empty()) return;
  if (!period_known_) {
    period_known_ = true;
    if (page.size() > 2) {
      std::vector<int64_t> dts;
      for (size_t i = 1; i < page.size(); ++i) {
        dts.push_back(SubSaturating(page[i].realtime_ns, page[i - 1].realtime_ns));
      }
      std::nth_element(dts.begin(), dts.begin() + static_cast<long>(dts.size() / 2), dts.end());
      period_ns_ = std::max(period_ns_, dts[dts.size() / 2]);
    }
  }
  for (const Frame& f : page) {
    if (last_) {
      const Frame& a = *last_;
      // Stored times never go back (store invariant 11), but may be further
      // apart than int64 reaches.
      const int64_t dt = SubSaturating(f.realtime_ns, a.realtime_ns);
      if (f.seq > a.seq + 1) {
        gaps_ += f.seq - a.seq - 1;
      } else if (period_ns_ > 0 && dt > AddSaturating(period_ns_, period_ns_ / 2)) {
        gaps_ += static_cast<uint64_t>(
                     std::llround(static_cast<double>(SpanNs(a.realtime_ns, f.realtime_ns)) /
                                  static_cast<double>(period_ns_))) -
                 1;
      }
    }
    ++samples_;
    for (size_t c = 0; c < f.values.size() && c < columns_.size(); ++c) {
      if (!f.values[c]) continue;
      const int64_t v = *f.values[c];
      Column& s = stats_[c];
      if (s.count == 0) {
        s.min = s.max = v;
        s.first = v;
      } else {
        s.min = std::min(s.min, v);
        s.max = std::max(s.max, v);
      }
      s.sum += static_cast<double>(v);
      ++s.count;
      if (IsClock(columns_[c].channel)) ++residency_[c][v];
    }
    last_ = f;
  }
}

std::optional<FrameSummary::Column> FrameSummary::column(size_t i) const {
  if (i >= stats_.size() || stats_[i].count == 0) return std::nullopt;
  return stats_[i];
}

void FrameSummary::Fill(Summary* out, bool temps) const {
  for (size_t c = 0; c < columns_.size(); ++c) {
    const Channel& ch = columns_[c].channel;
    const Column& s = stats_[c];
    if (s.count == 0) continue;
    if (temps && IsZoneTemp(ch)) {
      out->temps.push_back({ch.name, s.first, s.min, s.max});
    }
  }
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (!IsClock(columns_[c].channel) || stats_[c].count == 0) continue;
    FreqResidency& r = out->residency.emplace_back();
    r.name = columns_[c].channel.name;
    // residency_ is a map by frequency: the shares come out sorted.
    for (const auto& [khz, count] : residency_[c]) {
      r.khz_share.emplace_back(khz,
                               static_cast<double>(count) / static_cast<double>(stats_[c].count));
    }
  }
  out->samples = samples_;
  out->gaps = gaps_;
}

}  // namespace edgemon::summary
