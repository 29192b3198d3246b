#include "daemon/summary/frame_summary.h"

#include <algorithm>
#include <cmath>

#include "edgemon/checked.h"

namespace edgemon::summary {

bool IsZoneTemp(const Channel& c) {
  return c.kind == Kind::kThermal && c.field == Field::kTemp && !c.Has(kFlagConstant);
}

bool IsUnitLoad(const Channel& c) {
  return c.field == Field::kLoad && (c.kind == Kind::kGpu || c.kind == Kind::kEngine);
}

FrameSummary::FrameSummary(std::vector<store::StoredChannel> columns, int64_t frame_period_ns,
                           bool period_from_first_page)
    : columns_(std::move(columns)),
      configured_ns_(frame_period_ns),
      period_ns_(frame_period_ns),
      period_from_first_page_(period_from_first_page),
      stats_(columns_.size()),
      residency_(columns_.size()) {}

int64_t FrameSummary::PeriodOf(int64_t frame_period_ns, const std::vector<Frame>& first_page) {
  std::vector<int64_t> times;
  times.reserve(first_page.size());
  for (const Frame& f : first_page) times.push_back(f.realtime_ns);
  return PeriodOf(frame_period_ns, times);
}

int64_t FrameSummary::PeriodOf(int64_t frame_period_ns, const std::vector<int64_t>& first_page_ns) {
  if (first_page_ns.size() <= 2) return frame_period_ns;
  std::vector<int64_t> dts;
  for (size_t i = 1; i < first_page_ns.size(); ++i) {
    dts.push_back(SubSaturating(first_page_ns[i], first_page_ns[i - 1]));
  }
  std::nth_element(dts.begin(), dts.begin() + static_cast<long>(dts.size() / 2), dts.end());
  return std::max(frame_period_ns, dts[dts.size() / 2]);
}

void FrameSummary::Step(uint64_t seq, int64_t realtime_ns) {
  if (last_) {
    const auto [a_seq, a_ns] = *last_;
    // Stored times never go back (store invariant 11), but may be further
    // apart than int64 reaches.
    if (seq > a_seq + 1) {
      holes_ += seq - a_seq - 1;
    } else if (SubSaturating(realtime_ns, a_ns) >
               AddSaturating(std::max<int64_t>(configured_ns_, 0),
                             std::max<int64_t>(configured_ns_, 0) / 2)) {
      long_steps_.push_back(SpanNs(a_ns, realtime_ns));
    }
  }
  last_ = {seq, realtime_ns};
}

uint64_t FrameSummary::gaps() const {
  uint64_t gaps = holes_;
  if (period_ns_ <= 0) return gaps;
  const int64_t limit = AddSaturating(period_ns_, period_ns_ / 2);
  for (uint64_t span : long_steps_) {
    if (std::min<uint64_t>(span, INT64_MAX) <= static_cast<uint64_t>(limit)) continue;
    gaps += static_cast<uint64_t>(
                std::llround(static_cast<double>(span) / static_cast<double>(period_ns_))) -
            1;
  }
  return gaps;
}

void FrameSummary::AddSpans(const std::vector<store::Span>& spans,
                            const std::vector<std::optional<store::SpanTotal>>& totals,
                            const std::vector<std::optional<int64_t>>& firsts) {
  for (const store::Span& sp : spans) {
    Step(sp.first_seq, sp.first_ns);
    holes_ += sp.holes;
    last_ = {sp.last_seq, sp.last_ns};
    samples_ += sp.frames;
  }
  for (size_t c = 0; c < columns_.size() && c < totals.size(); ++c) {
    if (!totals[c] || totals[c]->count == 0) continue;
    const store::SpanTotal& t = *totals[c];
    Column& s = stats_[c];
    if (s.count == 0) {
      s.min = t.min;
      s.max = t.max;
      s.first = c < firsts.size() ? firsts[c] : std::nullopt;
    } else {
      s.min = std::min(s.min, t.min);
      s.max = std::max(s.max, t.max);
    }
    s.sum += t.sum;
    s.count += t.count;
    for (const auto& [v, n] : t.values) residency_[c][v] += n;
  }
}

void FrameSummary::Add(const std::vector<Frame>& page) {
  if (page.empty()) return;
  if (!period_known_ && period_from_first_page_) SetPeriod(PeriodOf(configured_ns_, page));
  for (const Frame& f : page) {
    Step(f.seq, f.realtime_ns);
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
  for (size_t c = 0; c < columns_.size(); ++c) {
    const Channel& ch = columns_[c].channel;
    if (!IsUnitLoad(ch) || stats_[c].count == 0) continue;
    out->loads.push_back({std::string(ToString(ch.kind)), ch.name, stats_[c].avg(), stats_[c].max});
  }
  out->samples = samples_;
  out->gaps = gaps();
}

}  // namespace edgemon::summary
