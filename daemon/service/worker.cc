#include "daemon/service/worker.h"

#include <algorithm>

#include "daemon/runtime/thread_name.h"

namespace edgemon::service {

Worker::Worker(size_t max_queued, const char* name) : max_queued_(max_queued) {
  thread_ = std::thread([this] {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
        if (job.who.privileged) {
          --root_queued_;
        } else {
          --shared_queued_;
          if (auto it = queued_by_.find(job.who.key); it != queued_by_.end() && --it->second == 0) {
            queued_by_.erase(it);
          }
        }
      }
      job.run();
    }
  });
  runtime::NameThread(thread_, name);
}

Worker::~Worker() {
  Stop();
}

bool Worker::Post(std::function<void()> job, const runtime::Principal& who) {
  {
    std::lock_guard lock(mu_);
    if (stop_) return false;
    if (who.privileged) {
      if (root_queued_ >= max_queued_) return false;
      ++root_queued_;
    } else {
      const size_t share = std::max<size_t>(1, max_queued_ / 4);
      auto it = who.key.empty() ? queued_by_.end() : queued_by_.find(who.key);
      if (shared_queued_ >= max_queued_ || (it != queued_by_.end() && it->second >= share)) {
        return false;
      }
      ++shared_queued_;
      if (!who.key.empty()) ++queued_by_[who.key];
    }
    jobs_.push_back(Job{std::move(job), who});
  }
  cv_.notify_one();
  return true;
}

void Worker::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

}  // namespace edgemon::service
