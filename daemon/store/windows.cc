// The windows table (I12): opening, ending and adding windows (committed
// by the writer thread before they return), reading them back, the row cap
// and the trim that follows the history (I5).
#include <limits>

#include "daemon/store/ring_store_impl.h"

namespace edgemon::store {
namespace {

using internal::OldestFrameNs;

// The statements are cached by address: each is one literal.
#define EDGEMON_WINDOW_COLUMNS                                              \
  "SELECT id, label, start_ns, end_ns, abandoned, lease_ns, owner, items, " \
  "exit_status, input_rail, input_energy_mj "
Window WindowRow(sql::Stmt& s) {
  Window w{s.Int(0), s.Text(1), s.Int(2), s.OptInt(3), s.Int(4) != 0, s.OptInt(5), s.Text(6), {}};
  if (!s.IsNull(7)) w.result.items = s.Double(7);
  if (auto e = s.OptInt(8)) w.result.exit_status = static_cast<int32_t>(*e);
  w.result.input_rail = s.Text(9);
  if (!s.IsNull(10)) w.result.input_energy_mj = s.Double(10);
  return w;
}

}  // namespace

// ---- Callers' side: queued to the writer, answered once committed ----

Result<int64_t> RingStore::Impl::BeginWindow(const std::string& label, int64_t start_ns,
                                             std::optional<int64_t> lease_ns,
                                             const std::string& owner) {
  return Submit(SyncOp::Kind::kBeginWindow, label, start_ns, 0, lease_ns, owner);
}

Status RingStore::Impl::EndWindow(int64_t id, int64_t end_ns, bool abandoned,
                                  const WindowResult& result) {
  auto r = Submit(SyncOp::Kind::kEndWindow, {}, id, end_ns,
                  abandoned ? std::optional<int64_t>(1) : std::nullopt, {}, std::nullopt, result);
  return r.ok() ? Status::Ok() : r.status();
}

Status RingStore::Impl::EndWindowFrom(int64_t id, int64_t start_ns, int64_t end_ns,
                                      const WindowResult& result) {
  if (end_ns < start_ns) return Status::InvalidArgument("window end is before its start");
  auto r = Submit(SyncOp::Kind::kEndWindow, {}, id, end_ns, std::nullopt, {}, start_ns, result);
  return r.ok() ? Status::Ok() : r.status();
}

Result<int64_t> RingStore::Impl::AddWindow(const std::string& label, int64_t start_ns,
                                           int64_t end_ns) {
  if (end_ns < start_ns) return Status::InvalidArgument("window end is before its start");
  return Submit(SyncOp::Kind::kAddWindow, label, start_ns, end_ns);
}

Result<std::optional<Window>> RingStore::Impl::GetWindow(int64_t id) {
  Lease l(*this);
  if (!l.ok()) return l.status();
  sql::Stmt s(l.conn(), EDGEMON_WINDOW_COLUMNS "FROM windows WHERE id = ?1");
  s.Bind(1, id);
  if (s.Step()) return std::optional<Window>(WindowRow(s));
  if (s.failed()) return s.status();
  return std::optional<Window>();
}

Result<std::vector<Window>> RingStore::Impl::ListWindows(
    int64_t from_ns, int64_t to_ns, size_t limit,
    std::optional<std::pair<int64_t, int64_t>> after) {
  Lease l(*this);
  if (!l.ok()) return l.status();
  std::vector<Window> out;
  sql::Stmt s(l.conn(), EDGEMON_WINDOW_COLUMNS
              "FROM windows "
              "WHERE start_ns < ?2 AND (end_ns IS NULL OR end_ns >= ?1) "
              "AND (start_ns > ?3 OR (start_ns = ?3 AND id > ?4)) "
              "ORDER BY start_ns, id LIMIT ?5");
  s.Bind(1, from_ns).Bind(2, to_ns);
  s.Bind(3, after ? after->first : std::numeric_limits<int64_t>::min());
  s.Bind(4, after ? after->second : std::numeric_limits<int64_t>::min());
  s.Bind(5, limit == 0 ? int64_t{-1} : static_cast<int64_t>(limit));
  while (s.Step()) out.push_back(WindowRow(s));
  if (s.failed()) return s.status();
  return out;
}

Result<std::vector<Window>> RingStore::Impl::OpenWindows() {
  Lease l(*this);
  if (!l.ok()) return l.status();
  std::vector<Window> out;
  sql::Stmt s(l.conn(), EDGEMON_WINDOW_COLUMNS "FROM windows WHERE end_ns IS NULL ORDER BY id");
  while (s.Step()) out.push_back(WindowRow(s));
  if (s.failed()) return s.status();
  return out;
}

Result<std::vector<Window>> RingStore::Impl::ClosedWindowsAfter(int64_t end_ns, int64_t id,
                                                                size_t limit) {
  Lease l(*this);
  if (!l.ok()) return l.status();
  std::vector<Window> out;
  sql::Stmt s(l.conn(), EDGEMON_WINDOW_COLUMNS
              "FROM windows WHERE end_ns IS NOT NULL "
              "AND (end_ns > ?1 OR (end_ns = ?1 AND id > ?2)) ORDER BY end_ns, id LIMIT ?3");
  s.Bind(1, end_ns).Bind(2, id);
  s.Bind(3, limit == 0 ? int64_t{-1} : static_cast<int64_t>(limit));
  while (s.Step()) out.push_back(WindowRow(s));
  if (s.failed()) return s.status();
  return out;
}
#undef EDGEMON_WINDOW_COLUMNS

// ---- Writer thread (HandleSyncOp) ----

// kBeginWindow, kAddWindow: a new row, room made first (I12).
Result<int64_t> RingStore::Impl::InsertWindow(const SyncOp& op) {
  int64_t id = 0;
  Status s = InWriteTxn([&]() -> Status {
    if (Status e = CapWindows(); !e.ok()) return e;
    sql::Stmt ins(*w_,
                  "INSERT INTO windows(label, start_ns, end_ns, lease_ns, owner) "
                  "VALUES(?1, ?2, ?3, ?4, ?5)");
    ins.Bind(1, std::string_view(op.label)).Bind(2, op.a).Bind(5, std::string_view(op.owner));
    if (op.kind == SyncOp::Kind::kAddWindow) {
      ins.Bind(3, op.b);
    } else {
      ins.BindNull(3);
    }
    if (op.c) {
      ins.Bind(4, *op.c);
    } else {
      ins.BindNull(4);
    }
    if (Status e = ins.Run(); !e.ok()) return e;
    id = sqlite3_last_insert_rowid(w_->db());
    return Status::Ok();
  });
  if (!s.ok()) return s.Context("window");
  return id;
}

// kEndWindow: sets the end of an open window (and, with op.d, moves its
// start later).
Status RingStore::Impl::WriteWindowEnd(const SyncOp& op) {
  return InWriteTxn([&]() -> Status {
    sql::Stmt q(*w_, "SELECT start_ns, end_ns FROM windows WHERE id = ?1");
    q.Bind(1, op.a);
    if (!q.Step()) {
      return q.failed() ? q.status() : Status::NotFound("no window " + std::to_string(op.a));
    }
    if (!q.IsNull(1))
      return Status::FailedPrecondition("window " + std::to_string(op.a) + " already ended");
    if (op.b < q.Int(0)) {
      return Status::InvalidArgument("window " + std::to_string(op.a) +
                                     " would end before its start");
    }
    if (op.d && *op.d < q.Int(0)) {
      return Status::InvalidArgument("window " + std::to_string(op.a) +
                                     " would start before its recorded start");
    }
    sql::Stmt u(
        *w_,
        "UPDATE windows SET end_ns = ?2, abandoned = ?3, start_ns = coalesce(?4, start_ns), "
        "items = ?5, exit_status = ?6, input_rail = ?7, input_energy_mj = ?8 WHERE id = ?1");
    const WindowResult& r = op.result;
    u.Bind(1, op.a).Bind(2, op.b).Bind(3, int64_t{op.c ? 1 : 0}).Bind(4, op.d);
    u.BindReal(5, r.items).Bind(7, std::string_view(r.input_rail)).BindReal(8, r.input_energy_mj);
    u.Bind(6, r.exit_status ? std::optional<int64_t>(*r.exit_status) : std::nullopt);
    return u.Run();
  });
}

// (I12) Room for one more window row: the oldest closed windows go first.
Status RingStore::Impl::CapWindows() {
  auto n = w_->QueryInt("SELECT count(*) FROM windows");
  if (!n.ok()) return n.status();
  const int64_t cap = static_cast<int64_t>(max_windows());
  if (*n < cap) return Status::Ok();
  sql::Stmt d(*w_,
              "DELETE FROM windows WHERE id IN (SELECT id FROM windows WHERE end_ns IS NOT NULL "
              "ORDER BY end_ns, id LIMIT ?1)");
  if (Status e = d.Bind(1, *n - cap + 1).Run(); !e.ok()) return e;
  if (sqlite3_changes(w_->db()) < *n - cap + 1) {
    return Status::ResourceExhausted("the windows table is full of open windows (limit " +
                                     std::to_string(cap) + ")");
  }
  return Status::Ok();
}

// (I5) After a size trim: closed windows that ended before the oldest data.
Status RingStore::Impl::TrimWindowsToData() {
  auto raw = OldestFrameNs(*w_);
  if (!raw.ok()) return raw.status();
  std::optional<int64_t> oldest = *raw;
  auto rollup = internal::OldestRollupNs(*w_);
  if (!rollup.ok()) return rollup.status();
  if (*rollup) oldest = std::min(oldest.value_or(**rollup), **rollup);
  if (!oldest) return Status::Ok();
  sql::Stmt w(*w_, "DELETE FROM windows WHERE end_ns IS NOT NULL AND end_ns < ?1");
  return w.Bind(1, *oldest).Run();
}

}  // namespace edgemon::store
