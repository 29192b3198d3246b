// WatchHub's sampler side and stream slots under concurrency, without gRPC
// streams, so ThreadSanitizer sees only edgemon's own threads
// (scripts/sanitize.sh tsan runs these).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "watch_hub.h"

namespace edgemon::service {
namespace {

Inventory OneChannel() {
  Inventory inv;
  Channel c;
  c.id = 0;
  c.kind = Kind::kRail;
  c.name = "VDD_IN";
  c.field = Field::kPower;
  c.unit = UnitOf(Field::kPower);
  inv.channels.push_back(c);
  return inv;
}

TEST(WatchHub, ReadersSeeWholeFramesInOrderWhileTheSamplerPublishes) {
  WatchHub hub(8);
  const Inventory inv = OneChannel();
  constexpr int kFrames = 5000;
  std::atomic<bool> done{false};
  std::atomic<int> out_of_order{0}, torn{0}, reads{0};

  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      int64_t last = -1;
      while (!done.load()) {
        Snapshot s = hub.Latest();
        if (!s.frame) continue;
        ++reads;
        // A frame and its inventory arrive together, and seq matches the value.
        if (!s.inventory || s.frame->values.size() != 1 || !s.frame->values[0] ||
            static_cast<int64_t>(s.frame->seq) != *s.frame->values[0]) {
          ++torn;
        }
        int64_t v = s.frame->values.empty() || !s.frame->values[0] ? -1 : *s.frame->values[0];
        if (v < last) ++out_of_order;
        last = v;
      }
    });
  }
  std::atomic<int> over_cap{0};
  std::thread slots([&] {
    while (!done.load()) {
      std::vector<bool> got;
      for (int i = 0; i < 10; ++i) got.push_back(hub.TryAcquireStream());
      if (hub.active_streams() > hub.max_streams()) ++over_cap;
      for (bool g : got) {
        if (g) hub.ReleaseStream();
      }
    }
  });

  // At least kFrames, and on until the readers have overlapped with publishing
  // (on a busy machine they may start late).
  int published = 0;
  for (int i = 0; i < kFrames || (reads.load() < 300 && i < 50'000'000); ++i) {
    Frame f;
    f.seq = static_cast<uint64_t>(i);
    f.values = {i};
    hub.OnFrame(inv, 1, f);
    published = i + 1;
  }
  Snapshot last = hub.Latest();
  done = true;
  for (auto& t : readers) t.join();
  slots.join();
  hub.Shutdown();

  ASSERT_TRUE(last.frame);
  EXPECT_EQ(last.frame->seq, static_cast<uint64_t>(published - 1));
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(out_of_order.load(), 0);
  EXPECT_EQ(over_cap.load(), 0);
  EXPECT_EQ(hub.active_streams(), 0u);
  EXPECT_GE(reads.load(), 300);
}

TEST(WatchHub, StreamSlotsStopAtTheCapAndComeBack) {
  WatchHub hub(3);
  EXPECT_TRUE(hub.TryAcquireStream());
  EXPECT_TRUE(hub.TryAcquireStream());
  EXPECT_TRUE(hub.TryAcquireStream());
  EXPECT_FALSE(hub.TryAcquireStream());
  hub.ReleaseStream();
  EXPECT_TRUE(hub.TryAcquireStream());
  EXPECT_EQ(hub.active_streams(), 3u);
  for (int i = 0; i < 3; ++i) hub.ReleaseStream();
  hub.Shutdown();
}

}  // namespace
}  // namespace edgemon::service
