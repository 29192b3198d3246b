#include "daemon/summary/summarize.h"

#include <algorithm>

#include "edgemon/checked.h"

namespace edgemon::summary {
namespace {

// Appends `n` to a "; "-separated note.
void AddNote(std::string& note, const std::string& n) {
  note = note.empty() ? n : note + "; " + n;
}

}  // namespace

Result<Summarizer> Summarizer::Start(store::RingStore& store, const SummaryOptions& options,
                                     int64_t from_ns, int64_t to_ns, int64_t now_ns) {
  Summarizer s(store, options);
  if (Status begun = s.Begin(from_ns, to_ns, now_ns); !begun.ok()) return begun;
  return s;
}

Result<Summary> Summarize(store::RingStore& store, const SummaryOptions& options, int64_t from_ns,
                          int64_t to_ns, int64_t now_ns) {
  auto s = Summarizer::Start(store, options, from_ns, to_ns, now_ns);
  if (!s.ok()) return s.status();
  while (!s->done()) {
    if (Status read = s->ReadPage(); !read.ok()) return read;
  }
  return std::move(*s).Take();
}

std::optional<double> EnergyCounterAt(store::RingStore& store, const LiveEnergy* live,
                                      const std::string& key, int64_t t_ns) {
  if (live) {
    if (auto v = live->CounterAt(key, t_ns)) return v;
  }
  auto v = store.CounterAtWithQueued(key, t_ns);
  return v.ok() ? *v : std::nullopt;
}

std::optional<double> Summarizer::CounterAt(const std::string& key, int64_t t_ns) const {
  return EnergyCounterAt(*store_, options_.live_energy, key, t_ns);
}

RailSummary& Summarizer::Rail(const Channel& c) {
  auto [it, added] = rail_index_.emplace(c.name, summary_.rails.size());
  if (added) {
    RailSummary& r = summary_.rails.emplace_back();
    r.name = c.name;
    r.parent = c.parent;
  }
  RailSummary& r = summary_.rails[it->second];
  r.input = r.input || c.Has(kFlagInputRail);
  return r;
}

Status Summarizer::Begin(int64_t from, int64_t to, int64_t now) {
  Summary& out = summary_;
  // Frames still queued for the batched writer are read from its memory
  // where the range reaches them (the *WithQueued reads): a summary commits
  // nothing, so a client polling "energy so far" costs no flash. Only a
  // store that has never committed a frame (the tiers' bounds below read
  // the file) commits its queue first; edgemond commits its first frame at
  // start.
  if (store_->committed_newest_ns() == INT64_MIN &&
      store_->next_seq() > store_->committed_next_seq()) {
    if (Status flushed = store_->Flush(); !flushed.ok() && !store_->damaged()) {
      return Status::Internal("summarize: storing queued frames: " + flushed.message());
    }
  }
  // Edges: up to now at the end; from the oldest data held at the start.
  if (to > now) {
    if (SubSaturating(to, now) > kClockSkewNs) out.requested_to_ns = to;
    to = NonEmptyEnd(from, now);
  }
  std::optional<int64_t> oldest;
  if (auto o = store_->OldestNs(); o.ok()) oldest = *o;
  if (options_.live_energy) {
    if (auto l = options_.live_energy->oldest_ns(); l && (!oldest || *l < *oldest)) oldest = l;
  }
  if (!oldest || *oldest >= to) {
    out.from_ns = from;
    out.to_ns = to;
    out.duration_s = DurationS(from, to);
    out.note = oldest ? "no data in this range: the oldest data held is at " +
                            std::to_string(*oldest) + " ns"
                      : "no data in this range: nothing is stored yet";
    done_ = true;
    return Status::Ok();
  }
  if (from < *oldest) {
    out.requested_from_ns = from;
    from = *oldest;
  }
  out.from_ns = from;
  out.to_ns = to;
  const double duration_s = DurationS(from, to);
  out.duration_s = duration_s;
  // The rail sampling rates that held, from the sampler's rate log.
  if (auto rates = options_.rates ? options_.rates(from, to) : std::nullopt) {
    out.min_rail_rate_hz = rates->min_hz;
    out.max_rail_rate_hz = rates->max_hz;
  }
  auto channels = store_->Channels();
  if (!channels.ok()) return StoreFailure(*store_, "summarize: " + channels.status().message());
  auto stats = store_->Stats();
  in_raw_ = stats.ok() && stats->oldest_ns && *stats->oldest_ns <= from;
  // Older than the raw tier: each power, temperature and load channel over
  // the whole range from the rollup tier, one step (two where it is wider
  // than int64), all in one read; and the temperatures' first readings,
  // from the range's first frame.
  std::map<std::string, Bucket> wholes;
  std::map<std::string, int64_t> starts;
  if (!in_raw_) {
    std::vector<std::string> keys, zones;
    for (const auto& sc : *channels) {
      const Channel& c = sc.channel;
      const bool power = c.kind == Kind::kRail && c.field == Field::kPower;
      if (power || IsZoneTemp(c) || IsUnitLoad(c)) keys.push_back(sc.key);
      if (IsZoneTemp(c)) zones.push_back(sc.key);
    }
    auto each = store_->DownsampleEachWithQueued(keys, from, to, SubSaturating(to, from),
                                                 store::Tier::kAuto);
    for (size_t i = 0; each.ok() && i < keys.size(); ++i) {
      if (!(*each)[i].empty()) wholes.emplace(keys[i], (*each)[i].front());
    }
    if (!zones.empty()) {
      auto first = store_->Range(from, to, zones, 1);
      if (first.ok() && !first->frames.empty()) {
        const Frame& f = first->frames[0];
        for (size_t i = 0; i < zones.size() && i < f.values.size(); ++i) {
          if (f.values[i]) starts.emplace(zones[i], *f.values[i]);
        }
      }
    }
  }
  auto whole = [&](const std::string& key) -> std::optional<Bucket> {
    auto it = wholes.find(key);
    if (it == wholes.end()) return std::nullopt;
    return it->second;
  };

  // Rails, in inventory order; energy from the counters, power from the
  // samples. Energy from the counters at the edges (live counters past the
  // newest stored frame); average = energy / duration; peak from the same
  // samples the counters integrated where the daemon still holds them (rail
  // rate), else from frames. No sample in the range: no peak.
  for (const auto& sc : *channels) {
    const Channel& c = sc.channel;
    if (c.kind == Kind::kRail && c.field == Field::kEnergy) {
      energy_key_[c.name] = sc.key;
      auto a = CounterAt(sc.key, from);
      auto b = CounterAt(sc.key, to);
      if (!a || !b) continue;
      RailSummary& r = Rail(c);
      r.energy_mj = *b - *a;
      r.avg_power_mw = (*b - *a) / duration_s;
    }
  }
  for (const auto& sc : *channels) {
    const Channel& c = sc.channel;
    if (c.kind == Kind::kRail && c.field == Field::kPower) {
      // In the raw tier the frames' part comes from the pages (Finish).
      auto b = in_raw_ ? std::nullopt : whole(sc.key);
      std::optional<int64_t> peak;
      if (b) peak = b->max;
      auto ek = energy_key_.find(c.name);
      if (options_.live_energy && ek != energy_key_.end()) {
        if (auto lp = options_.live_energy->PeakIn(ek->second, from, to)) {
          peak = std::max(peak.value_or(*lp), *lp);
        }
      }
      if (!b && !peak && !rail_index_.count(c.name)) continue;
      RailSummary& r = Rail(c);
      if (peak) r.peak_power_mw = *peak;
      if (ek == energy_key_.end() && b) r.avg_power_mw = b->avg;
    } else if (!in_raw_ && IsZoneTemp(c)) {
      auto b = whole(sc.key);
      if (!b) continue;
      TempSummary& t = out.temps.emplace_back();
      t.name = c.name;
      t.min_mc = b->min;
      t.max_mc = b->max;
      if (auto s = starts.find(sc.key); s != starts.end()) t.start_mc = s->second;
      // else: no first reading; left absent, never stood in for by the minimum
    } else if (!in_raw_ && IsUnitLoad(c)) {
      if (auto b = whole(sc.key))
        out.loads.push_back({std::string(ToString(c.kind)), c.name, b->avg, b->max});
    }
  }
  next_from_ = from;
  for (const auto& sc : *channels) {
    const Channel& c = sc.channel;
    const bool power = c.kind == Kind::kRail && c.field == Field::kPower;
    if ((in_raw_ && (power || IsZoneTemp(c) || IsUnitLoad(c))) || IsClock(c)) {
      keys_.push_back(sc.key);
    }
    if (in_raw_ && power) power_[sc.key] = c;
  }
  if (keys_.empty() && !channels->empty()) keys_.push_back(channels->front().key);
  if (keys_.empty()) {
    done_ = true;
    return Status::Ok();
  }
  Plan(from, to);
  std::vector<store::StoredChannel> columns;
  for (const auto& key : keys_) {
    for (const auto& sc : *channels) {
      if (sc.key != key) continue;
      zone_.push_back(in_raw_ && IsZoneTemp(sc.channel));
      columns.push_back(sc);
      columns.back().channel.id = static_cast<ChannelId>(columns.size() - 1);
    }
  }
  // The gap period comes from the frame times alone (ReadPage), whether the
  // range is read as frames or spans: the same figure either way.
  frames_.emplace(std::move(columns), options_.frame_period_ns, false);
  return Status::Ok();
}

void Summarizer::Plan(int64_t from, int64_t to) {
  parts_.clear();
  part_ = 0;
  if (!options_.raw_frames) {
    // Spans with no step that could be a gap at the configured period (nor
    // at any longer period the first page may set).
    const int64_t c = std::max<int64_t>(options_.frame_period_ns, 0);
    auto spans = store_->Spans(from, to, AddSaturating(c, c / 2));
    if (spans.ok()) {  // else: every frame is read
      int64_t cur = from;
      for (size_t i = 0; i < spans->size();) {
        size_t j = i + 1;
        while (j < spans->size() && (*spans)[j].t_ns == (*spans)[j - 1].end_ns) ++j;
        const int64_t a = (*spans)[i].t_ns, b = (*spans)[j - 1].end_ns;
        if (a > cur) parts_.push_back(Part{cur, a, {}});
        parts_.push_back(Part{
            a, b, {spans->begin() + static_cast<long>(i), spans->begin() + static_cast<long>(j)}});
        cur = b;
        i = j;
      }
      if (cur < to) parts_.push_back(Part{cur, to, {}});
    }
  }
  if (parts_.empty()) parts_.push_back(Part{from, to, {}});
  next_from_ = parts_[0].from_ns;
}

Status Summarizer::ReadSpans(const std::vector<store::Span>& spans) {
  auto totals = store_->SpanTotals(keys_, spans);
  if (!totals.ok()) return totals.status();
  // A zone's first reading, where the range had none before these spans:
  // the first frame of the first period with a value. The zones whose first
  // period is the same are read together, a few frames at a time, until
  // each has its value.
  std::vector<std::optional<int64_t>> firsts(keys_.size());
  std::map<int64_t, std::vector<size_t>> by_period;
  for (size_t c = 0; c < keys_.size() && c < totals->size(); ++c) {
    const auto& t = (*totals)[c];
    if (t && zone_[c] && !frames_->column(c)) by_period[t->first_period_ns].push_back(c);
  }
  constexpr size_t kFirstsPage = 8;
  for (const auto& [at, columns] : by_period) {
    std::vector<std::string> keys;
    for (size_t c : columns) keys.push_back(keys_[c]);
    const int64_t end = AddSaturating(at, store_->rollup_period_ns());
    size_t missing = columns.size();
    for (int64_t from = at; missing > 0 && from < end;) {
      auto page = store_->Range(from, end, keys, kFirstsPage);
      if (!page.ok()) return page.status();
      for (const Frame& f : page->frames) {
        for (size_t k = 0; k < columns.size() && k < f.values.size(); ++k) {
          if (f.values[k] && !firsts[columns[k]]) {
            firsts[columns[k]] = f.values[k];
            --missing;
          }
        }
      }
      if (!page->truncated || page->frames.empty()) break;
      from = page->frames.back().realtime_ns + 1;
    }
  }
  frames_->AddSpans(spans, *totals, firsts);
  return Status::Ok();
}

Status Summarizer::ReadPage() {
  if (done_) return Status::Ok();
  if (part_ < parts_.size()) {
    const Part& p = parts_[part_];
    if (!p.spans.empty()) {
      if (Status s = ReadSpans(p.spans); !s.ok()) {
        done_ = true;
        return StoreFailure(*store_, "summarize: " + s.message());
      }
    } else {
      auto page = store_->RangeWithQueued(next_from_, p.to_ns, keys_, options_.page_frames);
      if (!page.ok()) {
        done_ = true;
        return StoreFailure(*store_, "summarize: " + page.status().message());
      }
      bad_frames_ += page->bad_frames;
      frames_->Add(page->frames);
      if (page->truncated && !page->frames.empty()) {
        next_from_ = page->frames.back().realtime_ns + 1;
        return Status::Ok();
      }
    }
    if (++part_ < parts_.size()) {
      next_from_ = parts_[part_].from_ns;
      return Status::Ok();
    }
  }
  if (frames_->needs_period()) {
    // A step that may be a gap: the period is the median step of the
    // range's first page of stored frames, read from the time index alone
    // (decoding a page of frames cost more than the rest of a week).
    auto times =
        store_->FrameTimesWithQueued(summary_.from_ns, summary_.to_ns, options_.page_frames);
    if (!times.ok()) {
      done_ = true;
      return StoreFailure(*store_, "summarize: " + times.status().message());
    }
    frames_->SetPeriod(FrameSummary::PeriodOf(options_.frame_period_ns, *times));
  }
  Finish();
  done_ = true;
  return Status::Ok();
}

void Summarizer::Finish() {
  Summary& out = summary_;
  const FrameSummary& fs = *frames_;
  if (in_raw_) {
    // Rails' power samples: the peak (with the live rail-rate samples) and,
    // for a rail without an energy counter, the average.
    for (size_t i = 0; i < keys_.size(); ++i) {
      auto col = fs.column(i);
      auto it = power_.find(keys_[i]);
      if (!col || it == power_.end()) continue;
      const Channel& c = it->second;
      RailSummary& r = Rail(c);
      r.peak_power_mw = r.peak_power_mw ? std::max(*r.peak_power_mw, col->max) : col->max;
      if (!energy_key_.count(c.name)) r.avg_power_mw = col->avg();
    }
  }
  fs.Fill(&out, in_raw_);
  if (fs.samples() < 10) {
    // Energy comes from counters integrated at the rail rate (the report
    // states that rate once); what is read from frames is coarse here.
    std::string n = std::to_string(fs.samples());
    out.note = options_.energy_rate_hz > 0
                   ? "short range: " + n + " frames; temperatures and clock residency are coarse"
                   : "short range: " + n +
                         " frames; energy, averages and edges are uncertain at this "
                         "sampling rate";
  }
  // Frames that could not be read (store invariant 14) are left out, and said so.
  if (bad_frames_ > 0) {
    out.bad_frames = bad_frames_;
    AddNote(out.note, std::to_string(bad_frames_) +
                          " stored frame(s) in this range could not be decoded and were left out");
  }
  // Wall-clock steps inside the range (store invariant 11): its wall-clock
  // span is not elapsed time.
  if (auto jumps = store_->ClockJumps(out.from_ns, out.to_ns); jumps.ok() && !jumps->empty()) {
    int64_t stepped = 0;
    for (const auto& j : *jumps) {
      stepped = AddSaturating(stepped, SubSaturating(j.new_offset_ns, j.old_offset_ns));
    }
    AddNote(out.note, "the wall clock stepped " + std::to_string(jumps->size()) +
                          " time(s) in this range (by " + std::to_string(stepped / 1'000'000) +
                          " ms in all); durations and rates across a step are uncertain");
  }
}

}  // namespace edgemon::summary
