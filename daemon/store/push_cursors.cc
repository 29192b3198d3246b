// Push destinations' cursors (I16): written by the writer thread once the
// receiver acknowledged, in their own transaction (a committed frame) or
// with the commit that stores their frame (one still queued), read on a
// reader's connection; and the closed windows a destination has not had yet.
#include <limits>

#include "daemon/store/ring_store_impl.h"

namespace edgemon::store {

Result<std::optional<PushCursor>> RingStore::Impl::GetPushCursor(const std::string& destination) {
  {
    std::lock_guard lk(cursor_mu_);
    if (auto it = held_cursors_.find(destination); it != held_cursors_.end()) {
      return std::optional<PushCursor>(it->second);
    }
  }
  Lease l(*this);
  if (!l.ok()) return l.status();
  sql::Stmt s(l.conn(),
              "SELECT seq, realtime_ns, window_end_ns, window_id FROM push_cursors "
              "WHERE destination = ?1");
  s.Bind(1, std::string_view(destination));
  if (s.Step()) {
    return std::optional<PushCursor>(
        PushCursor{static_cast<uint64_t>(s.Int(0)), s.Int(1), s.Int(2), s.Int(3)});
  }
  if (s.failed()) return s.status();
  return std::optional<PushCursor>();
}

Status RingStore::Impl::SetPushCursor(const std::string& destination, const PushCursor& cursor) {
  if (destination.empty()) return Status::InvalidArgument("push cursor without a destination");
  if (cursor.seq > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Status::InvalidArgument("push cursor seq out of range");
  }
  auto r = Submit(SyncOp::Kind::kSetCursor, destination, static_cast<int64_t>(cursor.seq),
                  cursor.realtime_ns, cursor.window_end_ns, {}, cursor.window_id);
  return r.ok() ? Status::Ok() : r.status();
}

// kSetCursor: label = destination, a = seq, b = realtime_ns, c = window
// end, d = window id.
Status RingStore::Impl::WriteCursor(const SyncOp& op) {
  const PushCursor c{static_cast<uint64_t>(op.a), op.b,
                     op.c.value_or(std::numeric_limits<int64_t>::min()), op.d.value_or(0)};
  if (c.seq >= committed_next_.load(std::memory_order_acquire)) {
    // A frame still queued (read through FramesAfterWithQueued): the cursor
    // goes into the file with that frame, never before it, so a power cut
    // cannot leave a cursor past the frames the file holds (whose seqs the
    // next boot's frames take again). Costs no transaction of its own.
    std::lock_guard lk(cursor_mu_);
    held_cursors_[op.label] = c;
    return Status::Ok();
  }
  Status s = InWriteTxn([&] { return InsertCursorRow(op.label, c); });
  if (s.ok()) {
    std::lock_guard lk(cursor_mu_);
    held_cursors_.erase(op.label);
  }
  return s;
}

Status RingStore::Impl::InsertCursorRow(const std::string& destination, const PushCursor& c) {
  sql::Stmt u(*w_,
              "INSERT OR REPLACE INTO push_cursors(destination, seq, realtime_ns, "
              "window_end_ns, window_id, updated_ns) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
  return u.Bind(1, std::string_view(destination))
      .Bind(2, static_cast<int64_t>(c.seq))
      .Bind(3, c.realtime_ns)
      .Bind(4, c.window_end_ns)
      .Bind(5, c.window_id)
      .Bind(6, clock_.RealtimeNs())
      .Run();
}

Status RingStore::Impl::InsertHeldCursors() {
  // Only the writer thread changes held_cursors_: read without the lock.
  for (const auto& [destination, c] : held_cursors_) {
    if (Status s = InsertCursorRow(destination, c); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace edgemon::store
