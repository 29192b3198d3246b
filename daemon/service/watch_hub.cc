#include "daemon/service/watch_hub.h"

#include "daemon/runtime/thread_name.h"
#include "proto/convert.h"

namespace edgemon::service {
bool WatchSpacing::Due(uint64_t seq, int64_t scheduled_ns) const {
  if (!sent_any_) return true;
  if (interval_ns_ == 0) return seq != last_seq_;
  return scheduled_ns - last_due_ns_ >= interval_ns_;
}

void WatchSpacing::Sent(uint64_t seq, int64_t scheduled_ns) {
  sent_any_ = true;
  last_due_ns_ = scheduled_ns;
  last_seq_ = seq;
}

class WatchHub::Watcher final : public grpc::ServerWriteReactor<v1::Frame>,
                                public WatchHub::Subscriber {
 public:
  Watcher(WatchHub& hub, int64_t interval_ns, std::vector<ChannelId> subset,
          std::function<void()> on_done, runtime::Principal who)
      : hub_(hub),
        spacing_(interval_ns),
        subset_(std::move(subset)),
        on_done_(std::move(on_done)),
        who_(std::move(who)) {}

  // Whose stream slot it holds.
  const runtime::Principal& who() const { return who_; }

  // Called by the hub under subs_mu_.
  void Offer(const Snapshot& s) override {
    std::lock_guard lock(mu_);
    if (finish_called_ || !s.frame || !spacing_.Due(s.frame->seq, s.scheduled_ns)) return;
    if (write_pending_) {
      if (pending_.frame) hub_.coalesced_.fetch_add(1);
      pending_ = s;
      return;
    }
    WriteLocked(s);
  }

  void HubStopping() override {
    std::lock_guard lock(mu_);
    MaybeFinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "edgemond is stopping"));
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    write_pending_ = false;
    if (!ok) {
      MaybeFinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
      return;
    }
    if (pending_.frame && !finish_called_) {
      Snapshot s = std::move(pending_);
      pending_ = {};
      WriteLocked(s);
    }
  }

  void OnCancel() override {
    std::lock_guard lock(mu_);
    MaybeFinishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    hub_.Unregister(this);
    if (on_done_) on_done_();
    delete this;
  }

 private:
  void WriteLocked(const Snapshot& s) {
    wire::ToProto(*s.frame, subset_, s.generation, &out_);
    spacing_.Sent(s.frame->seq, s.scheduled_ns);
    write_pending_ = true;
    hub_.sent_.fetch_add(1);
    StartWrite(&out_);
  }

  void MaybeFinishLocked(const grpc::Status& status) {
    if (finish_called_) return;
    finish_called_ = true;
    pending_ = {};
    Finish(status);
  }

  WatchHub& hub_;
  WatchSpacing spacing_;  // guarded by mu_
  const std::vector<ChannelId> subset_;
  const std::function<void()> on_done_;
  const runtime::Principal who_;
  std::mutex mu_;
  v1::Frame out_;     // guarded by mu_; alive while a write is in flight
  Snapshot pending_;  // guarded by mu_
  bool write_pending_ = false;
  bool finish_called_ = false;
};

namespace {

// A reactor that finishes at once (stream refused or hub shut down).
class Refused final : public grpc::ServerWriteReactor<v1::Frame> {
 public:
  Refused(const grpc::Status& s, std::function<void()> on_done) : on_done_(std::move(on_done)) {
    Finish(s);
  }
  void OnDone() override {
    if (on_done_) on_done_();
    delete this;
  }

 private:
  const std::function<void()> on_done_;
};

}  // namespace

WatchHub::WatchHub(size_t max_streams) : max_streams_(max_streams) {
  dispatcher_ = std::thread([this] { Dispatch(); });
  runtime::NameThread(dispatcher_, "watch-hub");
}

WatchHub::~WatchHub() {
  Shutdown();
}

void WatchHub::OnFrame(const Inventory& inventory, uint64_t generation, const Frame& frame) {
  OnScheduledFrame(inventory, generation, frame, frame.boottime_ns);
}

void WatchHub::OnScheduledFrame(const Inventory& inventory, uint64_t generation, const Frame& frame,
                                int64_t scheduled_ns) {
  OnSharedFrame(inventory, generation, std::make_shared<const Frame>(frame), scheduled_ns);
}

void WatchHub::OnSharedFrame(const Inventory& inventory, uint64_t generation,
                             const std::shared_ptr<const Frame>& frame, int64_t scheduled_ns) {
  if (!inventory_ || generation != generation_) {
    inventory_ = std::make_shared<const Inventory>(inventory);
    generation_ = generation;
  }
  Snapshot s{inventory_, generation, frame, scheduled_ns};
  {
    std::lock_guard lock(latest_mu_);
    latest_ = std::move(s);
    ++published_;
  }
  if (watching_.load(std::memory_order_relaxed) > 0) latest_cv_.notify_one();
}

