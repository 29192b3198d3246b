// The service's Worker: order, the bounded backlog, Stop draining the queue.
// No timing: the running job is held on a latch the test opens.
#include "daemon/service/worker.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>
#include <vector>

namespace edgemon::service {
namespace {

TEST(Worker, RunsJobsInOrderOnOneThread) {
  Worker w(16);
  std::vector<int> order;  // touched by the worker thread only until Stop
  std::thread::id first;
  bool one_thread = true;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(w.Post([&, i] {
      if (i == 0) first = std::this_thread::get_id();
      one_thread = one_thread && std::this_thread::get_id() == first;
      order.push_back(i);
    }));
  }
  w.Stop();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_TRUE(one_thread);
  EXPECT_NE(first, std::this_thread::get_id());
}

TEST(Worker, RefusesBeyondTheBacklogAndAfterStop) {
  Worker w(2);
  std::promise<void> started, release;
  auto release_f = release.get_future().share();
  ASSERT_TRUE(w.Post([&] {
    started.set_value();
    release_f.wait();
  }));
  started.get_future().wait();  // the running job no longer counts
  int ran = 0;
  EXPECT_TRUE(w.Post([&] { ++ran; }));
  EXPECT_TRUE(w.Post([&] { ++ran; }));
  EXPECT_FALSE(w.Post([&] { ++ran; }));  // 2 waiting: full
  release.set_value();
  w.Stop();  // runs the two queued jobs first
  EXPECT_EQ(ran, 2);
  EXPECT_FALSE(w.Post([&] { ++ran; }));
  w.Stop();  // twice is harmless
  EXPECT_EQ(ran, 2);
}

// One caller floods the backlog: it stops at its quarter, another caller and
// root are still queued, and a slot freed by a run is the flooder's again.
TEST(Worker, EachCallerGetsAQuarterOfTheBacklogAndRootItsOwn) {
  Worker w(8);
  std::promise<void> started, release;
  auto release_f = release.get_future().share();
  ASSERT_TRUE(w.Post([&] {
    started.set_value();
    release_f.wait();
  }));
  started.get_future().wait();
  const runtime::Principal flooder{"uid:1000", false}, other{"uid:1001", false},
      root{"uid:0", true};
  int ran = 0;
  EXPECT_TRUE(w.Post([&] { ++ran; }, flooder));
  EXPECT_TRUE(w.Post([&] { ++ran; }, flooder));
  EXPECT_FALSE(w.Post([&] { ++ran; }, flooder));  // 2 of 8: its share
  EXPECT_TRUE(w.Post([&] { ++ran; }, other));
  EXPECT_TRUE(w.Post([&] { ++ran; }, other));
  EXPECT_TRUE(w.Post([&] { ++ran; }));  // anonymous: the total only
  EXPECT_TRUE(w.Post([&] { ++ran; }));
  EXPECT_TRUE(w.Post([&] { ++ran; }));
  EXPECT_TRUE(w.Post([&] { ++ran; }));
  EXPECT_FALSE(w.Post([&] { ++ran; }, {"uid:1002", false}));  // 8 waiting: full
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(w.Post([&] { ++ran; }, root)) << i;
  EXPECT_FALSE(w.Post([&] { ++ran; }, root));  // root's own 8, full too
  release.set_value();
  w.Stop();
  EXPECT_EQ(ran, 16);
}

TEST(Worker, DestructorDrainsTheQueue) {
  int ran = 0;
  {
    Worker w(8);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(w.Post([&] { ++ran; }));
  }
  EXPECT_EQ(ran, 5);
}

}  // namespace
}  // namespace edgemon::service
