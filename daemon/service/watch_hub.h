// WatchHub: fans the sampler's frames out to live Watch streams.
//
// DESIGN NOTE
// ===========
//
// The sampler must never wait on a client (sampler.h, invariant 4). OnFrame,
// on the sampler thread, only copies the frame into a new immutable
// snapshot, swaps it into `latest_` under a mutex held for a pointer swap,
// and wakes the hub's dispatcher thread. The dispatcher offers the snapshot
// to every registered stream; a stream encodes and starts a write only when
// it has no write in flight, so a slow or never-reading client holds at most
// one frame being written plus one pending frame: delivery is latest-wins and
// nothing queues.
//
// Live-stream states (one WatchReactor per Watch call):
//
//   kIdle ──Offer(frame due)──▶ kWriting: frame encoded into out_, StartWrite
//   kWriting ──Offer(frame due)──▶ kWriting: pending_ = frame (replaces any
//            older pending frame, which is counted as coalesced)
//   kWriting ──OnWriteDone(ok), pending_──▶ kWriting (pending_ written)
//   kWriting ──OnWriteDone(ok), no pending_──▶ kIdle
//   any ──OnWriteDone(!ok) | OnCancel | Shutdown──▶ kFinished: Finish() is
//            called exactly once (finish_called_ guards it); later Offers
//            are ignored
//   kFinished ──OnDone (gRPC, after Finish completed)──▶ unregistered from
//            the hub, its stream slot released, deleted
//
// A frame is due when the stream has sent none yet or when the time it was
// scheduled for (Snapshot::scheduled_ns, free of wake-up jitter) is at least
// the interval after that of the last one sent: delivered frames are never
// closer than the interval and, frames being one sampling period apart, at
// most one period further (a 1000 ms watch on 100 ms frames gets every
// tenth). Interval 0 sends every stored frame (a new seq).
//
// Live rate: a watch whose interval is shorter than the frame period holds
// a live lease on the sampler (Sampler::Lease, LeaseKind::kLive) for as long
// as the stream lasts: the sampler then publishes live frames at that rate
// (never faster than every 10 ms, one live rate for all watchers) to this
// hub only, not to the store. The lease is released in OnDone (the
// `on_done` given to StartWatch), so it ends with the stream whatever ends
// the stream.
//
// Locks: subs_mu_ (registry) is taken before a reactor's mu_, never after.
// Reactions (OnWriteDone, OnCancel, OnDone) take only their own mu_, or
// subs_mu_ alone in OnDone, and never block otherwise.
//
// Thread safety: every public method may be called from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "daemon/runtime/pi_mutex.h"
#include "daemon/runtime/principal.h"
#include "daemon/sampler.h"
#include "edgemon/channel.h"
#include "edgemon/status.h"
#include "edgemon/v1/edgemon.pb.h"

namespace edgemon::service {

// The spacing rule of one Watch stream (the design note's "due") over
// frames' seq and scheduled time. Not thread-safe: its stream's lock guards it.
class WatchSpacing {
 public:
  explicit WatchSpacing(int64_t interval_ns) : interval_ns_(interval_ns) {}
  bool Due(uint64_t seq, int64_t scheduled_ns) const;
  void Sent(uint64_t seq, int64_t scheduled_ns);

 private:
  int64_t interval_ns_;
  bool sent_any_ = false;
  int64_t last_due_ns_ = 0;
  uint64_t last_seq_ = 0;
};

// One published frame and the inventory it belongs to (both immutable).
struct Snapshot {
  std::shared_ptr<const Inventory> inventory;
  uint64_t generation = 0;
  std::shared_ptr<const Frame> frame;
  int64_t scheduled_ns = 0;  // CLOCK_BOOTTIME the frame was scheduled for
};

class WatchHub final : public FrameSink {
 public:
  explicit WatchHub(size_t max_streams);
  ~WatchHub() override;
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // FrameSink, on the sampler thread: never blocks beyond a pointer swap.
  // A frame not from a schedule: it counts as scheduled at its boottime.
  void OnFrame(const Inventory& inventory, uint64_t generation, const Frame& frame) override;
  void OnScheduledFrame(const Inventory& inventory, uint64_t generation, const Frame& frame,
                        int64_t scheduled_ns) override;
  // Publishes the sampler's snapshot itself: no copy.
  void OnSharedFrame(const Inventory& inventory, uint64_t generation,
                     const std::shared_ptr<const Frame>& frame, int64_t scheduled_ns) override;
  bool WantsLive() const override { return true; }

