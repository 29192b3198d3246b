// LastRise and LastRises (daemon/summary/last_rise.h): the rise found in a
// downsampled series, then the frame in a real RingStore in a temp file.
#include "daemon/summary/last_rise.h"

#include <gtest/gtest.h>

#include <memory>

#include "tests/support/inventory.h"
#include "tests/support/known_history.h"
#include "tests/support/temp_tree.h"

namespace edgemon::summary {
namespace {

constexpr int64_t kSec = 1'000'000'000;

TEST(LastRise, OfADownsampledCounter) {
  auto b = [](int64_t min, int64_t max, int64_t count = 1) {
    return Bucket{0, min, static_cast<double>(min + max) / 2, max, count};
  };
  EXPECT_EQ(LastRise({}), std::nullopt);
  EXPECT_EQ(LastRise({b(27, 27), b(27, 27)}), std::nullopt);   // never rose
  EXPECT_EQ(LastRise({b(27, 29), b(29, 29), b(29, 29)}), 0u);  // rose inside the first
  EXPECT_EQ(LastRise({b(27, 27), b(29, 29), b(29, 29)}), 1u);  // between two buckets
  // An empty bucket between does not hide the rise; the last rise wins.
  EXPECT_EQ(LastRise({b(1, 2), b(0, 0, 0), b(3, 3), b(3, 3)}), 2u);
}

class LastRisesTest : public ::testing::Test {
 protected:
  enum : ChannelId { kAlarm, kQuiet, kThrottles };

  void SetUp() override {
    auto st = store::RingStore::Open(tmp_.root() + "/edgemon.db", store::RingStoreOptions{});
    ASSERT_TRUE(st.ok()) << st.status().message();
    store_ = std::move(st.value());
    using testing::AddChannel;
    AddChannel(inv_, Kind::kEvent, "oc1", Field::kEvents).flags = kFlagCounter;
    AddChannel(inv_, Kind::kEvent, "oc2", Field::kEvents).flags = kFlagCounter;
    AddChannel(inv_, Kind::kEvent, "gpu", Field::kEvents).flags = kFlagCounter;
    for (Channel& c : inv_.channels) c.unit = UnitOf(c.field);
    store_->SetInventory(inv_);
  }
  void TearDown() override {
    if (store_) (void)store_->Close();
  }

  // Frames 1 s apart over `n` s from t0: oc1 at 7, rising to 9 at frame
  // `alarm` (and nowhere else); oc2 at 3 throughout; the throttle count
  // rising by one every frame.
  void Write(int n, int alarm) {
    const uint64_t seq = store_->next_seq();
    for (int i = 0; i < n; ++i) {
      Frame f = testing::HistoryFrame(seq, t0_, i, inv_.channels.size());
      f.values[kAlarm] = i < alarm ? 7 : 9;
      f.values[kQuiet] = 3;
      f.values[kThrottles] = 100 + i;
      store_->Append(f);
    }
    ASSERT_TRUE(store_->Flush().ok());
  }

  std::string Key(ChannelId id) const { return inv_.channels[id].Key(); }

  testing::TempTree tmp_;
  std::unique_ptr<store::RingStore> store_;
  Inventory inv_;
  const int64_t t0_ = 1'700'000'000LL * kSec;
};

TEST_F(LastRisesTest, TheFrameThatFirstShowedTheNewestCount) {
  Write(300, 137);  // the rise in the third minute, between two frames of it
  const int64_t now = t0_ + 300 * kSec;
  auto got = LastRises(*store_, {Key(kAlarm), Key(kQuiet), Key(kThrottles)}, now);
  ASSERT_EQ(got.size(), 2u);  // oc2 never rose: not listed
  EXPECT_EQ(got[0], std::make_pair(Key(kAlarm), t0_ + 137 * kSec));
  EXPECT_EQ(got[1], std::make_pair(Key(kThrottles), t0_ + 299 * kSec));  // the newest frame
}

TEST_F(LastRisesTest, ARiseAtAMinutesFirstFrame) {
  Write(300, 120);  // a rise between the second minute's last frame and the third's first
  auto got = LastRises(*store_, {Key(kAlarm)}, t0_ + 300 * kSec);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].second, t0_ + 120 * kSec);
}

TEST_F(LastRisesTest, OnlyWithinTheDayBeforeNow) {
  Write(300, 137);
  // A day and a bit later, the rise is out of reach; the store's frames are
  // still there, but nothing is reported that the day did not see.
  const int64_t later = t0_ + kLastRiseLookbackNs + 200 * kSec;
  EXPECT_TRUE(LastRises(*store_, {Key(kAlarm)}, later).empty());
}

TEST_F(LastRisesTest, AnUnknownKeyIsLeftOut) {
  Write(120, 60);
  auto got = LastRises(*store_, {"event/nosuch/events", Key(kAlarm)}, t0_ + 120 * kSec);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, Key(kAlarm));
}

}  // namespace
}  // namespace edgemon::summary
