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
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "daemon/runtime/principal.h"

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
  bool Post(std::function<void()> job) { return Post(std::move(job), runtime::Principal{}); }
  // Queues `who`'s job: callers other than root share `max_queued`, each at
  // most a quarter of it (its share), so one user's flood leaves others room;
  // root's jobs have `max_queued` of their own. An empty key counts against
  // the total only. False beyond, or once stopped.
  bool Post(std::function<void()> job, const runtime::Principal& who);
  // Runs what is queued, then joins the thread; later Posts return false.
  void Stop();

 private:
  struct Job {
    std::function<void()> run;
    runtime::Principal who;
  };
  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;                     // guarded by mu_
  size_t shared_queued_ = 0;                 // guarded by mu_: jobs of callers other than root
  size_t root_queued_ = 0;                   // guarded by mu_
  std::map<std::string, size_t> queued_by_;  // guarded by mu_: by principal key
  bool stop_ = false;                        // guarded by mu_
  std::thread thread_;
};

}  // namespace edgemon::service
