// Summaries: the one way edgemond summarizes a window or a range. main builds
// it once with the store, the sampler (its frame period and rail-rate log),
// the live energy counters and the configured rates; the API service, the
// live page and the push shippers all ask it, so a window's energy is the
// same figure on every surface (one set of SummaryOptions, one mapping from
// a window to its range).
//
// Thread safety: const and thread-safe; every Summarizer it starts is used
// by one thread at a time (summarize.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "daemon/collect/live_energy.h"
#include "daemon/sampler.h"
#include "daemon/store/ring_store.h"
#include "daemon/summary/summarize.h"
#include "edgemon/model.h"
#include "edgemon/status.h"

namespace edgemon::summary {

class Summaries {
 public:
  struct Options {
    // The frame period and the rail-rate log (null: frame_period_ns, and the
    // rates that held are unknown).
    const Sampler* sampler = nullptr;
    int64_t frame_period_ns = 1'000'000'000;
    // The configured rail sampling rate (0: rails only with frames).
    uint32_t energy_rate_hz = 0;
    // The sampler's live energy counters (null: the store only).
    const LiveEnergy* live_energy = nullptr;
    // Frames read per ReadPage.
    uint32_t page_frames = 2000;
  };

  Summaries(store::RingStore& store, Options options) : store_(store), options_(options) {}

  // The range a window covers: its start to its end, or to now while it is
  // open; never empty.
  static std::pair<int64_t, int64_t> WindowRange(const Window& w, int64_t now_ns) {
    return {w.start_ns, NonEmptyEnd(w.start_ns, w.end_ns.value_or(now_ns))};
  }

  // Begins a summary of [from_ns, to_ns) as of now_ns, read page by page: the
  // caller paces the pages (the API's worker yields between them, the live
  // page checks its deadline). The caller has refused from >= to and a range
  // starting after now.
  Result<Summarizer> Start(int64_t from_ns, int64_t to_ns, int64_t now_ns) const {
    return Summarizer::Start(store_, MakeOptions(), from_ns, to_ns, now_ns);
  }
  Result<Summarizer> StartWindow(const Window& w, int64_t now_ns) const {
    auto [from, to] = WindowRange(w, now_ns);
    return Start(from, to, now_ns);
  }
  // The whole summary at once (a window that has ended, for a push).
  Result<Summary> OfWindow(const Window& w, int64_t now_ns) const;

  // A rail energy counter (mJ) at t: the live counters where they reach,
  // else the store's, interpolated; nullopt without a reading around t.
  std::optional<double> CounterAt(const std::string& key, int64_t t_ns) const {
    return EnergyCounterAt(store_, options_.live_energy, key, t_ns);
  }

  int64_t frame_period_ns() const;
  store::RingStore& store() const { return store_; }

 private:
  SummaryOptions MakeOptions() const;

  store::RingStore& store_;
  const Options options_;
};

}  // namespace edgemon::summary
