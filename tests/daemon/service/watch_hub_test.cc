// WatchHub's sampler side and stream slots under concurrency, without gRPC
// streams, so ThreadSanitizer sees only edgemon's own threads
// (scripts/sanitize.sh tsan runs these); and a stream's spacing rule on the
// frames a sampler takes on fake time.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/sampler.h"
#include "daemon/service/watch_hub.h"
#include "tests/support/fake_clock.h"
#include "tests/support/temp_tree.h"

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

// With nobody watching, a published frame wakes no thread (the dispatcher
// slept through every frame); Latest() still has the newest.
TEST(WatchHub, NobodyWatchingWakesNoThread) {
  WatchHub hub(8);
  const Inventory inv = OneChannel();
  for (int i = 0; i < 200; ++i) {
    Frame f;
    f.seq = static_cast<uint64_t>(i);
    f.values = {Value{int64_t{i}}};
    hub.OnFrame(inv, 1, f);
    if (i % 20 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(hub.dispatches(), 0u);
  ASSERT_TRUE(hub.Latest().frame);
  EXPECT_EQ(hub.Latest().frame->seq, 199u);
}

// One uid holds at most a quarter of the slots; others share the rest;
// root has max_streams of its own, so a full table never refuses it.
TEST(WatchHub, StreamSlotsAreSharedPerCallerAndRootAlwaysGetsThrough) {
  WatchHub hub(8);
  const runtime::Principal a{"uid:1000", false}, b{"uid:1001", false}, root{"uid:0", true};
  EXPECT_EQ(hub.stream_share(), 2u);
  EXPECT_TRUE(hub.AcquireStream(a).ok());
  EXPECT_TRUE(hub.AcquireStream(a).ok());
  Status over = hub.AcquireStream(a);
  EXPECT_EQ(over.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(over.message().find("at most 2 per user"), std::string::npos) << over.message();
  for (int i = 0; i < 6; ++i) {
    EXPECT_TRUE(
        hub.AcquireStream(i < 2 ? b : runtime::Principal{"uid:" + std::to_string(2000 + i)}).ok())
        << i;
  }
  Status full = hub.AcquireStream({"uid:3000", false});
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("limit 8"), std::string::npos) << full.message();
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(hub.AcquireStream(root).ok()) << i;
  EXPECT_FALSE(hub.AcquireStream(root).ok());
  EXPECT_EQ(hub.active_streams(), 16u);
  hub.ReleaseStream(a);
  EXPECT_TRUE(hub.AcquireStream(a).ok());  // a's own slot back
  hub.ReleaseStream(a);
  hub.ReleaseStream(a);
  hub.ReleaseStream(b);
  hub.ReleaseStream(b);
  for (int i = 2; i < 6; ++i) hub.ReleaseStream({"uid:" + std::to_string(2000 + i)});
  for (int i = 0; i < 8; ++i) hub.ReleaseStream(root);
  EXPECT_EQ(hub.active_streams(), 0u);
  hub.Shutdown();
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

constexpr int64_t kMs = 1'000'000;

// Fake time whose wake-ups are late by a repeating pattern of delays, as a
// loaded machine's are.
class LateWakeClock final : public Clock {
 public:
  int64_t MonotonicNs() override { return fake.MonotonicNs(); }
  int64_t BoottimeNs() override { return fake.BoottimeNs(); }
  int64_t RealtimeNs() override { return fake.RealtimeNs(); }
  void WaitUntil(int64_t deadline_ns, std::unique_lock<std::mutex>& lock,
                 std::condition_variable& cv) override {
    fake.WaitUntil(deadline_ns, lock, cv);
    fake.Advance(kLate[n_++ % std::size(kLate)]);
  }
  testing::FakeClock fake;

 private:
  static constexpr int64_t kLate[] = {0, 7 * kMs, 2 * kMs, 0, 9 * kMs, 1 * kMs};
  size_t n_ = 0;
};

struct Sched {
  Frame frame;
  int64_t scheduled_ns = 0;
};

// Every frame the sampler publishes (live ones too); stops after `n` frames.
class Tap final : public FrameSink {
 public:
  Tap(Sampler*& sampler, size_t n) : sampler_(sampler), n_(n) {}
  void OnFrame(const Inventory&, uint64_t, const Frame&) override {}
  void OnScheduledFrame(const Inventory&, uint64_t, const Frame& f, int64_t scheduled) override {
    frames.push_back({f, scheduled});
    if (frames.size() >= n_) sampler_->Stop();
  }
  bool WantsLive() const override { return true; }
  std::vector<Sched> frames;

 private:
  Sampler*& sampler_;
  size_t n_;
};

// The frames a stream with `interval_ns` sends out of a sampler's frames
// (frame period `period_ns`, a live lease at `live_ns` when non-zero).
std::vector<Sched> Delivered(int64_t period_ns, int64_t live_ns, int64_t interval_ns,
                             size_t frames) {
  LateWakeClock clock;
  testing::TempTree tree;
  RootedSysFs fs{tree.root()};
  Collection collection(fs, {}, CollectOptions{}, nullptr);
  collection.Discover();
  SamplerOptions o;
  o.frame_period_ns = period_ns;
  Sampler sampler(collection, clock, o);
  Sampler* raw = &sampler;
  Tap tap(raw, frames);
  sampler.AddSink(&tap);
  if (live_ns > 0)
    (void)sampler.Lease(0, LeaseKind::kLive, live_ns, Sampler::kNoExpiry, runtime::Principal{});
  sampler.Run();
  WatchSpacing spacing(interval_ns);
  std::vector<Sched> sent;
  for (const Sched& f : tap.frames) {
    if (!spacing.Due(f.frame.seq, f.scheduled_ns)) continue;
    spacing.Sent(f.frame.seq, f.scheduled_ns);
    sent.push_back(f);
  }
  return sent;
}

// 100 ms frames, 1000 ms interval: every tenth frame, never 900 ms apart,
// whatever the wake-up jitter.
TEST(WatchSpacing, NeverCloserThanTheIntervalNorAPeriodFurther) {
  auto sent = Delivered(100 * kMs, 0, 1000 * kMs, 101);
  ASSERT_EQ(sent.size(), 11u);
  for (size_t i = 1; i < sent.size(); ++i) {
    EXPECT_EQ(sent[i].scheduled_ns - sent[i - 1].scheduled_ns, 1000 * kMs) << i;
    int64_t dt = sent[i].frame.boottime_ns - sent[i - 1].frame.boottime_ns;
    EXPECT_GT(dt, 1000 * kMs - 10 * kMs) << i;  // the wake-up lateness alone
    EXPECT_LT(dt, 1000 * kMs + 10 * kMs) << i;
  }
}

// A 500 ms watch of 1000 ms frames with its live lease: every 500 ms.
TEST(WatchSpacing, LiveFramesGiveTheWatchItsInterval) {
  auto sent = Delivered(1000 * kMs, 500 * kMs, 500 * kMs, 21);
  ASSERT_EQ(sent.size(), 21u);
  for (size_t i = 1; i < sent.size(); ++i) {
    EXPECT_EQ(sent[i].scheduled_ns - sent[i - 1].scheduled_ns, 500 * kMs) << i;
  }
}

// An interval that does not divide the frame period: never closer than it,
// never more than one sampling period further.
TEST(WatchSpacing, UnevenIntervalsStayWithinOnePeriod) {
  auto sent = Delivered(1000 * kMs, 300 * kMs, 300 * kMs, 40);
  ASSERT_GE(sent.size(), 20u);
  for (size_t i = 1; i < sent.size(); ++i) {
    int64_t dt = sent[i].scheduled_ns - sent[i - 1].scheduled_ns;
    EXPECT_GE(dt, 300 * kMs) << i;
    EXPECT_LT(dt, 600 * kMs) << i;
  }
  // And with interval 0, stored frames only (one per new seq).
  auto stored = Delivered(1000 * kMs, 300 * kMs, 0, 40);
  for (size_t i = 1; i < stored.size(); ++i) {
    EXPECT_EQ(stored[i].frame.seq, stored[i - 1].frame.seq + 1);
  }
}

}  // namespace
}  // namespace edgemon::service
