// WindowBook (daemon/windows/window_book.h): the open windows' lifecycle over
// a real RingStore in a temp file, on a fake monotonic clock and timeline.
#include "daemon/windows/window_book.h"

#include <gtest/gtest.h>

#include <memory>

#include "tests/support/fake_clock.h"
#include "tests/support/temp_tree.h"

namespace edgemon::windows {
namespace {

constexpr int64_t kSec = 1'000'000'000;

const runtime::Principal kAlice{"uid:1001", false};
const runtime::Principal kBob{"uid:1002", false};
const runtime::Principal kRoot{"uid:0", true};

class WindowBookTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override {
    book_.reset();
    if (store_) (void)store_->Close();
  }

  // A store whose windows table holds 128 rows (max_bytes / 8 KiB): the book
  // keeps at most 128 open, 32 per user.
  void Open() {
    store::RingStoreOptions o;
    o.max_bytes = 128 * 8192;
    auto st = store::RingStore::Open(tmp_.root() + "/edgemon.db", o);
    ASSERT_TRUE(st.ok()) << st.status().message();
    store_ = std::move(st.value());
    Reopen();
  }
  // A new book over the same store (edgemond restarted).
  void Reopen() {
    book_ = std::make_unique<WindowBook>(
        *store_, clock_, [this] { return now_; }, [this] { ++first_leases_; });
  }

  store::Window Begin(const runtime::Principal& who, std::optional<int64_t> lease = {}) {
    auto w = book_->Begin("run", Stamp{now_, std::nullopt}, lease, who);
    EXPECT_TRUE(w.ok()) << w.status().message();
    now_ += kSec / 10;
    return w.ok() ? *w : store::Window{};
  }
  bool Abandoned(int64_t id) {
    auto w = store_->GetWindow(id);
    return w.ok() && *w && (*w)->abandoned && (*w)->end_ns.has_value();
  }

