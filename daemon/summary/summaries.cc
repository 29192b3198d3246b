#include "daemon/summary/summaries.h"

namespace edgemon::summary {

int64_t Summaries::frame_period_ns() const {
  return options_.sampler ? options_.sampler->frame_period_ns() : options_.frame_period_ns;
}

SummaryOptions Summaries::MakeOptions() const {
  SummaryOptions o;
  o.frame_period_ns = frame_period_ns();
  o.energy_rate_hz = options_.energy_rate_hz;
  o.page_frames = options_.page_frames;
  o.live_energy = options_.live_energy;
  if (const Sampler* sampler = options_.sampler) {
    o.rates = [sampler](int64_t from, int64_t to) { return sampler->RatesBetween(from, to); };
  }
  return o;
}

Result<Summary> Summaries::OfWindow(const Window& w, int64_t now_ns) const {
  auto run = StartWindow(w, now_ns);
  if (!run.ok()) return run.status();
  while (!run->done()) {
    if (Status read = run->ReadPage(); !read.ok()) return read;
  }
  return std::move(*run).Take();
}

}  // namespace edgemon::summary
