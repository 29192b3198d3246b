// The writer's transactions (I1): one per batch, holding the channel rows,
// the frames, clock steps and boot segments, closed rollup periods, raw
// retention by boottime and rollup/window retention (I5), and the trimming
// that keeps the file under max_bytes (I6). Failed commits move the writer
// to kFailing (ring_store.h's writer states).
#include <cmath>

#include "daemon/store/ring_store_impl.h"

namespace edgemon::store {
namespace {

using internal::AttrsJson;
using internal::IsDamageCode;
using internal::kExpireWithBatchPages;
using internal::kRowOverheadBytes;
using internal::TripsJson;

constexpr int64_t kRollupRowBytes = 40;

bool IsFull(int extended_code) {
  return (extended_code & 0xff) == SQLITE_FULL;
}

}  // namespace

int64_t RingStore::Impl::EstimatePages() const {
  int64_t bytes = 0;
  for (const auto& r : batch_) bytes += static_cast<int64_t>(r.blob.size()) + kRowOverheadBytes;
  // Closed periods held back (I7) take no room until they are due.
  const bool rollup = RollupDue();
  if (rollup) {
    bytes += static_cast<int64_t>(pending_rollup_.size()) * kRollupRowBytes;
    for (const auto& r : pending_spans_) {
      bytes += kRollupRowBytes * (2 + static_cast<int64_t>(r.values.size()));
    }
  }
  // (I15) A block, day and month closed by them: a stats row per channel,
  // clock values.
  if (rollup && !pending_spans_.empty()) {
    int64_t rows = static_cast<int64_t>(chans_.size());
    for (const auto& c : chans_) {
      if (IsClock(c.desc)) rows += static_cast<int64_t>(internal::kMaxBlockValues);
    }
    bytes += kRollupRowBytes * rows * kTopSpanLevel;
  }
  for (size_t id = 1; id < chans_.size(); ++id) {
    if (chans_[id].dirty) bytes += 400;
  }
  // B-tree pages are not full; splits touch a few more.
  return bytes * 5 / 4 / page_size_ + 8;
}

Status RingStore::Impl::InWriteTxn(const std::function<Status()>& body) {
  last_errcode_ = SQLITE_OK;
  w_->set_failure_code(SQLITE_OK);
  Status s = w_->Exec("BEGIN IMMEDIATE");
  if (s.ok()) s = body();
  if (s.ok()) s = w_->Exec("COMMIT");
  if (!s.ok()) {
    last_errcode_ = w_->failure_code();
    if (IsDamageCode(last_errcode_)) NoteDamage(last_errcode_, "writing", s.message());
    if (w_->InTransaction()) (void)w_->Exec("ROLLBACK");
  }
  return s;
}

Status RingStore::Impl::WriteMeta(const char* key, int64_t value) {
  sql::Stmt s(*w_,
              "INSERT INTO meta(key, value) VALUES(?1, ?2) "
              "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  return s.Bind(1, std::string_view(key)).Bind(2, value).Run();
}

bool RingStore::Impl::RollupDue() const {
  if (pending_rollup_.empty() && !rollup_dirty_) return false;
  const int64_t block = SpanLength(options_.rollup_period_ns, 1);
  // Held back only while the raw tier keeps every frame they hold.
  if (options_.rollup_write_frames == 0 || closing_ || frames_trimmed_ || pending_spans_.empty() ||
      options_.raw_retention_ns / 2 < block) {
    return true;
  }
  uint64_t frames = 0;
  for (const auto& r : pending_spans_) frames += r.agg.frames;
  return frames >= options_.rollup_write_frames ||
         FloorToMultiple(pending_spans_.front().t_ns, block) !=
             FloorToMultiple(pending_spans_.back().t_ns, block);
}

int64_t RingStore::Impl::RollupDeleteStep() const {
  return options_.rollup_write_frames == 0 ? options_.rollup_period_ns
                                           : SpanLength(options_.rollup_period_ns, 2);
}

Status RingStore::Impl::Commit() {
  bool dirty_channels = false;
  for (size_t id = 1; id < chans_.size() && !dirty_channels; ++id)
    dirty_channels = chans_[id].dirty;
  if (batch_.empty() && !RollupDue() && !dirty_channels) {
    return Status::Ok();
  }
  // The batch leaves the count before its frames show in the file, so
  // Stats() never counts a frame both committed and waiting.
  batched_frames_.store(0, std::memory_order_relaxed);
  Deltas d;
  Status s;
  uint64_t failed_attempts = 0;
  if (damaged()) {
    // (I13) Nothing more is written into a damaged file.
    s = Status::Internal("the store is damaged (" + damage() + ")");
    last_errcode_ = SQLITE_CORRUPT;
  } else {
    if (!failing_) SetState(WriterState::kCommitting);
    s = TryCommit(d);
  }
  if (!s.ok() && IsFull(last_errcode_) && max_pages_ > 0) {
    // The ring cap was reached despite the estimate: trim harder, retry once (I6).
    ++failed_attempts;
    auto pages = w_->QueryInt("PRAGMA page_count");
    auto cap = w_->QueryInt("PRAGMA max_page_count");
    if (pages.ok() && cap.ok() && *cap == max_pages_ && *pages + EstimatePages() >= max_pages_) {
      Deltas t;
      Status trimmed = InWriteTxn([&]() -> Status {
        if (Status e = EnsureRoom(EstimatePages(), max_pages_ * 4 / 5, t); !e.ok()) return e;
        if (Status e = WriteMeta("frames", frames_ - t.trimmed); !e.ok()) return e;
        return WriteMeta("rollup_rows", rollup_rows_ - t.rollup_trimmed);
      });
      if (trimmed.ok()) {
        frames_ -= t.trimmed;
        rollup_rows_ -= t.rollup_trimmed;
        std::lock_guard lk(stats_mu_);
        counters_.trimmed_frames += static_cast<uint64_t>(t.trimmed);
        counters_.trimmed_rollup_rows += static_cast<uint64_t>(t.rollup_trimmed);
      }
      d = Deltas{};
      s = TryCommit(d);
    }
  }
  if (!s.ok()) {
    ++failed_attempts;
    const bool full = IsFull(last_errcode_);
    const uint64_t lost = batch_.size();
    if (lost > 0) {
      // (I15) the lost frames were folded: their periods are not described
      // (closed periods held back before them were written in full).
      const int64_t lost_from =
          FloorToMultiple(batch_.front().realtime_ns, options_.rollup_period_ns);
      for (auto& r : pending_spans_) {
        if (r.t_ns >= lost_from) ++r.agg.bad;
      }
      if (bucket_) ++span_.bad;
    }
    {
      std::lock_guard lk(batch_mu_);
      batch_.clear();  // dropped; rollup rows and channel rows stay pending
    }
    batch_bytes_ = 0;
    failing_ = true;
    {
      std::lock_guard lk(stats_mu_);
      counters_.failed_commits += failed_attempts;
      if (lost > 0) counters_.dropped_batches += 1;
      counters_.dropped_frames += lost;
      counters_.last_error = s.message();
      counters_.state = WriterState::kFailing;
    }
    if (!error_since_flush_ && lost > 0) {
      error_since_flush_ =
          Status::Internal((full ? "disk full: " : "write failed: ") + std::to_string(lost) +
                           " frames dropped (" + s.message() + ")");
    }
    // A damaged store was reported once (kDamaged); its drops are counted.
    if (!damaged()) {
      Report(StoreEvent::Kind::kWriteFailed, std::string(full ? "disk full" : "write failed") +
                                                 ": dropped a batch of " + std::to_string(lost) +
                                                 " frames (" + s.message() + ")");
    }
    return Status::Internal((full ? "disk full: " : "write failed: ") + std::to_string(lost) +
                            " frames dropped (" + s.message() + ")");
  }
  // Committed: apply what the transaction did.
  frames_ += d.inserted - d.expired - d.trimmed;
  rollup_rows_ += d.rollup_inserted - d.rollup_deleted - d.rollup_trimmed;
  if (d.base) base_ = std::move(d.base);
  if (!batch_.empty()) {
    double avg = static_cast<double>(d.stored_bytes) / static_cast<double>(batch_.size()) +
                 kRowOverheadBytes;
    avg_row_bytes_ = 0.7 * avg_row_bytes_ + 0.3 * avg;
    newest_rt_ = batch_.back().realtime_ns;
    committed_newest_.store(batch_.back().realtime_ns, std::memory_order_release);
    committed_next_.store(batch_.back().seq + 1, std::memory_order_release);
  }
  boots_.erase(boots_.begin(), boots_.begin() + static_cast<std::ptrdiff_t>(d.boots_emptied));
  pending_jumps_.clear();
  pending_boots_.clear();
  {
    std::lock_guard lk(cursor_mu_);
    held_cursors_.clear();
  }
  {
    // After committed_next_: a reader that finds batch_ empty reads the
    // committed frames up to it.
    std::lock_guard lk(batch_mu_);
    batch_.clear();
  }
  batch_bytes_ = 0;
  if (d.rollup_written) {
    pending_rollup_.clear();
    pending_spans_.clear();
    frames_trimmed_ = false;
    rollup_dirty_ = false;
    rollup_seq_ = pending_rollup_seq_;
  }
  if (d.expired_at_bt) expired_at_bt_ = d.expired_at_bt;
  for (int level = 1; level <= kTopSpanLevel; ++level) {
    if (d.spans_through[level]) spans_through_ns_[level] = *d.spans_through[level];
  }
  rollup_floor_ns_ = d.rollup_floor;
  for (auto& c : chans_) c.dirty = false;
  if (d.channels_version) channels_version_ = *d.channels_version;
  const bool resumed = failing_;
  failing_ = false;
  {
    std::lock_guard lk(stats_mu_);
    counters_.commits += 1;
    counters_.failed_commits += failed_attempts;
    counters_.expired_frames += static_cast<uint64_t>(d.expired);
    counters_.trimmed_frames += static_cast<uint64_t>(d.trimmed);
    counters_.trimmed_rollup_rows += static_cast<uint64_t>(d.rollup_trimmed);
    counters_.state = WriterState::kIdle;
  }
  if (resumed) {
    last_failure_report_ns_.reset();
    Report(StoreEvent::Kind::kResumed, "writing again after dropped batches");
  }
  return Status::Ok();
}

Status RingStore::Impl::TryCommit(Deltas& d) {
  return InWriteTxn([&]() -> Status {
    // (I6) make room first, in the same transaction.
    if (max_pages_ > 0) {
      int64_t target = max_pages_ - std::max<int64_t>(8, max_pages_ / 20);
      if (Status s = EnsureRoom(EstimatePages(), target, d); !s.ok()) return s;
    }
    // (I4) channel rows; readers cache them per meta.channels_version.
    bool channels_changed = false;
    for (size_t id = 1; id < chans_.size(); ++id) {
      const auto& c = chans_[id];
      if (!c.dirty) continue;
      sql::Stmt s(*w_,
                  "INSERT INTO channels(id, key, kind, name, field, unit, device, parent, flags, "
                  "min, max, crit, trips, attrs, first_seen_ns) "
                  "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) "
                  "ON CONFLICT(id) DO UPDATE SET kind = excluded.kind, name = excluded.name, "
                  "field = excluded.field, unit = excluded.unit, device = excluded.device, "
                  "parent = excluded.parent, flags = excluded.flags, min = excluded.min, "
                  "max = excluded.max, crit = excluded.crit, trips = excluded.trips, "
                  "attrs = excluded.attrs");
      s.Bind(1, static_cast<int64_t>(id))
          .Bind(2, std::string_view(c.key))
          .Bind(3, ToString(c.desc.kind))
          .Bind(4, std::string_view(c.desc.name))
          .Bind(5, ToString(c.desc.field))
          .Bind(6, ToString(c.desc.unit))
          .Bind(7, std::string_view(c.desc.device))
          .Bind(8, std::string_view(c.desc.parent))
          .Bind(9, static_cast<int64_t>(c.desc.flags))
          .Bind(10, c.desc.min)
          .Bind(11, c.desc.max)
          .Bind(12, c.desc.crit);
      std::string trips = TripsJson(c.desc.trips), attrs = AttrsJson(c.desc.attrs);
      s.Bind(13, std::string_view(trips))
          .Bind(14, std::string_view(attrs))
          .Bind(15, c.first_seen_ns);
      if (Status e = s.Run(); !e.ok()) return e;
      channels_changed = true;
    }
    if (channels_changed) {
      if (Status e = WriteMeta("channels_version", channels_version_ + 1); !e.ok()) return e;
      d.channels_version = channels_version_ + 1;
    }
    // (I5) Expired frames go before the batch's rows, so that the pages
    // they free take those rows in this transaction: each is written once,
    // with its new rows, instead of once emptied and again refilled.
    const ExpireRun expire = ExpireDue();
    if (expire != ExpireRun::kNo) {
      if (Status e = ExpireFrames(expire, d); !e.ok()) return e;
    }
    // Frames (I2: in seq order, as carried; I17: against their base).
    if (Status e = InsertFrames(d); !e.ok()) return e;
    std::optional<int64_t> newest = batch_.empty() ? newest_rt_ : batch_.back().realtime_ns;
    for (const auto& j : pending_jumps_) {
      sql::Stmt s(*w_,
                  "INSERT INTO clock_jumps(boottime_ns, realtime_ns, old_offset_ns, "
                  "new_offset_ns) VALUES(?1, ?2, ?3, ?4)");
      s.Bind(1, j.boottime_ns).Bind(2, j.realtime_ns).Bind(3, j.old_offset_ns);
      if (Status e = s.Bind(4, j.new_offset_ns).Run(); !e.ok()) return e;
    }
    for (uint64_t b : pending_boots_) {
      sql::Stmt s(*w_, "INSERT OR IGNORE INTO boots(first_seq) VALUES(?1)");
      if (Status e = s.Bind(1, static_cast<int64_t>(b)).Run(); !e.ok()) return e;
    }
    // (I16) the cursors at frames of this batch, with them.
    if (Status e = InsertHeldCursors(); !e.ok()) return e;
    // A batch older than the retention itself (a short retention, a long
    // batch): its own expired frames, and the boot rows of segments it
    // emptied (nothing else is left to go).
    if (expire != ExpireRun::kNo) {
      if (Status e = ExpireFrames(expire, d); !e.ok()) return e;
    }
    // (I7) closed rollup periods, merged into rows a clock step may have
    // revisited; once frames were trimmed for size (I6), whatever is held back.
    d.rollup_written = RollupDue();
    if (d.rollup_written) {
      if (Status e = WriteRollup(d); !e.ok()) return e;
    }
    // (I5) rollup and window retention, with every batch of frames. The
    // rollup pass (a few statements per channel) runs only when a row can be
    // older than the cutoff: once a period (once a day when closed periods
    // are written in batches: a row outlives the retention by at most a
    // day, and the pass rewrites the head of each channel's rows once a day
    // instead of every hour), or after a row from before the last cutoff
    // was written (the wall clock went back).
    std::optional<int64_t> floor = rollup_floor_ns_;
    if (floor && d.written_from) floor = std::min(*floor, *d.written_from);
    if (!batch_.empty() || d.rollup_written) {
      if (newest) {
        int64_t cutoff = SubSaturating(*newest, options_.rollup_retention_ns);
        if (!floor || cutoff > *floor) {
          if (Status e = DeleteRollup(cutoff, d.rollup_deleted); !e.ok()) return e;
          floor = CeilToMultiple(cutoff, RollupDeleteStep());
        }
        int64_t keep = std::max(options_.raw_retention_ns, options_.rollup_retention_ns);
        sql::Stmt w(*w_, "DELETE FROM windows WHERE end_ns IS NOT NULL AND end_ns < ?1");
        if (Status e = w.Bind(1, SubSaturating(*newest, keep)).Run(); !e.ok()) return e;
        sql::Stmt j(*w_, "DELETE FROM clock_jumps WHERE realtime_ns < ?1");
        if (Status e = j.Bind(1, SubSaturating(*newest, keep)).Run(); !e.ok()) return e;
      }
    }
    // (I5) A size trim also takes the windows that ended before what is left.
    if (d.trimmed > 0 || d.rollup_trimmed > 0) {
      if (Status e = TrimWindowsToData(); !e.ok()) return e;
    }
    // Bases with each expire_step, not with every batch's expiry: each
    // drop rewrites the head of frame_bases for the few bytes of a base.
    if (d.trimmed > 0 || d.expired_at_bt) {
      if (Status e = DropUnusedBases(); !e.ok()) return e;
    }
    d.rollup_floor = floor;
    if (Status e = WriteMeta("frames", frames_ + d.inserted - d.expired - d.trimmed); !e.ok()) {
      return e;
    }
    return WriteMeta("rollup_rows",
                     rollup_rows_ + d.rollup_inserted - d.rollup_deleted - d.rollup_trimmed);
  });
}

// (I5) Raw retention by elapsed boottime, due once the newest frame's
// boottime is expire_step past the last such run (or went back: a new
// boot), or with every batch whose rows fill a few pages.
RingStore::Impl::ExpireRun RingStore::Impl::ExpireDue() const {
  if (batch_.empty()) return ExpireRun::kNo;
  const int64_t newest_bt = batch_.back().boottime_ns;
  if (options_.expire_step_ns == 0 || !expired_at_bt_ || newest_bt < *expired_at_bt_ ||
      SubSaturating(newest_bt, *expired_at_bt_) >= options_.expire_step_ns) {
    return ExpireRun::kByStep;
  }
  // What expires with such a batch frees about the pages its rows take;
  // below a few pages, the deletion's own pages (the head of the table, its
  // interior page) cost more than it saves.
  return static_cast<double>(batch_.size()) * avg_row_bytes_ >=
                 static_cast<double>(kExpireWithBatchPages * page_size_)
             ? ExpireRun::kWithBatch
             : ExpireRun::kNo;
}

// (I5) A frame's age is known within its boot; a frame of an earlier boot
// is at least as old as the boottime elapsed since that boot's last frame
// plus every later boot's last boottime. Within a segment boottime grows
// with seq. Run again, it deletes only what is left to expire.
Status RingStore::Impl::ExpireFrames(ExpireRun run, Deltas& d) {
  if (run == ExpireRun::kByStep) d.expired_at_bt = batch_.back().boottime_ns;
  d.boots_emptied = 0;
  int64_t later = 0;  // boottime known to have elapsed after this segment
  for (size_t k = boots_.size(); k-- > 0;) {
    const auto& b = boots_[k];
    const uint64_t end = k + 1 < boots_.size() ? boots_[k + 1].first_seq : UINT64_MAX;
    const int64_t cutoff =
        SubSaturating(AddSaturating(b.last_bt, later), options_.raw_retention_ns);
    later = AddSaturating(later, b.last_bt);
    const auto first = static_cast<int64_t>(b.first_seq);
    const auto stop = static_cast<int64_t>(std::min<uint64_t>(end, INT64_MAX));
    int64_t below = stop;  // the first frame kept
    {
      sql::Stmt kept_at(*w_,
                        "SELECT seq FROM frames WHERE seq >= ?1 AND seq < ?2 AND boottime_ns >= ?3 "
                        "ORDER BY seq LIMIT 1");
      kept_at.Bind(1, first).Bind(2, stop).Bind(3, cutoff);
      if (kept_at.Step()) below = kept_at.Int(0);
      if (kept_at.failed()) return kept_at.status();
    }
    // A block goes whole (I18): the frames of the first one kept stay.
    auto kept = BlockStart(below);
    if (!kept.ok()) return kept.status();
    sql::Stmt s(*w_, "DELETE FROM frames WHERE seq >= ?1 AND seq < ?2");
    if (Status e = s.Bind(1, first).Bind(2, std::max(first, *kept)).Run(); !e.ok()) return e;
    d.expired += sqlite3_changes(w_->db());
    if (k + 1 < boots_.size() && cutoff > b.last_bt) ++d.boots_emptied;
  }
  if (d.boots_emptied > 0) {
    sql::Stmt s(*w_, "DELETE FROM boots WHERE first_seq < ?1");
    s.Bind(1, static_cast<int64_t>(boots_[d.boots_emptied].first_seq));
    if (Status e = s.Run(); !e.ok()) return e;
  }
  return Status::Ok();
}

// (I18) The seq of the first frame of the block holding the frame at seq
// `at` (`at` itself for a frame in no block, or none there).
Result<int64_t> RingStore::Impl::BlockStart(int64_t at) {
  sql::Stmt s(*w_, "SELECT data FROM frames WHERE seq = ?1");
  s.Bind(1, at);
  uint64_t head = 0, index = 0;
  if (s.Step() && FrameBlockRef(s.Blob(0), head, index) && index > 0 &&
      head < static_cast<uint64_t>(at)) {
    return static_cast<int64_t>(head);
  }
  if (s.failed()) return s.status();
  return at;
}

// (I6) Deletes the oldest data until `need_pages` more fit under `target_pages`.
Status RingStore::Impl::EnsureRoom(int64_t need_pages, int64_t target_pages, Deltas& d) {
  for (int guard = 0; guard < 10'000; ++guard) {
    auto pages = w_->QueryInt("PRAGMA page_count");
    auto free_pages = w_->QueryInt("PRAGMA freelist_count");
    if (!pages.ok()) return pages.status();
    if (!free_pages.ok()) return free_pages.status();
    int64_t excess = (*pages - *free_pages) + need_pages - target_pages;
    if (excess <= 0) return Status::Ok();
    auto progressed = TrimOnce(excess, d);
    if (!progressed.ok()) return progressed.status();
    if (!*progressed) return Status::Ok();  // nothing left to delete; SQLite will say FULL
  }
  return Status::Ok();
}

Result<bool> RingStore::Impl::TrimOnce(int64_t excess_pages, Deltas& d) {
  const int64_t frames = frames_ + d.inserted - d.expired - d.trimmed;
  const int64_t rollup_rows =
      rollup_rows_ + d.rollup_inserted - d.rollup_deleted - d.rollup_trimmed;
  std::optional<int64_t> oldest_raw, oldest_rollup;
  if (frames > 0) {
    sql::Stmt s(*w_, "SELECT realtime_ns FROM frames ORDER BY seq LIMIT 1");
    if (s.Step()) oldest_raw = s.Int(0);
    if (s.failed()) return s.status();
  }
  if (rollup_rows > 0) {
    auto o = internal::OldestRollupNs(*w_);
    if (!o.ok()) return o.status();
    oldest_rollup = *o;
  }
  if (!oldest_raw && !oldest_rollup) return false;
  int64_t newest = newest_rt_.value_or(0);
  if (!batch_.empty()) newest = batch_.back().realtime_ns;
  // The tier holding the larger fraction of its own retention gives way.
  auto fraction = [&](std::optional<int64_t> oldest, int64_t retention) {
    if (!oldest) return -1.0;
    return static_cast<double>(SpanNs(*oldest, newest)) / static_cast<double>(retention);
  };
  double raw_f = fraction(oldest_raw, options_.raw_retention_ns);
  double rollup_f = fraction(oldest_rollup, options_.rollup_retention_ns);
  if (oldest_raw && raw_f >= rollup_f) {
    double want = static_cast<double>(excess_pages * page_size_) / avg_row_bytes_;
    int64_t n = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(want * 1.1)) + 1, 1, frames);
    // With rollup rows to share the trim, at most half the frames a step:
    // the fractions are weighed again before the rest go.
    if (oldest_rollup) n = std::min(n, std::max<int64_t>(1, frames / 2));
    int64_t through = 0;  // the last seq deleted
    {
      sql::Stmt last(*w_, "SELECT seq FROM frames ORDER BY seq LIMIT 1 OFFSET ?1");
      last.Bind(1, n - 1);
      if (!last.Step()) return last.failed() ? Result<bool>(last.status()) : false;
      through = last.Int(0);
    }
    // A block goes whole (I18): through its last frame.
    {
      sql::Stmt next(*w_,
                     "SELECT seq FROM frames WHERE seq > ?1 AND substr(data, 1, 1) <> ?2 "
                     "ORDER BY seq LIMIT 1");
      const char in_block = static_cast<char>(kFrameFormatInBlock);
      next.Bind(1, through).BindBlob(2, std::string_view(&in_block, 1));
      if (next.Step()) {
        through = next.Int(0) - 1;
      } else if (next.failed()) {
        return next.status();
      } else {
        through = INT64_MAX;
      }
    }
    sql::Stmt s(*w_, "DELETE FROM frames WHERE seq <= ?1");
    if (Status e = s.Bind(1, through).Run(); !e.ok()) return e;
    int64_t deleted = sqlite3_changes(w_->db());
    d.trimmed += deleted;
    // (I7) Frames of periods held back: those periods go in with this
    // commit (or the next, if this one rolls back).
    if (through > static_cast<int64_t>(rollup_seq_)) frames_trimmed_ = true;
    return deleted > 0;
  }
  // Rollup: drop the oldest 1/16 of its span, at least one period.
  const uint64_t span = SpanNs(*oldest_rollup, newest);
  const int64_t cutoff = AddSaturating(
      *oldest_rollup, std::max(options_.rollup_period_ns, static_cast<int64_t>(span / 16)));
  int64_t deleted = 0;
  if (Status e = DeleteRollup(cutoff, deleted); !e.ok()) return e;
  d.rollup_trimmed += deleted;
  return deleted > 0;
}

}  // namespace edgemon::store

