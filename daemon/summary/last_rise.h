// When event counters (over-current alarms, throttle counts) last rose: what
// `edgemon now` lists under its diagnostics, answered by the daemon from its
// store in one request (GetLatest with last_rises) instead of the client
// scanning a day of history channel by channel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/store/ring_store.h"
#include "edgemon/model.h"

namespace edgemon::summary {

// How far back a last rise is looked for, and the step that finds its minute.
inline constexpr int64_t kLastRiseLookbackNs = 86'400'000'000'000;  // a day
inline constexpr int64_t kLastRiseStepNs = 60'000'000'000;          // a minute

// The last rise of a counter in a downsampled series (buckets in time
// order): the index of the last bucket with a value above every value before
// it, or that rose within itself (min < max); nullopt when it never rose in
// the series. A counter that went back (a reboot) is stored continuing, so a
// rise is an event.
std::optional<size_t> LastRise(const std::vector<Bucket>& buckets);

// For each of `keys` (counter channels' keys) that rose within the day
// before now_ns: the realtime of the stored frame that first showed its
// newest count (a one-minute step over the day finds the minute, that
// minute's raw frames the frame; the minute's start where its raw frames
// were retired). A key that did not rise, or that the store cannot read, is
// left out: no rise is reported that was not seen. In the order of `keys`.
std::vector<std::pair<std::string, int64_t>> LastRises(store::RingStore& store,
                                                       const std::vector<std::string>& keys,
                                                       int64_t now_ns);

}  // namespace edgemon::summary
