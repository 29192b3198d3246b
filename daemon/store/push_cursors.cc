// Push destinations' cursors (I16): written by the writer thread in their
// own transaction once the receiver acknowledged, read on a reader's
// connection; and the closed windows a destination has not had yet.
#include <limits>

#include "daemon/store/ring_store_impl.h"

namespace edgemon::store {

Result<std::optional<PushCursor>> RingStore::Impl::GetPushCursor(const std::string& destination) {
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
  const int64_t now = clock_.RealtimeNs();
  return InWriteTxn([&]() -> Status {
    sql::Stmt u(*w_,
                "INSERT OR REPLACE INTO push_cursors(destination, seq, realtime_ns, "
                "window_end_ns, window_id, updated_ns) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
    return u.Bind(1, std::string_view(op.label))
        .Bind(2, op.a)
        .Bind(3, op.b)
        .Bind(4, op.c.value_or(std::numeric_limits<int64_t>::min()))
        .Bind(5, op.d.value_or(0))
        .Bind(6, now)
        .Run();
  });
}

}  // namespace edgemon::store