namespace edgemon::store {

// (I7) The closed periods held in memory: their rollup rows, merged into
// rows a clock step may have revisited, their spans (I15) and rollup_seq.
Status RingStore::Impl::WriteRollup(Deltas& d) {
  // The periods by chunk and channel, merged where one repeats (a clock
  // step revisited it), then into the chunk's row of each channel.
  std::map<std::pair<int64_t, uint32_t>, std::map<int64_t, internal::Agg>> rows;
  for (const auto& r : pending_rollup_) {
    auto& periods = rows[{internal::RollupChunk(r.t_ns), r.channel}];
    auto [it, fresh] = periods.try_emplace(r.t_ns, r.agg);
    if (!fresh) it->second.Merge(r.agg);
  }
  std::vector<internal::RollupRow> held;
  for (auto& [key, periods] : rows) {
    const auto [chunk, channel] = key;
    held.clear();
    {
      sql::Stmt s(*w_, "SELECT data FROM rollup WHERE chunk = ?1 AND channel = ?2");
      s.Bind(1, chunk).Bind(2, int64_t{channel});
      // A row that does not unpack (a damaged file) is replaced.
      if (s.Step() && !internal::UnpackRollup(chunk, s.Blob(0), held)) held.clear();
      if (s.failed()) return s.status();
    }
    d.rollup_inserted += static_cast<int64_t>(periods.size());
    for (const auto& r : held) {
      auto [it, fresh] = periods.try_emplace(r.t_ns, internal::Agg{r.count, r.min, r.max, r.sum});
      if (fresh) continue;
      it->second.Merge(internal::Agg{r.count, r.min, r.max, r.sum});
      --d.rollup_inserted;
    }
    held.clear();
    for (const auto& [t, a] : periods) held.push_back({t, a.count, a.min, a.max, a.sum});
    if (Status e = internal::PutRollupRow(*w_, "rollup", chunk, channel, held); !e.ok()) return e;
  }
  // The hours each channel's rows span (rollup_channels, I7).
  std::map<uint32_t, std::pair<int64_t, int64_t>> spans;
  for (const auto& r : pending_rollup_) {
    auto [it, fresh] = spans.try_emplace(r.channel, r.t_ns, r.t_ns);
    it->second.first = std::min(it->second.first, r.t_ns);
    it->second.second = std::max(it->second.second, r.t_ns);
  }
  for (const auto& [channel, span] : spans) {
    sql::Stmt s(*w_,
                "INSERT INTO rollup_channels(channel, first_ns, last_ns) VALUES(?1, ?2, ?3) "
                "ON CONFLICT(channel) DO UPDATE SET first_ns = min(first_ns, excluded.first_ns), "
                "last_ns = max(last_ns, excluded.last_ns)");
    s.Bind(1, int64_t{channel}).Bind(2, span.first).Bind(3, span.second);
    if (Status e = s.Run(); !e.ok()) return e;
  }
  for (const auto& r : pending_rollup_) d.Wrote(r.t_ns);
  for (const auto& r : pending_spans_) d.Wrote(r.t_ns);
  if (Status e = WriteSpans(d); !e.ok()) return e;
  if (rollup_dirty_) return WriteMeta("rollup_seq", static_cast<int64_t>(pending_rollup_seq_));
  return Status::Ok();
}

// (I7) The periods before `cutoff_ns` of the rows of `chunk`: each row
// keeps the rest, or goes when none is left.
Status RingStore::Impl::TrimRollupChunk(int64_t chunk, int64_t cutoff_ns, int64_t& deleted) {
  std::vector<std::tuple<int64_t, int64_t, std::string>> rows;  // (channel, periods, data)
  {
    sql::Stmt s(*w_,
                "SELECT channel, periods, data FROM rollup WHERE chunk = ?1 AND first_ns < ?2");
    s.Bind(1, chunk).Bind(2, cutoff_ns);
    while (s.Step()) rows.emplace_back(s.Int(0), s.Int(1), std::string(s.Blob(2)));
    if (s.failed()) return s.status();
  }
  std::vector<internal::RollupRow> periods;
  for (const auto& [channel, count, data] : rows) {
    periods.clear();
    const bool read = internal::UnpackRollup(chunk, data, periods);
    const auto kept = std::find_if(periods.begin(), periods.end(),
                                   [cutoff_ns](const auto& r) { return r.t_ns >= cutoff_ns; });
    deleted += read ? kept - periods.begin() : count;
    if (!read || kept == periods.end()) {
      sql::Stmt d(*w_, "DELETE FROM rollup WHERE chunk = ?1 AND channel = ?2");
      if (Status e = d.Bind(1, chunk).Bind(2, channel).Run(); !e.ok()) return e;
      continue;
    }
    periods.erase(periods.begin(), kept);
    if (Status e = internal::PutRollupRow(*w_, "rollup", chunk, channel, periods); !e.ok()) {
      return e;
    }
  }
  return Status::Ok();
}

// (I5, I6, I15) Deletes the rollup rows of the periods before `cutoff_ns`,
// and the span rows of those periods and of the blocks and days starting
// before it.
Status RingStore::Impl::DeleteRollup(int64_t cutoff_ns, int64_t& deleted) {
  // The chunks before the cutoff's, then its rows before the cutoff (I7).
  const int64_t chunk = internal::RollupChunk(cutoff_ns);
  {
    sql::Stmt n(*w_, "SELECT coalesce(sum(periods), 0) FROM rollup WHERE chunk < ?1");
    n.Bind(1, chunk);
    if (n.Step()) deleted += n.Int(0);
    if (n.failed()) return n.status();
    sql::Stmt s(*w_, "DELETE FROM rollup WHERE chunk < ?1");
    if (Status e = s.Bind(1, chunk).Run(); !e.ok()) return e;
    if (Status e = TrimRollupChunk(chunk, cutoff_ns, deleted); !e.ok()) return e;
    sql::Stmt gone(*w_, "DELETE FROM rollup_channels WHERE last_ns < ?1");
    if (Status e = gone.Bind(1, cutoff_ns).Run(); !e.ok()) return e;
    sql::Stmt later(*w_, "UPDATE rollup_channels SET first_ns = ?1 WHERE first_ns < ?1");
    if (Status e = later.Bind(1, cutoff_ns).Run(); !e.ok()) return e;
  }
  // Block and day rows (I15): the chunks before the cutoff's, then each
  // channel's rows of its chunk before the cutoff.
  for (int level = 1; level <= kTopSpanLevel; ++level) {
    const int64_t k = internal::SpanChunk(level, cutoff_ns);
    sql::Stmt a(*w_, "DELETE FROM span_stats WHERE level = ?1 AND chunk < ?2");
    if (Status e = a.Bind(1, int64_t{level}).Bind(2, k).Run(); !e.ok()) return e;
    for (size_t id = 1; id < chans_.size(); ++id) {
      sql::Stmt b(*w_,
                  "DELETE FROM span_stats WHERE level = ?1 AND chunk = ?2 AND channel = ?3 "
                  "AND t_ns < ?4");
      b.Bind(1, int64_t{level}).Bind(2, k).Bind(3, static_cast<int64_t>(id));
      if (Status e = b.Bind(4, cutoff_ns).Run(); !e.ok()) return e;
    }
  }
  // Clock values lead with (level, t_ns) (I15): one range per level; the
  // periods' packed rows by chunk.
  for (int64_t level = 0; level <= kTopSpanLevel; ++level) {
    sql::Stmt v(*w_, "DELETE FROM span_values WHERE level = ?1 AND t_ns < ?2");
    if (Status e = v.Bind(1, level).Bind(2, cutoff_ns).Run(); !e.ok()) return e;
  }
  if (Status e = TrimPeriodValues(cutoff_ns); !e.ok()) return e;
  for (int64_t level = 0; level <= kTopSpanLevel; ++level) {
    sql::Stmt s(*w_, "DELETE FROM spans WHERE level = ?1 AND t_ns < ?2");
    if (Status e = s.Bind(1, level).Bind(2, cutoff_ns).Run(); !e.ok()) return e;
  }
  return Status::Ok();
}

// (I15) The closed periods' spans and clock values, merged into rows a
// restart left open; then the blocks closed by the newest period.
Status RingStore::Impl::WriteSpans(Deltas& d) {
  for (const auto& r : pending_spans_) {
    sql::Stmt s(*w_,
                "INSERT INTO spans(level, t_ns, span_ns, frames, first_seq, first_ns, last_seq, "
                "last_ns, holes, max_step_ns, bad) VALUES(0, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
                "?10) ON CONFLICT(level, t_ns) DO UPDATE SET "
                "holes = holes + excluded.holes + max(excluded.first_seq - last_seq - 1, 0), "
                "max_step_ns = max(max_step_ns, excluded.max_step_ns, CASE WHEN "
                "excluded.first_seq = last_seq + 1 THEN excluded.first_ns - last_ns ELSE 0 END), "
                "frames = frames + excluded.frames, last_seq = excluded.last_seq, "
                "last_ns = excluded.last_ns, bad = bad + excluded.bad + "
                "(span_ns != excluded.span_ns) + (excluded.first_seq <= last_seq)");
    const auto& a = r.agg;
    s.Bind(1, r.t_ns).Bind(2, options_.rollup_period_ns).Bind(3, static_cast<int64_t>(a.frames));
    s.Bind(4, static_cast<int64_t>(a.first_seq)).Bind(5, a.first_ns);
    s.Bind(6, static_cast<int64_t>(a.last_seq)).Bind(7, a.last_ns);
    s.Bind(8, static_cast<int64_t>(a.holes)).Bind(9, a.max_step_ns);
    if (Status e = s.Bind(10, static_cast<int64_t>(a.bad)).Run(); !e.ok()) return e;
  }
  if (pending_spans_.empty()) return Status::Ok();
  if (Status e = WritePeriodValues(); !e.ok()) return e;
  // Blocks before the newest period's block are closed: no frame can fall
  // into them any more (stored time never goes back, I11); so are the days
  // before its day and the months before its month (written after the days
  // they are read from).
  for (int level = 1; level <= kTopSpanLevel; ++level) {
    const int64_t len = SpanLength(options_.rollup_period_ns, level);
    const int64_t open = FloorToMultiple(pending_spans_.back().t_ns, len);
    const int64_t through = spans_through_ns_[level];
    int64_t from = through;
    while (from < open) {
      sql::Stmt s(*w_,
                  "SELECT t_ns FROM spans WHERE level = 0 AND t_ns >= ?1 AND t_ns < ?2 "
                  "ORDER BY t_ns LIMIT 1");
      s.Bind(1, from).Bind(2, open);
      if (!s.Step()) {
        if (s.failed()) return s.status();
        break;
      }
      const int64_t t = FloorToMultiple(s.Int(0), len);
      if (Status e = WriteLevelSpan(level, t); !e.ok()) return e;
      d.Wrote(t);
      from = AddSaturating(t, len);
    }
    if (open > through) {
      if (Status e = WriteMeta(internal::SpanThroughKey(level), open); !e.ok()) return e;
      d.spans_through[level] = open;
    }
  }
  return Status::Ok();
}

// (I15) The periods' clock values before `cutoff_ns`: the chunks before
// its own, and its own row's periods before it.
Status RingStore::Impl::TrimPeriodValues(int64_t cutoff_ns) {
  const int64_t chunk = internal::RollupChunk(cutoff_ns);
  sql::Stmt d(*w_, "DELETE FROM period_values WHERE chunk < ?1");
  if (Status e = d.Bind(1, chunk).Run(); !e.ok()) return e;
  std::vector<internal::PeriodValue> values;
  {
    sql::Stmt s(*w_, "SELECT data FROM period_values WHERE chunk = ?1");
    s.Bind(1, chunk);
    if (!s.Step()) return s.failed() ? s.status() : Status::Ok();
    // One that does not unpack goes (its values are read as missing anyway).
    if (!internal::UnpackPeriodValues(chunk, s.Blob(0), values)) values.clear();
  }
  const auto kept = std::find_if(values.begin(), values.end(),
                                 [cutoff_ns](const auto& v) { return v.t_ns >= cutoff_ns; });
  if (kept == values.begin() && !values.empty()) return Status::Ok();
  values.erase(values.begin(), kept);
  return internal::PutPeriodValues(*w_, chunk, values);
}

// (I15) The closed periods' clock values into their chunks' rows of
// period_values, merged with what a row holds (the periods written before,
// or the part of a period written before a restart).
Status RingStore::Impl::WritePeriodValues() {
  // Counts stay within int64 (the packing's bound).
  auto add = [](uint64_t& c, uint64_t n) {
    constexpr auto kMax = static_cast<uint64_t>(INT64_MAX);
    c = n > kMax - std::min(c, kMax) ? kMax : c + n;
  };
  std::map<int64_t, std::map<std::tuple<int64_t, uint32_t, int64_t>, uint64_t>> chunks;
  for (const auto& r : pending_spans_) {
    for (const auto& [ch, v, n] : r.values) {
      if (ch == 0 || n == 0) continue;
      add(chunks[internal::RollupChunk(r.t_ns)][{r.t_ns, ch, v}], n);
    }
  }
  std::vector<internal::PeriodValue> values;
  for (auto& [chunk, merged] : chunks) {
    values.clear();
    {
      sql::Stmt s(*w_, "SELECT data FROM period_values WHERE chunk = ?1");
      s.Bind(1, chunk);
      // A row that does not unpack (a damaged file) is replaced.
      if (s.Step() && !internal::UnpackPeriodValues(chunk, s.Blob(0), values)) values.clear();
      if (s.failed()) return s.status();
    }
    for (const auto& v : values) {
      add(merged[{v.t_ns, v.channel, v.value}], v.count);
    }
    values.clear();
    for (const auto& [key, n] : merged) {
      const auto& [t, ch, v] = key;
      values.push_back(internal::PeriodValue{t, ch, v, n});
    }
    if (Status e = internal::PutPeriodValues(*w_, chunk, values); !e.ok()) return e;
  }
  return Status::Ok();
}

// (I15) One block's or day's rows from its periods' spans, rollup rows and
// values; one month's from its days' spans, span_stats and values, or none
// (a month before meta.spans_from_ns, or with a period whose day has no
// row, is read by day).
Status RingStore::Impl::WriteLevelSpan(int level, int64_t block_ns) {
  const int64_t len = SpanLength(options_.rollup_period_ns, level);
  const int64_t end = AddSaturating(block_ns, len);
  const bool month = level == 3;
  const int64_t parts = month ? 2 : 0;  // the level it is written from
  const int64_t part_len = SpanLength(options_.rollup_period_ns, static_cast<int>(parts));
  if (month) {
    sql::Stmt m(*w_, "SELECT value FROM meta WHERE key = 'spans_from_ns'");
    if (m.Step() && block_ns < m.Int(0)) return Status::Ok();
    if (m.failed()) return m.status();
  }
  internal::SpanAgg agg;
  {
    sql::Stmt s(*w_,
                "SELECT span_ns, frames, first_seq, first_ns, last_seq, last_ns, holes, "
                "max_step_ns, bad FROM spans WHERE level = ?3 AND t_ns >= ?1 AND t_ns < ?2 "
                "ORDER BY t_ns");
    s.Bind(1, block_ns).Bind(2, end).Bind(3, parts);
    while (s.Step()) {
      internal::SpanAgg p;
      internal::ReadSpanCounts(s, 1, p);
      p.bad = static_cast<uint64_t>(s.Int(8)) + (s.Int(0) != part_len ? 1 : 0);
      if (agg.frames > 0 && p.frames > 0 && p.first_seq <= agg.last_seq) ++p.bad;
      agg.Merge(p);
    }
    if (s.failed()) return s.status();
  }
  if (agg.frames == 0) return Status::Ok();
  if (month) {
    // Every frame of its periods is in its days.
    sql::Stmt n(*w_,
                "SELECT coalesce(sum(frames), 0) FROM spans WHERE level = 0 AND t_ns >= ?1 "
                "AND t_ns < ?2");
    n.Bind(1, block_ns).Bind(2, end);
    if (n.Step() && n.Int(0) != static_cast<int64_t>(agg.frames)) return Status::Ok();
    if (n.failed()) return n.status();
  }
  // Clock values: a block with too many distinct ones is not described.
  // (Only clock channels have period values; one pass over the block's.)
  // A block's or a day's are read from its periods' packed rows.
  std::map<uint32_t, std::map<int64_t, uint64_t>> block_values;
  if (agg.bad == 0 && parts == 0) {
    Status read = internal::ForEachPeriodValue(
        *w_, block_ns, end,
        [&](const internal::PeriodValue& v) { block_values[v.channel][v.value] += v.count; });
    if (!read.ok()) return read;
    for (const auto& [ch, values] : block_values) {
      if (values.size() <= internal::kMaxBlockValues) continue;
      ++agg.bad;
      break;
    }
  } else if (agg.bad == 0) {
    sql::Stmt n(*w_,
                "SELECT count(DISTINCT value) AS n FROM span_values "
                "WHERE level = ?3 AND t_ns >= ?1 AND t_ns < ?2 GROUP BY channel ORDER BY n DESC "
                "LIMIT 1");
    n.Bind(1, block_ns).Bind(2, end).Bind(3, parts);
    if (n.Step() && n.Int(0) > static_cast<int64_t>(internal::kMaxBlockValues)) ++agg.bad;
    if (n.failed()) return n.status();
  }
  sql::Stmt s(*w_,
              "INSERT OR REPLACE INTO spans(level, t_ns, span_ns, frames, first_seq, first_ns, "
              "last_seq, last_ns, holes, max_step_ns, bad) "
              "VALUES(?11, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  s.Bind(11, int64_t{level});
  s.Bind(1, block_ns).Bind(2, len).Bind(3, static_cast<int64_t>(agg.frames));
  s.Bind(4, static_cast<int64_t>(agg.first_seq)).Bind(5, agg.first_ns);
  s.Bind(6, static_cast<int64_t>(agg.last_seq)).Bind(7, agg.last_ns);
  s.Bind(8, static_cast<int64_t>(agg.holes)).Bind(9, agg.max_step_ns);
  if (Status e = s.Bind(10, static_cast<int64_t>(agg.bad)).Run(); !e.ok()) return e;
  if (month) {
    // Its days' rows (chunk 0, I15), every channel's at once.
    sql::Stmt t(*w_,
                "INSERT OR REPLACE INTO span_stats(level, chunk, channel, t_ns, count, min, max, "
                "sum) SELECT 3, 0, channel, ?1, sum(count), min(min), max(max), total(sum) "
                "FROM span_stats WHERE level = 2 AND chunk = 0 AND t_ns >= ?1 AND t_ns < ?2 "
                "GROUP BY channel");
    if (Status e = t.Bind(1, block_ns).Bind(2, end).Run(); !e.ok()) return e;
  } else {
    // Every channel's periods of the block's chunks (I7), in one pass; sums
    // in a long double, exact where an int64 sum would be.
    std::map<uint32_t, std::pair<internal::Agg, long double>> by;
    const auto ids = static_cast<uint32_t>(chans_.size());
    internal::ChunkRange chunks{internal::RollupChunk(block_ns), internal::RollupChunk(end - 1)};
    Status read = internal::ForEachRollupRow(*w_, chunks, 0, block_ns, end,
                                             [&](uint32_t ch, const internal::RollupRow& r) {
                                               if (ch < 1 || ch >= ids) return;
                                               auto& [a, sum] = by[ch];
                                               a.Merge(internal::Agg{r.count, r.min, r.max, 0});
                                               sum += static_cast<long double>(r.sum);
                                             });
    if (!read.ok()) return read;
    for (const auto& [ch, a] : by) {
      sql::Stmt t(*w_,
                  "INSERT OR REPLACE INTO span_stats(level, chunk, channel, t_ns, count, min, "
                  "max, sum) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
      t.Bind(1, int64_t{level}).Bind(2, internal::SpanChunk(level, block_ns));
      t.Bind(3, int64_t{ch}).Bind(4, block_ns).Bind(5, a.first.count);
      t.Bind(6, a.first.min).Bind(7, a.first.max);
      if (Status e = t.BindReal(8, static_cast<double>(a.second)).Run(); !e.ok()) return e;
    }
  }
  if (agg.bad == 0 && parts == 0) {
    for (const auto& [ch, values] : block_values) {
      for (const auto& [value, n] : values) {
        sql::Stmt v(*w_,
                    "INSERT OR REPLACE INTO span_values(level, channel, t_ns, value, count) "
                    "VALUES(?1, ?2, ?3, ?4, ?5)");
        v.Bind(1, int64_t{level}).Bind(2, int64_t{ch}).Bind(3, block_ns).Bind(4, value);
        const auto count = static_cast<int64_t>(std::min<uint64_t>(n, INT64_MAX));
        if (Status e = v.Bind(5, count).Run(); !e.ok()) return e;
      }
    }
  } else if (agg.bad == 0) {
    sql::Stmt v(*w_,
                "INSERT OR REPLACE INTO span_values(level, channel, t_ns, value, count) "
                "SELECT ?3, channel, ?1, value, sum(count) FROM span_values "
                "WHERE level = ?4 AND t_ns >= ?1 AND t_ns < ?2 GROUP BY channel, value");
    v.Bind(3, int64_t{level}).Bind(4, parts);
    if (Status e = v.Bind(1, block_ns).Bind(2, end).Run(); !e.ok()) return e;
  }
  return Status::Ok();
}

}  // namespace edgemon::store