Snapshot WatchHub::Latest() const {
  std::lock_guard lock(latest_mu_);
  return latest_;
}

Status WatchHub::AcquireStream(const runtime::Principal& who) {
  std::lock_guard lock(slots_mu_);
  if (who.privileged) {
    if (root_slots_ >= max_streams_) {
      return Status::ResourceExhausted("root holds " + std::to_string(root_slots_) +
                                       " open streams (limit " + std::to_string(max_streams_) +
                                       "); close one and retry");
    }
    ++root_slots_;
  } else {
    if (!who.key.empty()) {
      const auto it = slots_held_.find(who.key);
      const size_t held = it == slots_held_.end() ? 0 : it->second;
      if (held >= stream_share()) {
        return Status::ResourceExhausted(
            "you hold " + std::to_string(held) + " open streams (at most " +
            std::to_string(stream_share()) + " per user, a quarter of daemon.max_streams " +
            std::to_string(max_streams_) + "); close one and retry");
      }
    }
    if (shared_slots_ >= max_streams_) {
      return Status::ResourceExhausted("too many open streams (limit " +
                                       std::to_string(max_streams_) + "); close one and retry");
    }
    ++shared_slots_;
    if (!who.key.empty()) ++slots_held_[who.key];
  }
  active_streams_.fetch_add(1);
  return Status::Ok();
}

void WatchHub::ReleaseStream(const runtime::Principal& who) {
  std::lock_guard lock(slots_mu_);
  if (who.privileged) {
    if (root_slots_ > 0) --root_slots_;
  } else {
    if (shared_slots_ > 0) --shared_slots_;
    if (auto it = slots_held_.find(who.key); it != slots_held_.end() && --it->second == 0) {
      slots_held_.erase(it);
    }
  }
  active_streams_.fetch_sub(1);
}

grpc::ServerWriteReactor<v1::Frame>* WatchHub::StartWatch(int64_t interval_ns,
                                                          std::vector<ChannelId> subset,
                                                          std::function<void()> on_done,
                                                          runtime::Principal who) {
  std::lock_guard lock(subs_mu_);
  if (shut_down_) {
    ReleaseStream(who);
    return new Refused(grpc::Status(grpc::StatusCode::UNAVAILABLE, "edgemond is stopping"),
                       std::move(on_done));
  }
  auto* w = new Watcher(*this, interval_ns, std::move(subset), std::move(on_done), std::move(who));
  subs_.insert(w);
  watching_.store(subs_.size(), std::memory_order_relaxed);
  // The newest frame at once, so a client sees data without waiting a period.
  Snapshot s = Latest();
  w->Offer(s);
  return w;
}

void WatchHub::Unregister(Watcher* w) {
  Unsubscribe(w);
  ReleaseStream(w->who());
}

bool WatchHub::Subscribe(Subscriber* sub) {
  std::lock_guard lock(subs_mu_);
  if (shut_down_) return false;
  subs_.insert(sub);
  watching_.store(subs_.size(), std::memory_order_relaxed);
  sub->Offer(Latest());
  return true;
}

void WatchHub::Unsubscribe(Subscriber* sub) {
  std::lock_guard lock(subs_mu_);
  subs_.erase(sub);
  watching_.store(subs_.size(), std::memory_order_relaxed);
}

size_t WatchHub::watchers() const {
  std::lock_guard lock(subs_mu_);
  return subs_.size();
}

void WatchHub::Dispatch() {
  uint64_t seen = 0;
  for (;;) {
    Snapshot s;
    {
      std::unique_lock lock(latest_mu_);
      latest_cv_.wait(lock, [&] {
        return stop_ || (published_ != seen && watching_.load(std::memory_order_relaxed) > 0);
      });
      if (stop_) return;
      seen = published_;
      s = latest_;
    }
    dispatches_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(subs_mu_);
    for (Subscriber* w : subs_) w->Offer(s);
  }
}

void WatchHub::Shutdown() {
  {
    std::lock_guard lock(subs_mu_);
    if (!shut_down_) {
      shut_down_ = true;
      for (Subscriber* w : subs_) w->HubStopping();
    }
  }
  {
    std::lock_guard lock(latest_mu_);
    stop_ = true;
  }
  latest_cv_.notify_one();
  if (dispatcher_.joinable()) dispatcher_.join();
}

}  // namespace edgemon::service
