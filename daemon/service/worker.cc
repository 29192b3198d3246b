#include "daemon/service/worker.h"
#include "daemon/thread_name.h"

namespace edgemon::service {

Worker::Worker(size_t max_queued, const char* name) : max_queued_(max_queued) {
  thread_ = std::thread([this] {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  });
  NameThread(thread_, name);
}

Worker::~Worker() {
  Stop();
}

bool Worker::Post(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (stop_ || jobs_.size() >= max_queued_) return false;
    jobs_.push_back(std::move(job));
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
