// The writer side of the store: the queue Append and the synchronous
// operations feed, the writer thread that drains it, and what happens to a
// frame before it is committed (counter offsets, I8; wall-clock steps, I11;
// folding into the open rollup period, I7). Events and damage (I13) are
// reported from here. The transactions themselves are commit.cc's.
#include "daemon/store/frame_codec.h"
#include "daemon/store/ring_store_impl.h"

namespace edgemon::store {
namespace {

using internal::Agg;
using internal::kRowOverheadBytes;

constexpr int64_t kFailureReportIntervalNs = 60 * int64_t{1'000'000'000};
// A change of realtime - boottime beyond this between two frames of one boot
// is a wall-clock step (I11); NTP slews far less.
constexpr int64_t kClockJumpNs = 1'000'000'000;
// Closed rollup rows kept in memory while writes fail (disk full).
constexpr size_t kMaxPendingRollupRows = 1'000'000;

bool SameDescription(const Channel& a, const Channel& b) {
  if (a.kind != b.kind || a.name != b.name || a.field != b.field || a.unit != b.unit ||
      a.device != b.device || a.parent != b.parent || a.flags != b.flags || a.min != b.min ||
      a.max != b.max || a.crit != b.crit || a.attrs != b.attrs ||
      a.trips.size() != b.trips.size()) {
    return false;
  }
  for (size_t i = 0; i < a.trips.size(); ++i) {
    if (a.trips[i].type != b.trips[i].type || a.trips[i].temp_mc != b.trips[i].temp_mc)
      return false;
  }
  return true;
}

}  // namespace

bool IsClock(const Channel& c) {
  return c.field == Field::kFreq &&
         (c.kind == Kind::kCpu || c.kind == Kind::kGpu || c.kind == Kind::kEmc);
}

// ============================ Queue side ============================

void RingStore::Impl::SetInventory(const Inventory& inventory) {
  auto copy = std::make_shared<const std::vector<Channel>>(inventory.channels);
  std::lock_guard lk(mu_);
  if (stop_) return;
  queue_.emplace_back(std::move(copy));
}

uint64_t RingStore::Impl::Append(std::shared_ptr<const Frame> frame) {
  bool wake = false;
  uint64_t seq = 0;
  {
    std::lock_guard lk(mu_);
    if (stop_ || queued_frames_ >= options_.max_queued_frames) {
      ++queue_dropped_;
      return 0;
    }
    seq = std::max(frame->seq, next_seq_);  // (I2)
    next_seq_ = seq + 1;
    if (queued_frames_ == 0) first_queued_ns_ = clock_.MonotonicNs();
    queue_.emplace_back(QueuedFrame{std::move(frame), seq});
    ++queued_frames_;
    wake = (queued_frames_ == 1 && waiting_idle_) || queued_frames_ == IngestFrames();
  }
  if (wake) cv_.notify_one();
  return seq;
}

Result<int64_t> RingStore::Impl::Submit(SyncOp::Kind kind, std::string label, int64_t a, int64_t b,
                                        std::optional<int64_t> c, std::string owner,
                                        std::optional<int64_t> d, WindowResult result) {
  auto op = std::make_shared<SyncOp>();
  op->kind = kind;
  op->label = std::move(label);
  op->owner = std::move(owner);
  op->a = a;
  op->b = b;
  op->c = c;
  op->d = d;
  op->result = std::move(result);
  auto done = op->done.get_future();
  {
    std::lock_guard lk(mu_);
    if (stop_) return Status::Unavailable("store is closed");
    queue_.emplace_back(op);
    sync_pending_ = true;
  }
  cv_.notify_one();
  return done.get();
}

Status RingStore::Impl::Flush() {
  auto r = Submit(SyncOp::Kind::kFlush, {}, 0, 0);
  return r.ok() ? Status::Ok() : r.status();
}

Status RingStore::Impl::SetMaxPageCount(int64_t pages) {
  auto r = Submit(SyncOp::Kind::kSetMaxPages, {}, pages, 0);
  return r.ok() ? Status::Ok() : r.status();
}

void RingStore::Impl::SetCommitInterval(int64_t ms) {
  {
    std::lock_guard lk(mu_);
    commit_interval_ns_ = MulSaturating(std::max<int64_t>(0, ms), 1'000'000);
  }
  cv_.notify_one();  // a shorter interval may already be due
}

// ============================ Writer thread ============================

void RingStore::Impl::Run() {
  for (;;) {
    std::deque<Item> items;
    bool stopping = false;
    int64_t interval_ns = 0;
    {
      std::unique_lock lk(mu_);
      // Frames are taken in and encoded a few at a time (memory holds
      // their rows, not the frames); the batch commits once it is
      // commit_interval old or batch_frames long.
      while (!stop_ && !sync_pending_ && queued_frames_ < IngestFrames()) {
        if (queue_.empty() && batch_.empty()) {
          waiting_idle_ = true;
          cv_.wait(lk);
          waiting_idle_ = false;
        } else if (const int64_t due = AddSaturating(
                       batch_.empty() ? first_queued_ns_ : batch_since_ns_, commit_interval_ns_);
                   clock_.MonotonicNs() >= due) {
          break;
        } else {
          clock_.WaitUntil(due, lk, cv_);
        }
        ++writer_wakeups_;
      }
      if (batch_.empty()) batch_since_ns_ = first_queued_ns_;
      items.swap(queue_);
      queued_frames_ = 0;
      sync_pending_ = false;
      stopping = stop_;
      interval_ns = commit_interval_ns_;
    }
    Process(items);
    if (stopping) break;  // Append refuses once stop_ is set: the queue is empty
    // Rollup rows alone are not retried right after a failed commit; due
    // with frames still batched, they go with them.
    const bool due = clock_.MonotonicNs() >= AddSaturating(batch_since_ns_, interval_ns);
    if ((!batch_.empty() && due) || (batch_.empty() && !failing_ && RollupDue())) {
      try {
        (void)Commit();
      } catch (const std::exception& e) {
        {
          std::lock_guard lk(batch_mu_);
          batch_.clear();
        }
        batch_bytes_ = 0;
        std::lock_guard lk(stats_mu_);
        counters_.last_error = std::string("writer: ") + e.what();
      }
    }
    batched_frames_.store(batch_.size(), std::memory_order_relaxed);
  }
  // Close (I7): write the open period, and every closed one held back, so a
  // restart needs no replay.
  CloseBucket();
  closing_ = true;
  (void)Commit();
  if (!damaged()) (void)w_->Exec("PRAGMA wal_checkpoint(TRUNCATE)");
}

void RingStore::Impl::Process(std::deque<Item>& items) {
  for (auto& item : items) {
    bool answered = false;
    try {
      if (auto* f = std::get_if<QueuedFrame>(&item)) {
        Ingest(*f->frame, f->seq);
        // A backlog is written in batches too: a transaction stays small
        // next to the cap and the WAL (I6).
        if (batch_.size() >= options_.batch_frames ||
            (max_pages_ > 0 && batch_bytes_ > max_pages_ * page_size_ / 16)) {
          (void)Commit();
        }
      } else if (auto* inv = std::get_if<InventoryPtr>(&item)) {
        ApplyInventory(**inv);
      } else {
        auto& op = *std::get<std::shared_ptr<SyncOp>>(item);
        Result<int64_t> result = Status::Internal("not run");
        Status s = HandleSyncOp(op, result);
        answered = true;
        op.done.set_value(s.ok() ? std::move(result) : Result<int64_t>(s));
      }
    } catch (const std::exception& e) {  // keep the writer alive; answer any waiter
      if (auto* op = std::get_if<std::shared_ptr<SyncOp>>(&item); op && !answered) {
        (*op)->done.set_value(Status::Internal(std::string("writer: ") + e.what()));
      }
      std::lock_guard lk(stats_mu_);
      counters_.last_error = std::string("writer: ") + e.what();
    }
  }
  // Channels declared without frames are written with the next batch.
}

Status RingStore::Impl::HandleSyncOp(SyncOp& op, Result<int64_t>& result) {
  using K = SyncOp::Kind;
  // Everything queued before the op, except for a push cursor: it depends
  // on no queued frame (a shipper reads committed frames only), and forcing
  // a batch out early would cost flash a second transaction (I16).
  // A read of the queued frames (kIngest) maps their ids through the
  // committed channel rows: new or changed ones are committed first, and so
  // is a wall-clock step among the frames (a summary's note reads the steps
  // from their committed rows).
  const bool no_commit =
      op.kind == K::kSetCursor || op.kind == K::kRailChunk ||
      (op.kind == K::kIngest && pending_jumps_.empty() &&
       std::none_of(chans_.begin(), chans_.end(), [](const ChanState& c) { return c.dirty; }));
  Status committed = no_commit ? Status::Ok() : Commit();
  if (op.kind != K::kFlush && op.kind != K::kIngest && damaged()) {
    return Status::Internal("the store is damaged (" + damage() + ")");
  }
  switch (op.kind) {
    case K::kFlush: {
      result = int64_t{0};
      // A batch of this flush's frames may have been committed (or dropped)
      // before it: report the first failure since the previous flush.
      Status failure = error_since_flush_.value_or(committed);
      error_since_flush_.reset();
      return failure;
    }
    case K::kSetMaxPages: {
      std::string q = "PRAGMA max_page_count=" + std::to_string(op.a);
      auto r = w_->QueryInt(q.c_str());
      if (!r.ok()) return r.status();
      result = *r;
      return Status::Ok();
    }
    case K::kBeginWindow:
    case K::kAddWindow: {
      auto id = InsertWindow(op);
      if (!id.ok()) return id.status();
      result = *id;
      return Status::Ok();
    }
    case K::kEndWindow: {
      if (Status s = WriteWindowEnd(op); !s.ok()) return s;
      result = op.a;
      return Status::Ok();
    }
    case K::kSetCursor: {
      if (Status s = WriteCursor(op); !s.ok()) return s;
      result = int64_t{0};
      return Status::Ok();
    }
    case K::kRailChunk: {
      if (Status s = WriteRailChunk(op); !s.ok()) return s;
      result = int64_t{0};
      return Status::Ok();
    }
    case K::kIngest:
      result = int64_t{0};
      return Status::Ok();
  }
  return Status::Internal("unknown operation");
}

void RingStore::Impl::ApplyInventory(const std::vector<Channel>& channels) {
  ChannelId max_id = 0;
  for (const auto& ch : channels) max_id = std::max(max_id, ch.id);
  inv_map_.assign(channels.empty() ? 0 : size_t{max_id} + 1, 0);
  const int64_t now = clock_.RealtimeNs();
  for (const auto& ch : channels) {
    std::string key = ch.Key();
    uint32_t id;
    if (auto it = id_by_key_.find(key); it != id_by_key_.end()) {
      id = it->second;
      auto& c = chans_[id];
      if (!SameDescription(c.desc, ch)) {
        c.desc = ch;
        c.dirty = true;
      }
    } else {  // (I4) new keys get the next id
      id = static_cast<uint32_t>(chans_.size());
      ChanState c;
      c.key = key;
      c.desc = ch;
      c.first_seen_ns = now;
      c.dirty = true;
      chans_.push_back(std::move(c));
      id_by_key_.emplace(std::move(key), id);
    }
    chans_[id].desc.id = 0;
    inv_map_[ch.id] = id;
  }
}

void RingStore::Impl::Ingest(const Frame& frame, uint64_t seq) {
  pairs_.clear();
  const size_t n = std::min(frame.values.size(), inv_map_.size());
  bool sorted = true;
  for (size_t i = 0; i < n; ++i) {
    if (!frame.values[i] || inv_map_[i] == 0) continue;  // (I3)
    if (!pairs_.empty() && pairs_.back().first >= inv_map_[i]) sorted = false;
    pairs_.emplace_back(inv_map_[i], *frame.values[i]);
  }
  if (!sorted) {
    std::stable_sort(pairs_.begin(), pairs_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    pairs_.erase(std::unique(pairs_.begin(), pairs_.end(),
                             [](const auto& a, const auto& b) { return a.first == b.first; }),
                 pairs_.end());
  }
  uint64_t resets = 0;
  for (auto& [id, v] : pairs_) {
    auto& c = chans_[id];
    if (!c.desc.Has(kFlagCounter)) continue;
    // (I8) keep the stored counter non-decreasing.
    int64_t adjusted = AddSaturating(v, c.counter_offset);
    if (c.last_counter && adjusted < *c.last_counter) {
      c.counter_offset = SubSaturating(*c.last_counter, v);
      adjusted = *c.last_counter;
      ++resets;
    }
    c.last_counter = adjusted;
    v = adjusted;
  }
  if (resets) {
    std::lock_guard lk(stats_mu_);
    counters_.counter_resets += resets;
  }
  const int64_t realtime_ns = StampWallTime(seq, frame.boottime_ns, frame.realtime_ns);
  Row row{seq, frame.boottime_ns, realtime_ns, {}};
  EncodeFrame(pairs_, encoded_, row.blob);  // the row holds what the frame takes
  Fold(seq, realtime_ns, pairs_);
  batch_bytes_ += static_cast<int64_t>(row.blob.size()) + kRowOverheadBytes;
  std::lock_guard lk(batch_mu_);
  batch_.push_back(std::move(row));
  // Counted at once: a sync op answered after this frame (a read of the
  // queued frames) finds it in Stats().
  batched_frames_.store(batch_.size(), std::memory_order_relaxed);
}

// (I11) Wall-clock steps: detected, recorded, and never let stored time go back.
int64_t RingStore::Impl::StampWallTime(uint64_t seq, int64_t bt, int64_t realtime_ns) {
  const int64_t offset = SubSaturating(realtime_ns, bt);
  const bool same_boot = last_bt_ && bt >= *last_bt_;
  const bool jumped =
      same_boot && last_offset_ &&
      std::max(SpanNs(offset, *last_offset_), SpanNs(*last_offset_, offset)) > kClockJumpNs;
  const int64_t old_offset = last_offset_.value_or(offset);
  last_offset_ = offset;
  if (last_rt_ && realtime_ns < *last_rt_) {
    // Behind the newest stored frame: continue from it at boottime's pace.
    realtime_ns = AddSaturating(*last_rt_, same_boot ? SubSaturating(bt, *last_bt_) : 0);
  }
  if (jumped) {
    pending_jumps_.push_back(Jump{bt, realtime_ns, old_offset, offset});
    Report(StoreEvent::Kind::kClockJump,
           "recorded a wall-clock step of " +
               std::to_string(SubSaturating(offset, old_offset) / 1'000'000) + " ms at boottime " +
               std::to_string(bt) + " ns");
  }
  if (!same_boot || boots_.empty()) {
    boots_.push_back(BootSeg{seq, bt});
    pending_boots_.push_back(seq);
  }
  boots_.back().last_bt = bt;
  last_rt_ = realtime_ns;
  last_bt_ = bt;
  return realtime_ns;
}

void RingStore::Impl::Fold(uint64_t seq, int64_t realtime_ns,
                           const std::vector<std::pair<uint32_t, int64_t>>& values,
                           bool without_values) {
  const int64_t period = options_.rollup_period_ns;
  const int64_t start = FloorToMultiple(realtime_ns, period);
  if (bucket_ && *bucket_ != start) CloseBucket();
  bucket_ = start;
  for (const auto& [id, v] : values) {
    if (agg_.size() <= id) agg_.resize(size_t{id} + 1);
    if (agg_[id].count == 0) touched_.push_back(id);
    agg_[id].Add(v);
    if (id < chans_.size() && IsClock(chans_[id].desc)) {  // (I15)
      if (values_.size() <= id) values_.resize(size_t{id} + 1);
      ++values_[id][v];
    }
  }
  span_.Add(seq, realtime_ns, without_values);
  folded_seq_ = seq;
}

void RingStore::Impl::CloseBucket() {
  if (!bucket_) return;
  std::sort(touched_.begin(), touched_.end());
  for (uint32_t id : touched_) {
    pending_rollup_.push_back({id, *bucket_, agg_[id]});
    agg_[id] = Agg{};
  }
  touched_.clear();
  // (I15) the period's frames and clock values.
  SpanRow row{*bucket_, span_, {}};
  for (size_t id = 0; id < values_.size(); ++id) {
    if (values_[id].size() > internal::kMaxSpanValues) {
      ++row.agg.bad;  // too many distinct values to keep: not described
    } else {
      for (const auto& [v, n] : values_[id]) {
        row.values.emplace_back(static_cast<uint32_t>(id), v, n);
      }
    }
    values_[id].clear();
  }
  span_ = internal::SpanAgg{};
  if (row.agg.frames > 0) pending_spans_.push_back(std::move(row));
  if (pending_spans_.size() > kMaxPendingRollupRows) {
    pending_spans_.erase(pending_spans_.begin());
  }
  bucket_.reset();
  pending_rollup_seq_ = folded_seq_;
  rollup_dirty_ = true;
  if (pending_rollup_.size() > kMaxPendingRollupRows) {  // writes keep failing: forget the oldest
    pending_rollup_.erase(pending_rollup_.begin(),
                          pending_rollup_.begin() + static_cast<ptrdiff_t>(pending_rollup_.size() -
                                                                           kMaxPendingRollupRows));
  }
}

void RingStore::Impl::Report(StoreEvent::Kind kind, const std::string& message) {
  if (!options_.on_event) return;
  StoreEvent ev{kind, message, 0};
  if (kind == StoreEvent::Kind::kWriteFailed) {
    const int64_t now = clock_.MonotonicNs();
    if (last_failure_report_ns_ &&
        SubSaturating(now, *last_failure_report_ns_) < kFailureReportIntervalNs) {
      ++unreported_failures_;
      return;
    }
    if (unreported_failures_ > 0) {
      ev.message +=
          " (and " + std::to_string(unreported_failures_) + " more since the last report)";
    }
    unreported_failures_ = 0;
    last_failure_report_ns_ = now;
  }
  {
    std::lock_guard lk(stats_mu_);
    ev.dropped_batches = counters_.dropped_batches;
  }
  try {
    options_.on_event(ev);
  } catch (...) {  // a callback's exception must not kill the writer
  }
}

void RingStore::Impl::NoteDamage(int code, std::string_view doing, const std::string& error) {
  if (!started_ || damaged_.exchange(true, std::memory_order_acq_rel)) return;
  std::string message = path_ + " is damaged: " + std::string(doing) + " failed with " +
                        sqlite3_errstr(code & 0xff) + " (extended code " + std::to_string(code) +
                        "): " + error;
  {
    std::lock_guard lk(stats_mu_);
    counters_.damaged = true;
    counters_.damage = message;
  }
  Report(StoreEvent::Kind::kDamaged, message);
}

}  // namespace edgemon::store