  testing::TempTree tmp_;
  testing::FakeClock clock_;
  std::unique_ptr<store::RingStore> store_;
  std::unique_ptr<WindowBook> book_;
  int64_t now_ = 1'700'000'000 * kSec;
  int first_leases_ = 0;
};

TEST_F(WindowBookTest, QuotasFollowTheStoresTable) {
  EXPECT_EQ(book_->max_open(), 128u);
  EXPECT_EQ(book_->max_per_principal(), 32u);
}

TEST_F(WindowBookTest, BeginRenewAndEndByTheirOwner) {
  const store::Window w = Begin(kAlice, 5 * kSec);
  EXPECT_EQ(w.owner, kAlice.key);
  EXPECT_EQ(first_leases_, 1);
  EXPECT_EQ(book_->leased(), 1u);
  EXPECT_EQ(book_->Renew(w.id, now_, kBob).status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(book_->Renew(w.id, now_, kAlice).ok());
  EXPECT_TRUE(book_->Renew(w.id, now_, kRoot).ok());  // root may act on anyone's
  EXPECT_EQ(book_->End(w.id, now_, {}, {}, kBob, {}).status().code(),
            StatusCode::kPermissionDenied);
  int64_t asked_start = 0, asked_end = 0;
  auto done = book_->End(w.id, now_ + kSec, {}, {}, kAlice, [&](int64_t s, int64_t e) {
    asked_start = s;
    asked_end = e;
    WindowResult r;
    r.items = 42;
    return r;
  });
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_EQ(done->start_ns, w.start_ns);
  EXPECT_EQ(*done->end_ns, now_ + kSec);
  EXPECT_EQ(asked_start, w.start_ns);
  EXPECT_EQ(asked_end, now_ + kSec);
  auto stored = store_->GetWindow(w.id);
  ASSERT_TRUE(stored.ok() && *stored);
  EXPECT_EQ((*stored)->result.items, 42);
  EXPECT_EQ(book_->leased(), 0u);
  EXPECT_EQ(book_->End(w.id, now_, {}, {}, kAlice, {}).status().code(),
            StatusCode::kFailedPrecondition);  // already ended
  EXPECT_EQ(book_->Renew(w.id, now_, kAlice).status().code(), StatusCode::kNotFound);
  const store::Window mark = Begin(kAlice);
  EXPECT_EQ(book_->Renew(mark.id, now_, kAlice).status().code(),
            StatusCode::kFailedPrecondition);  // no lease to renew
}

TEST_F(WindowBookTest, StampedEdgesMustLieInsideTheWindow) {
  const store::Window w = Begin(kAlice);
  EXPECT_EQ(
      book_->End(w.id, now_, Stamp{w.start_ns - 1, std::nullopt}, {}, kAlice, {}).status().code(),
      StatusCode::kInvalidArgument);  // an end before the start
  EXPECT_EQ(
      book_->End(w.id, now_, {}, Stamp{w.start_ns - 1, std::nullopt}, kAlice, {}).status().code(),
      StatusCode::kInvalidArgument);  // the work began before the window
  EXPECT_EQ(book_
                ->End(w.id, now_, Stamp{w.start_ns + 10, std::nullopt},
                      Stamp{w.start_ns + 20, std::nullopt}, kAlice, {})
                .status()
                .code(),
            StatusCode::kInvalidArgument);  // the work began after its end
  auto done = book_->End(w.id, now_, Stamp{w.start_ns + 20, std::nullopt},
                         Stamp{w.start_ns + 10, std::nullopt}, kAlice, {});
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_EQ(done->start_ns, w.start_ns + 10);
  EXPECT_EQ(*done->end_ns, w.start_ns + 20);
}

// Each stamp is put on the timeline by itself, so stamps read microseconds
// apart can be placed a hair reversed; their CLOCK_BOOTTIME readings keep
// them in order. Readings out of order are still refused.
TEST_F(WindowBookTest, StampsReadInOrderOnBoottimeStayInOrder) {
  constexpr int64_t kBegan = 500 * kSec;  // the begin's CLOCK_BOOTTIME
  auto begin = [&] {
    auto w = book_->Begin("run", Stamp{now_, kBegan}, {}, kAlice);
    EXPECT_TRUE(w.ok()) << w.status().message();
    now_ += kSec / 10;
    return w.ok() ? *w : store::Window{};
  };
  // A start and an end read after the begin, both placed 5 us before it:
  // the window runs from its recorded start, not refused.
  store::Window w = begin();
  auto done = book_->End(w.id, now_, Stamp{w.start_ns - 5'000, kBegan + 30'000},
                         Stamp{w.start_ns - 5'000, kBegan + 10'000}, kAlice, {});
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_EQ(done->start_ns, w.start_ns);
  EXPECT_EQ(*done->end_ns, w.start_ns);
  // A start read before its end but placed 2 us after it: from the end.
  w = begin();
  done = book_->End(w.id, now_, Stamp{w.start_ns + 100'000, kBegan + 100'000},
                    Stamp{w.start_ns + 102'000, kBegan + 99'990}, kAlice, {});
  ASSERT_TRUE(done.ok()) << done.status().message();
  EXPECT_EQ(done->start_ns, w.start_ns + 100'000);
  EXPECT_EQ(*done->end_ns, w.start_ns + 100'000);
  // Read out of order: refused as before.
  w = begin();
  auto refused = [&](std::optional<Stamp> end, std::optional<Stamp> start) {
    return book_->End(w.id, now_, end, start, kAlice, {}).status().code() ==
           StatusCode::kInvalidArgument;
  };
  EXPECT_TRUE(refused({}, Stamp{w.start_ns - 5'000, kBegan - 1}));  // a start before the begin
  EXPECT_TRUE(refused(Stamp{w.start_ns - 5'000, kBegan - 1}, {}));  // an end before the begin
  EXPECT_TRUE(refused(Stamp{w.start_ns + 100, kBegan + 100},
                      Stamp{w.start_ns + 200, kBegan + 200}));  // the start after the end
  // A window loaded from the store (begun before a restart, maybe another
  // boot) has no reading to order by.
  Reopen();
  EXPECT_TRUE(refused({}, Stamp{w.start_ns - 5'000, kBegan + 10}));
}

TEST_F(WindowBookTest, ALeakedMarkNeverLocksItsHolderOut) {
  // Alice fills her quota with marks never ended; each later one closes her
  // own oldest as abandoned; Bob is untouched.
  const store::Window bobs = Begin(kBob);
  std::vector<int64_t> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(Begin(kAlice).id);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(Abandoned(ids[static_cast<size_t>(i)])) << i;
  EXPECT_FALSE(Abandoned(ids[8]));
  EXPECT_FALSE(Abandoned(bobs.id));
  EXPECT_EQ(book_->open(), 33u);
}

TEST_F(WindowBookTest, OnlyLiveLeasesAreRefused) {
  for (int i = 0; i < 32; ++i) Begin(kAlice, 60 * kSec);
  auto w = book_->Begin("one more", Stamp{now_, std::nullopt}, 60 * kSec, kAlice);
  EXPECT_EQ(w.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(w.status().message().find("32 per user"), std::string::npos) << w.status().message();
  EXPECT_TRUE(
      book_->Begin("root's", Stamp{now_, std::nullopt}, {}, kRoot).ok());  // root has no quota
}

TEST_F(WindowBookTest, AFullTableTakesFromItsBiggestHolder) {
  // Four users hold 32 each (the table's 128); a fifth is served at the cost
  // of the biggest holder's oldest window.
  std::vector<int64_t> firsts;
  for (int u = 0; u < 4; ++u) {
    const runtime::Principal who{"uid:" + std::to_string(2000 + u), false};
    for (int i = 0; i < 32; ++i) {
      const int64_t id = Begin(who, 60 * kSec).id;
      if (i == 0) firsts.push_back(id);
    }
  }
  EXPECT_EQ(book_->open(), 128u);
  auto w = book_->Begin("newcomer", Stamp{now_, std::nullopt}, 60 * kSec, kBob);
  ASSERT_TRUE(w.ok()) << w.status().message();
  // All hold 32: the first of them loses its oldest (closed as abandoned,
  // then trimmed from the full table as its oldest closed row).
  const runtime::Principal first{"uid:2000", false};
  EXPECT_EQ(book_->Renew(firsts[0], now_, first).status().code(), StatusCode::kNotFound);
  for (size_t u = 1; u < 4; ++u) {
    const runtime::Principal who{"uid:" + std::to_string(2000 + u), false};
    EXPECT_TRUE(book_->Renew(firsts[u], now_, who).ok()) << u;
  }
  EXPECT_EQ(book_->open(), 128u);
}

TEST_F(WindowBookTest, SweepClosesExpiredLeasesAndWeekOldMarks) {
  const store::Window leased = Begin(kAlice, 5 * kSec);
  const store::Window mark = Begin(kBob);
  clock_.Advance(4 * kSec);
  book_->Sweep();
  EXPECT_FALSE(Abandoned(leased.id));
  clock_.Advance(2 * kSec);
  book_->Sweep();
  EXPECT_TRUE(Abandoned(leased.id));
  EXPECT_FALSE(Abandoned(mark.id));
  now_ = mark.start_ns + WindowBook::kUnleasedMaxAgeNs + kSec;
  book_->Sweep();
  EXPECT_TRUE(Abandoned(mark.id));
  EXPECT_EQ(book_->End(leased.id, now_, {}, {}, kAlice, {}).status().code(),
            StatusCode::kFailedPrecondition);  // abandoned
}

TEST_F(WindowBookTest, OpenWindowsAndTheirAgesSurviveARestart) {
  const store::Window leased = Begin(kAlice, 5 * kSec);
  const store::Window mark = Begin(kBob);
  Reopen();
  EXPECT_EQ(book_->open(), 2u);
  EXPECT_EQ(book_->leased(), 1u);
  // The mark still ages from its start, not from the restart.
  now_ = mark.start_ns + WindowBook::kUnleasedMaxAgeNs + kSec;
  book_->Sweep();
  EXPECT_TRUE(Abandoned(mark.id));
  EXPECT_FALSE(Abandoned(leased.id));  // one lease from the restart
}

}  // namespace
}  // namespace edgemon::windows