  // The newest snapshot (frame is null before the first frame).
  Snapshot Latest() const;

  // Stream slots, shared by Watch, Query and the local feed. Callers other
  // than root share max_streams, each principal at most stream_share() of
  // them, so one user cannot take them all; root's streams have max_streams
  // of their own, so root always gets through. RESOURCE_EXHAUSTED naming the
  // limit it hit otherwise. A principal with an empty key (in-process
  // callers, tests) counts against the total only.
  Status AcquireStream(const runtime::Principal& who);
  void ReleaseStream(const runtime::Principal& who);
  // The same for an anonymous caller: false when the slots are taken.
  bool TryAcquireStream() { return AcquireStream(runtime::Principal{}).ok(); }
  void ReleaseStream() { ReleaseStream(runtime::Principal{}); }
  size_t active_streams() const { return active_streams_.load(); }
  size_t max_streams() const { return max_streams_; }
  size_t stream_share() const { return std::max<size_t>(1, max_streams_ / 4); }

  // A reactor for one Watch call. `subset` as SelectChannelsOrAll returns it.
  // Takes the stream slot `who` has acquired; releases it in OnDone,
  // and then calls `on_done` (if set; also when the watch is refused).
  grpc::ServerWriteReactor<v1::Frame>* StartWatch(int64_t interval_ns,
                                                  std::vector<ChannelId> subset,
                                                  std::function<void()> on_done = {},
                                                  runtime::Principal who = {});
  // Finishes every live stream (UNAVAILABLE), tells every subscriber, and
  // stops the dispatcher; new watches finish at once and Subscribe fails.
  // Call before grpc::Server::Shutdown.
  void Shutdown();

  // A consumer of the frames besides the Watch streams (the local feed,
  // feed.h). Offer runs on the dispatcher thread under the registry lock:
  // it must not block and must not call the hub. HubStopping is called once,
  // from Shutdown, for a subscriber still registered then.
  class Subscriber {
   public:
    virtual ~Subscriber() = default;
    virtual void Offer(const Snapshot& s) = 0;
    virtual void HubStopping() = 0;
  };
  // Registers `s` (whose stream slot the caller holds) and offers it the
  // newest frame at once; false, registering nothing, once shut down.
  bool Subscribe(Subscriber* s);
  // After it returns, `s` is offered nothing more. The slot stays held.
  void Unsubscribe(Subscriber* s);

  size_t watchers() const;
  uint64_t frames_sent() const { return sent_.load(); }
  uint64_t frames_coalesced() const { return coalesced_.load(); }
  // Times the dispatcher thread woke for a published frame.
  uint64_t dispatches() const { return dispatches_.load(); }

  class Watcher;

 private:
  void Dispatch();
  void Unregister(Watcher* w);

  const size_t max_streams_;
  std::atomic<size_t> active_streams_{0};
  std::mutex slots_mu_;
  std::map<std::string, size_t> slots_held_;  // guarded by slots_mu_: by principal key
  size_t shared_slots_ = 0;                   // guarded by slots_mu_: held by non-root callers
  size_t root_slots_ = 0;                     // guarded by slots_mu_
  std::atomic<uint64_t> sent_{0};
  std::atomic<uint64_t> coalesced_{0};
  std::atomic<uint64_t> dispatches_{0};

  // Sampler side.
  std::shared_ptr<const Inventory> inventory_;  // sampler thread only
  uint64_t generation_ = 0;                     // sampler thread only
  mutable runtime::PiMutex latest_mu_;
  std::condition_variable_any latest_cv_;
  Snapshot latest_;         // guarded by latest_mu_
  uint64_t published_ = 0;  // guarded by latest_mu_: snapshots published
  bool stop_ = false;       // guarded by latest_mu_

  // Registry.
  mutable std::mutex subs_mu_;
  std::set<Subscriber*> subs_;  // guarded by subs_mu_
  // subs_.size(), read without the lock: with nobody watching, a frame is
  // published without waking the dispatcher (a new watcher is offered the
  // newest frame when it starts).
  std::atomic<size_t> watching_{0};
  bool shut_down_ = false;  // guarded by subs_mu_

  std::thread dispatcher_;
  friend class Watcher;
};

}  // namespace edgemon::service
