// Worker: one thread that runs posted jobs in order, with a bounded backlog.
// The service runs its store and file-system work on workers, off gRPC's
// threads.
//
// Thread safety: Post from any thread; Stop (also run by the destructor)
// once.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace edgemon::service {

class Worker {
 public:
  // `name`: the thread's (NameThread), 15 bytes at most.
  explicit Worker(size_t max_queued, const char* name = "worker");
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Queues `job`. False when `max_queued` jobs already wait (the running one
  // not counted) or the worker stopped.
  bool Post(std::function<void()> job);
  // Runs what is queued, then joins the thread; later Posts return false.
  void Stop();

 private:
  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  bool stop_ = false;                       // guarded by mu_
  std::thread thread_;
};

}  // namespace edgemon::service
