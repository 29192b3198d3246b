// A synthetic history in a real store, read by the summarizer's tests and
// the API service's: frames 1 s apart on the wall clock (from t0) and on
// CLOCK_BOOTTIME (from 1000 s), with values whose summary is known.
#pragma once

#include <cstdint>
#include <functional>

#include "daemon/store/ring_store.h"

namespace edgemon::testing {

// Frame `i`: at t0 + i s (boottime 1000 + i s), seq `seq` + i, `channels`
// values all absent.
inline Frame HistoryFrame(uint64_t seq, int64_t t0, int i, size_t channels) {
  constexpr int64_t kSec = 1'000'000'000;
  Frame f;
  f.seq = seq + static_cast<uint64_t>(i);
  f.realtime_ns = t0 + i * kSec;
  f.boottime_ns = 1000 * kSec + i * kSec;
  f.values.resize(channels);
  return f;
}

// The channels WriteKnownHistory fills (ids of the store's inventory).
struct KnownHistoryIds {
  ChannelId energy = 0;  // a rail's energy counter
  ChannelId power = 0;   // the same rail's power
  ChannelId temp = 0;    // a thermal zone
  ChannelId gpu = 0;     // the GPU's frequency
};

// Appends 100 frames 1 s apart from t0, frame 15 missing, and flushes: the
// counter at 5000 mJ a second (5 W), power 4000 + (i % 10) * 200 mW, the
// zone at 40000 + 100 i mC, the GPU at 1300500 kHz 3 frames in 10, else
// 624750. `more` may fill other values of frame i.
inline Status WriteKnownHistory(store::RingStore& store, size_t channels,
                                const KnownHistoryIds& ids, int64_t t0,
                                const std::function<void(int i, Frame&)>& more = {}) {
  const uint64_t seq = store.next_seq();
  for (int i = 0; i < 100; ++i) {
    if (i == 15) continue;
    Frame f = HistoryFrame(seq, t0, i, channels);
    f.values[ids.energy] = 5000LL * i;
    f.values[ids.power] = 4000 + (i % 10) * 200;
    f.values[ids.temp] = 40000 + 100 * i;
    f.values[ids.gpu] = i % 10 < 3 ? 1300500 : 624750;
    if (more) more(i, f);
    store.Append(f);
  }
  return store.Flush();
}

}  // namespace edgemon::testing
