// RingStore: opening a store (validating the file, moving a bad one aside,
// loading the writer's state from it), closing it, and the public facade
// that forwards to RingStore::Impl. Read ring_store.h's design note first:
// (In) refers to its invariants; ring_store_impl.h maps the other files.
#include "daemon/store/ring_store.h"

#include <dirent.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "daemon/store/frame_codec.h"
#include "daemon/store/ring_store_impl.h"
#include "edgemon/paths.h"

namespace edgemon::store {
namespace {

// (I19) Reading the store must not write to it. Under relatime, the default
// mount option, the first read of a file after it changed updates its atime:
// the first read of the WAL after each commit dirties its inode, and ext4
// commits that to its journal (three blocks, 12 KiB), once a commit. The
// no-atime inode flag (chattr +A, which the file's owner may set) stops it.
// It is set through the descriptors SQLite holds: closing a descriptor of
// our own on one of these files would drop every POSIX lock this process
// holds on it, SQLite's among them, and another process could then take the
// database for unused and delete its WAL. A file system without inode flags
// (tmpfs, vfat) keeps updating atimes: the store works the same on it.
void KeepAccessTimes(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return;  // as SQLite names its WAL
  std::vector<std::pair<dev_t, ino_t>> files;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    struct stat st {};
    if (::stat((std::string(resolved) + suffix).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      files.emplace_back(st.st_dev, st.st_ino);
    }
  }
  DIR* dir = ::opendir(HostProcPath("self/fd").c_str());
  if (dir == nullptr) return;
  const int own = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == own || fd < 0 || fd > INT_MAX) continue;
    struct stat st {};
    if (::fstat(static_cast<int>(fd), &st) != 0 || !S_ISREG(st.st_mode) ||
        std::find(files.begin(), files.end(), std::pair(st.st_dev, st.st_ino)) == files.end()) {
      continue;
    }
    int flags = 0;
    if (::ioctl(static_cast<int>(fd), FS_IOC_GETFLAGS, &flags) == 0 &&
        (flags & FS_NOATIME_FL) == 0) {
      flags |= FS_NOATIME_FL;
      (void)::ioctl(static_cast<int>(fd), FS_IOC_SETFLAGS, &flags);
    }
  }
  ::closedir(dir);
}

using internal::ChannelFromRow;
using internal::FileSize;
using internal::IsBadFileCode;
using internal::IsDamageCode;

constexpr int64_t kMinMaxBytes = 256 << 10;

}  // namespace

std::string_view ToString(WriterState s) {
  switch (s) {
    case WriterState::kIdle:
      return "idle";
    case WriterState::kCommitting:
      return "committing";
    case WriterState::kFailing:
      return "failing";
    case WriterState::kStopped:
      return "stopped";
  }
  return "?";
}

// ============================ Opening ============================

RingStore::Impl::Verdict RingStore::Impl::Validate() {
  Verdict v;
  if (struct stat st{}; stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    v.status = Status::InvalidArgument("not a regular file");
    return v;
  }
  if (auto size = FileSize(path_); size && *size > 0) {
    char header[16] = {};
    FILE* f = std::fopen(path_.c_str(), "rb");
    if (!f) {
      v.status = Status::Internal("cannot read " + path_);
      return v;
    }
    size_t n = std::fread(header, 1, sizeof header, f);
    std::fclose(f);
    if (n < sizeof header ||
        std::string_view(header, 16) != std::string_view("SQLite format 3\0", 16)) {
      v.bad = "not an SQLite database (bad header)";
      return v;
    }
  }
  auto conn = sql::Conn::Open(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!conn.ok()) {
    v.status = conn.status();
    return v;
  }
  w_ = std::move(conn.value());
  sqlite3_busy_timeout(w_->db(), 5000);
  auto check = w_->QueryText("PRAGMA quick_check");
  if (!check.ok()) {
    if (IsBadFileCode(w_->failure_code())) {
      v.bad = "corrupt database (" + check.status().message() + ")";
    } else {
      v.status = check.status();
    }
    return v;
  }
  if (*check != "ok") {
    v.bad = "corrupt database (quick_check: " + check->substr(0, 200) + ")";
    return v;
  }
  auto app = w_->QueryInt("PRAGMA application_id");
  auto version = w_->QueryInt("PRAGMA user_version");
  auto objects = w_->QueryInt("SELECT count(*) FROM sqlite_schema");
  for (auto* r : {&app, &version, &objects}) {
    if (!r->ok()) {
      if (IsBadFileCode(w_->failure_code())) {
        v.bad = "corrupt database (" + r->status().message() + ")";
      } else {
        v.status = r->status();
      }
      return v;
    }
  }
  if (*app == kApplicationId) {
    if (*version > kSchemaVersion) {
      v.status = Status::DataLoss("written by a newer edgemon (schema version " +
                                  std::to_string(*version) + ", this build knows up to " +
                                  std::to_string(kSchemaVersion) + "); refusing to touch it");
    }
    return v;
  }
  if (*app == 0 && *objects == 0) return v;  // empty: a new store
  char id[16];
  std::snprintf(id, sizeof id, "0x%08x", static_cast<uint32_t>(*app));
  v.bad = "not an edgemon store (a foreign SQLite database: application_id " + std::string(id) +
          ", " + std::to_string(*objects) + " schema objects)";
  return v;
}

Status RingStore::Impl::MoveAside(std::string& moved_to) {
  w_.reset();
  char stamp[32];
  const auto now = static_cast<time_t>(FloorDiv(clock_.RealtimeNs(), 1'000'000'000));
  tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  std::string base = path_ + ".bad-" + stamp;
  moved_to = base;
  for (int i = 2; FileSize(moved_to) && i < 1000; ++i) moved_to = base + "-" + std::to_string(i);
  if (rename(path_.c_str(), moved_to.c_str()) != 0) {
    return Status::Internal("cannot rename " + path_ + " to " + moved_to + ": " + strerror(errno));
  }
  // The journal files belong to the bad file: keep them with it so they are
  // neither lost nor replayed into the new store.
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    std::string from = path_ + suffix;
    if (FileSize(from) && rename(from.c_str(), (moved_to + suffix).c_str()) != 0) {
      return Status::Internal("cannot rename " + from + ": " + strerror(errno));
    }
  }
  return Status::Ok();
}

Status RingStore::Impl::Init() {
  const auto& o = options_;
  if (o.raw_retention_ns <= 0) return Status::InvalidArgument("raw_retention must be positive");
  if (o.rollup_period_ns <= 0) return Status::InvalidArgument("rollup_period must be positive");
  if (o.rollup_retention_ns < o.rollup_period_ns) {
    return Status::InvalidArgument("rollup_retention must be at least one rollup_period");
  }
  if (o.max_bytes != 0 && o.max_bytes < kMinMaxBytes) {
    return Status::InvalidArgument("max_bytes must be 0 (no cap) or at least 256 KiB, got " +
                                   std::to_string(o.max_bytes));
  }
  if (o.batch_frames == 0) return Status::InvalidArgument("batch_frames must be at least 1");
  if (o.commit_interval_ms < 0)
    return Status::InvalidArgument("commit_interval_ms must not be negative");

  Verdict v = Validate();
  if (!v.status.ok()) return v.status.Context(path_);
  if (v.bad.empty() && !treat_as_bad_.empty()) v.bad = treat_as_bad_;
  if (!v.bad.empty()) {
    if (!o.recreate_bad) return Status::DataLoss(path_ + ": " + v.bad + "; left untouched");
    std::string moved_to;
    if (Status s = MoveAside(moved_to); !s.ok()) return s;
    Report(StoreEvent::Kind::kRecreated,
           path_ + ": " + v.bad + "; moved to " + moved_to + ", starting a new store");
    v = Validate();
    if (!v.status.ok()) return v.status.Context(path_);
    if (!v.bad.empty()) return Status::DataLoss(path_ + ": " + v.bad + " (after moving aside)");
  }
  // Damage that quick_check does not see (an index, a page it skips) shows
  // up here: it is a bad store too, not a passing failure.
  for (Status (Impl::*step)() : {&Impl::Setup, &Impl::LoadState}) {
    if (Status s = (this->*step)(); !s.ok()) {
      if (IsDamageCode(w_->failure_code())) {
        damaged_opening_ = "damaged (" + s.message() + ")";
        return Status::DataLoss(path_ + ": " + damaged_opening_);
      }
      return s.Context(path_);
    }
  }
  // Setup read and wrote through the WAL, so its two files exist now.
  KeepAccessTimes(path_);
  return Status::Ok();
}

// (I6) The free pages go back to the file system. A store made before
// auto_vacuum=NONE (with a pointer map, auto_vacuum=INCREMENTAL) moves them
// to its end and truncates; one made since is rebuilt by VACUUM, which
// copies it through a temporary file (not memory: it can be as large as
// the cap) and then through the WAL.
Status RingStore::Impl::GiveBackFreePages() {
  auto mode = w_->QueryInt("PRAGMA auto_vacuum");
  if (!mode.ok()) return mode.status();
  if (*mode == 2) return w_->Exec("PRAGMA incremental_vacuum");
  if (Status e = w_->Exec("PRAGMA temp_store=FILE"); !e.ok()) return e;
  Status vacuumed = w_->Exec("VACUUM");
  if (Status e = w_->Exec("PRAGMA temp_store=MEMORY"); !e.ok()) return e;
  return vacuumed;
}

Status RingStore::Impl::LoadState() {
  // Channels (I4).
  {
    sql::Stmt s(*w_,
                "SELECT id, key, kind, name, field, unit, device, parent, flags, min, max, crit, "
                "trips, attrs, first_seen_ns FROM channels ORDER BY id");
    while (s.Step()) {
      StoredChannel sc = ChannelFromRow(s);
      if (sc.store_id <= 0 || sc.store_id > UINT32_MAX) continue;
      auto id = static_cast<size_t>(sc.store_id);
      if (chans_.size() <= id) chans_.resize(id + 1);
      auto& c = chans_[id];
      c.key = std::move(sc.key);
      c.desc = std::move(sc.channel);
      c.desc.id = 0;
      c.first_seen_ns = sc.first_seen_ns;
      id_by_key_[c.key] = static_cast<uint32_t>(id);
    }
    if (s.failed()) return s.status();
  }
  // Counters kept in meta.
  {
    sql::Stmt s(*w_, "SELECT key, value FROM meta");
    while (s.Step()) {
      std::string k = s.Text(0);
      if (k == "frames") frames_ = s.Int(1);
      if (k == "rollup_rows") rollup_rows_ = s.Int(1);
      if (k == "rollup_seq") rollup_seq_ = static_cast<uint64_t>(s.Int(1));
      if (k == "channels_version") channels_version_ = s.Int(1);
      for (int level = 1; level <= kTopSpanLevel; ++level) {
        if (k == internal::SpanThroughKey(level)) spans_through_ns_[level] = s.Int(1);
      }
    }
    if (s.failed()) return s.status();
  }
  pending_rollup_seq_ = rollup_seq_;
  folded_seq_ = rollup_seq_;
  // Newest frame: seq continues (I2), retention is relative to it (I5).
  {
    sql::Stmt s(*w_, "SELECT seq, realtime_ns, boottime_ns FROM frames ORDER BY seq DESC LIMIT 1");
    if (s.Step()) {
      std::lock_guard lk(mu_);
      next_seq_ = static_cast<uint64_t>(s.Int(0)) + 1;
      newest_rt_ = s.Int(1);
      committed_newest_.store(s.Int(1), std::memory_order_release);
      last_rt_ = newest_rt_;
      last_bt_ = s.Int(2);
      last_offset_ = SubSaturating(*last_rt_, *last_bt_);
    }
    if (s.failed()) return s.status();
  }
  // Boot segments (I5), and the boottime of each one's last frame held.
  {
    std::vector<int64_t> starts;
    sql::Stmt s(*w_, "SELECT first_seq FROM boots ORDER BY first_seq");
    while (s.Step()) starts.push_back(s.Int(0));
    if (s.failed()) return s.status();
    for (size_t k = 0; k < starts.size(); ++k) {
      sql::Stmt l(*w_,
                  "SELECT boottime_ns FROM frames WHERE seq >= ?1 AND seq < ?2 "
                  "ORDER BY seq DESC LIMIT 1");
      l.Bind(1, starts[k]).Bind(2, k + 1 < starts.size() ? starts[k + 1] : INT64_MAX);
      if (l.Step()) boots_.push_back(BootSeg{static_cast<uint64_t>(starts[k]), l.Int(0)});
      if (l.failed()) return l.status();
    }
  }
  {
    std::lock_guard lk(mu_);
    next_seq_ = std::max(next_seq_, rollup_seq_ + 1);
    committed_next_.store(next_seq_, std::memory_order_release);
  }
  // Last stored counter values (I8): newest frames first.
  {
    size_t missing = 0;
    for (size_t id = 1; id < chans_.size(); ++id) {
      if (chans_[id].desc.Has(kFlagCounter)) ++missing;
    }
    sql::Stmt s(*w_, "SELECT data FROM frames ORDER BY seq DESC LIMIT 100000");
    internal::FrameReader frames(*w_);
    while (missing > 0 && s.Step()) {
      pairs_.clear();
      // (I14) a blob that does not decode gives nothing
      if (!frames.ForEach(s.Blob(0), [&](uint32_t id, int64_t v) { pairs_.emplace_back(id, v); })) {
        continue;
      }
      for (const auto& [id, v] : pairs_) {
        if (id < chans_.size() && chans_[id].desc.Has(kFlagCounter) && !chans_[id].last_counter) {
          chans_[id].last_counter = v;
          --missing;
        }
      }
    }
    if (s.failed()) return s.status();
    for (size_t id = 1; id < chans_.size() && missing > 0; ++id) {
      auto& c = chans_[id];
      if (!c.desc.Has(kFlagCounter) || c.last_counter) continue;
      auto r = internal::RollupNeighbour(*w_, static_cast<uint32_t>(id), INT64_MAX,
                                         internal::RollupSide::kAtOrBefore);
      if (!r.ok()) return r.status();
      if (*r) c.last_counter = (*r)->max;
    }
  }
  // Rebuild the open rollup period from the frames it lacks (I7).
  {
    sql::Stmt s(*w_, "SELECT seq, realtime_ns, data FROM frames WHERE seq > ?1 ORDER BY seq");
    s.Bind(1, static_cast<int64_t>(rollup_seq_));
    internal::FrameReader frames(*w_);
    while (s.Step()) {
      pairs_.clear();
      bool decoded =
          frames.ForEach(s.Blob(2), [&](uint32_t id, int64_t v) { pairs_.emplace_back(id, v); });
      // (I14) the frame counts for its seq, with no values; (I15) its span
      // is marked.
      if (!decoded) pairs_.clear();
      Fold(static_cast<uint64_t>(s.Int(0)), s.Int(1), pairs_, !decoded);
    }
    if (s.failed()) return s.status();
  }
  // The ring cap (I6).
  if (options_.max_bytes > 0) {
    max_pages_ = options_.max_bytes / page_size_;
    auto pages = w_->QueryInt("PRAGMA page_count");
    if (!pages.ok()) return pages.status();
    if (*pages > max_pages_) {
      // The cap was lowered: trim to fit, then give the pages back to the file system.
      Deltas d;
      Status s = InWriteTxn([&]() -> Status {
        if (Status e = EnsureRoom(0, max_pages_ - std::max<int64_t>(8, max_pages_ / 20), d);
            !e.ok()) {
          return e;
        }
        if (Status e = WriteMeta("frames", frames_ - d.trimmed); !e.ok()) return e;
        return WriteMeta("rollup_rows", rollup_rows_ - d.rollup_trimmed);
      });
      if (!s.ok()) return s.Context("shrinking to max_bytes");
      frames_ -= d.trimmed;
      rollup_rows_ -= d.rollup_trimmed;
      if (Status e = GiveBackFreePages(); !e.ok()) return e.Context("shrinking to max_bytes");
      if (Status e = w_->Exec("PRAGMA wal_checkpoint(TRUNCATE)"); !e.ok()) return e;
      std::lock_guard lk(stats_mu_);
      counters_.trimmed_frames += static_cast<uint64_t>(d.trimmed);
      counters_.trimmed_rollup_rows += static_cast<uint64_t>(d.rollup_trimmed);
    }
    std::string cap = "PRAGMA max_page_count=" + std::to_string(max_pages_);
    auto got = w_->QueryInt(cap.c_str());
    if (!got.ok()) return got.status();
    if (*got > max_pages_) {
      return Status::Internal("the file holds " + std::to_string(*got) +
                              " pages and cannot shrink to max_bytes " +
                              std::to_string(options_.max_bytes));
    }
  }
  return Status::Ok();
}

Status RingStore::Impl::Close() {
  std::lock_guard close_lk(close_mu_);
  if (closed_) return close_status_;
  closed_ = true;
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lk(pool_mu_);
    readers_closed_ = true;
    idle_readers_.clear();
  }
  w_.reset();
  std::lock_guard lk(stats_mu_);
  counters_.state = WriterState::kStopped;
  if (damaged_) {
    close_status_ = Status::DataLoss("the store is damaged: " + counters_.damage);
  } else {
    close_status_ = counters_.last_error.empty() || !failing_
                        ? Status::Ok()
                        : Status::Internal(counters_.last_error);
  }
  return close_status_;
}

// ============================ Public wrapper ============================

namespace {

// No exception escapes the public API (std::bad_alloc, mostly).
template <typename F>
auto Guarded(const char* what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Status::Internal(std::string(what) + ": " + e.what());
  }
}

}  // namespace

RingStore::RingStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RingStore::~RingStore() {
  if (impl_) (void)impl_->Close();
}

Result<std::unique_ptr<RingStore>> RingStore::Open(const std::string& path,
                                                   RingStoreOptions options) {
  try {
    auto impl = std::make_unique<Impl>(path, options);
    if (Status s = impl->Init(); !s.ok()) {
      if (impl->damaged_opening().empty() || !options.recreate_bad) return s;
      // Damage quick_check did not see: moved aside like any bad file (I10).
      std::string why = impl->damaged_opening();
      impl.reset();  // closes the file first
      impl = std::make_unique<Impl>(path, std::move(options));
      impl->TreatAsBad(std::move(why));
      if (Status again = impl->Init(); !again.ok()) return again;
    }
    impl->Start();
    return std::unique_ptr<RingStore>(new RingStore(std::move(impl)));
  } catch (const std::exception& e) {
    return Status::Internal(path + ": " + e.what());
  }
}

Status RingStore::Close() {
  return Guarded("Close", [&] { return impl_->Close(); });
}
void RingStore::SetInventory(const Inventory& inventory) {
  try {
    impl_->SetInventory(inventory);
  } catch (const std::exception&) {  // out of memory: frames will lack the new channels
  }
}
uint64_t RingStore::Append(Frame frame) {
  try {
    return impl_->Append(std::make_shared<const Frame>(std::move(frame)));
  } catch (const std::exception&) {  // out of memory: the frame is lost
    return 0;
  }
}
uint64_t RingStore::Append(std::shared_ptr<const Frame> frame) {
  try {
    return impl_->Append(std::move(frame));
  } catch (const std::exception&) {  // out of memory: the frame is lost
    return 0;
  }
}
Status RingStore::Flush() {
  return Guarded("Flush", [&] { return impl_->Flush(); });
}
void RingStore::SetCommitInterval(int64_t ms) {
  impl_->SetCommitInterval(ms);
}
uint64_t RingStore::next_seq() const {
  return impl_->next_seq();
}
uint64_t RingStore::committed_next_seq() const {
  return impl_->committed_next_seq();
}
int64_t RingStore::committed_newest_ns() const {
  return impl_->committed_newest_ns();
}
Result<int64_t> RingStore::BeginWindow(const std::string& label, int64_t start_ns,
                                       std::optional<int64_t> lease_ns, const std::string& owner) {
  return Guarded("BeginWindow",
                 [&] { return impl_->BeginWindow(label, start_ns, lease_ns, owner); });
}
Status RingStore::EndWindow(int64_t id, int64_t end_ns, bool abandoned,
                            const WindowResult& result) {
  return Guarded("EndWindow", [&] { return impl_->EndWindow(id, end_ns, abandoned, result); });
}
Status RingStore::EndWindowFrom(int64_t id, int64_t start_ns, int64_t end_ns,
                                const WindowResult& result) {
  return Guarded("EndWindowFrom",
                 [&] { return impl_->EndWindowFrom(id, start_ns, end_ns, result); });
}
Result<int64_t> RingStore::AddWindow(const std::string& label, int64_t start_ns, int64_t end_ns) {
  return Guarded("AddWindow", [&] { return impl_->AddWindow(label, start_ns, end_ns); });
}
Result<std::optional<Window>> RingStore::GetWindow(int64_t id) {
  return Guarded("GetWindow", [&] { return impl_->GetWindow(id); });
}
Result<std::vector<Window>> RingStore::ListWindows(
    int64_t from_ns, int64_t to_ns, size_t limit,
    std::optional<std::pair<int64_t, int64_t>> after) {
  return Guarded("ListWindows", [&] { return impl_->ListWindows(from_ns, to_ns, limit, after); });
}
Result<std::vector<Window>> RingStore::OpenWindows() {
  return Guarded("OpenWindows", [&] { return impl_->OpenWindows(); });
}
Result<std::vector<Window>> RingStore::ClosedWindowsAfter(int64_t end_ns, int64_t id,
                                                          size_t limit) {
  return Guarded("ClosedWindowsAfter",
                 [&] { return impl_->ClosedWindowsAfter(end_ns, id, limit); });
}
Result<std::optional<PushCursor>> RingStore::GetPushCursor(const std::string& destination) {
  return Guarded("GetPushCursor", [&] { return impl_->GetPushCursor(destination); });
}
Status RingStore::SetPushCursor(const std::string& destination, const PushCursor& cursor) {
  return Guarded("SetPushCursor", [&] { return impl_->SetPushCursor(destination, cursor); });
}
void RingStore::AppendRailChunk(RailChunk chunk) {
  impl_->AppendRailChunk(std::move(chunk));
}
Result<RailSamples> RingStore::RailSamplesBetween(int64_t from_ns, int64_t to_ns, size_t limit) {
  return Guarded("RailSamplesBetween",
                 [&] { return impl_->RailSamplesBetween(from_ns, to_ns, limit); });
}
size_t RingStore::max_windows() const {
  return impl_->max_windows();
}
Result<std::vector<StoredChannel>> RingStore::Channels() {
  return Guarded("Channels", [&] { return impl_->Channels(); });
}
Result<FrameSet> RingStore::Latest(const std::vector<std::string>& keys) {
  return Guarded("Latest", [&] { return impl_->Latest(keys); });
}
Result<FrameSet> RingStore::Range(int64_t from_ns, int64_t to_ns,
                                  const std::vector<std::string>& keys, size_t limit) {
  return Guarded("Range", [&] { return impl_->Range(from_ns, to_ns, keys, limit); });
}
Result<FrameSet> RingStore::RangeWithQueued(int64_t from_ns, int64_t to_ns,
                                            const std::vector<std::string>& keys, size_t limit) {
  return Guarded("Range", [&] { return impl_->RangeWithQueued(from_ns, to_ns, keys, limit); });
}
Result<std::vector<int64_t>> RingStore::FrameTimes(int64_t from_ns, int64_t to_ns, size_t limit) {
  return Guarded("FrameTimes", [&] { return impl_->FrameTimes(from_ns, to_ns, limit); });
}
Result<std::vector<int64_t>> RingStore::FrameTimesWithQueued(int64_t from_ns, int64_t to_ns,
                                                             size_t limit) {
  return Guarded("FrameTimes", [&] { return impl_->FrameTimesWithQueued(from_ns, to_ns, limit); });
}
Result<FrameSet> RingStore::FramesAfter(uint64_t after_seq, size_t limit) {
  return Guarded("FramesAfter", [&] { return impl_->FramesAfter(after_seq, limit); });
}
Result<FrameSet> RingStore::FramesAfterWithQueued(uint64_t after_seq, size_t limit) {
  return Guarded("FramesAfter", [&] { return impl_->FramesAfterWithQueued(after_seq, limit); });
}
Result<std::vector<Bucket>> RingStore::DownsampleWithQueued(const std::string& key, int64_t from_ns,
                                                            int64_t to_ns, int64_t step_ns,
                                                            Tier tier, uint64_t* bad_frames) {
  return Guarded("Downsample", [&] {
    return impl_->DownsampleWithQueued(key, from_ns, to_ns, step_ns, tier, bad_frames);
  });
}
Result<std::vector<Bucket>> RingStore::Downsample(const std::string& key, int64_t from_ns,
                                                  int64_t to_ns, int64_t step_ns, Tier tier,
                                                  uint64_t* bad_frames) {
  return Guarded("Downsample",
                 [&] { return impl_->Downsample(key, from_ns, to_ns, step_ns, tier, bad_frames); });
}
Result<std::vector<std::vector<Bucket>>> RingStore::DownsampleEach(
    const std::vector<std::string>& keys, int64_t from_ns, int64_t to_ns, int64_t step_ns,
    Tier tier, uint64_t* bad_frames) {
  return Guarded("Downsample", [&] {
    return impl_->DownsampleEach(keys, from_ns, to_ns, step_ns, tier, bad_frames);
  });
}
Result<std::optional<double>> RingStore::CounterAt(const std::string& key, int64_t realtime_ns) {
  return Guarded("CounterAt", [&] { return impl_->CounterAt(key, realtime_ns); });
}
Result<std::optional<double>> RingStore::CounterAtWithQueued(const std::string& key,
                                                             int64_t realtime_ns) {
  return Guarded("CounterAt", [&] { return impl_->CounterAtWithQueued(key, realtime_ns); });
}
Result<std::vector<std::vector<Bucket>>> RingStore::DownsampleEachWithQueued(
    const std::vector<std::string>& keys, int64_t from_ns, int64_t to_ns, int64_t step_ns,
    Tier tier, uint64_t* bad_frames) {
  return Guarded("Downsample", [&] {
    return impl_->DownsampleEachWithQueued(keys, from_ns, to_ns, step_ns, tier, bad_frames);
  });
}
Result<std::optional<double>> RingStore::EnergyBetween(const std::string& key, int64_t t0_ns,
                                                       int64_t t1_ns) {
  return Guarded("EnergyBetween", [&] { return impl_->EnergyBetween(key, t0_ns, t1_ns); });
}
Result<std::map<std::string, int64_t>> RingStore::LastCounters() {
  return Guarded("LastCounters", [&] { return impl_->LastCounters(); });
}
Result<std::vector<ClockJump>> RingStore::ClockJumps(int64_t from_ns, int64_t to_ns) {
  return Guarded("ClockJumps", [&] { return impl_->ClockJumps(from_ns, to_ns); });
}

Result<std::vector<Span>> RingStore::Spans(int64_t from_ns, int64_t to_ns, int64_t max_step_ns) {
  return Guarded("Spans", [&] { return impl_->Spans(from_ns, to_ns, max_step_ns); });
}
Result<std::vector<std::optional<SpanTotal>>> RingStore::SpanTotals(
    const std::vector<std::string>& keys, const std::vector<Span>& spans) {
  return Guarded("SpanTotals", [&] { return impl_->SpanTotals(keys, spans); });
}
int64_t RingStore::rollup_period_ns() const {
  return impl_->rollup_period_ns();
}
Result<std::optional<int64_t>> RingStore::OldestNs() {
  return Guarded("OldestNs", [&] { return impl_->OldestNs(); });
}
uint64_t RingStore::rows_read() const {
  return impl_->rows_read();
}

Result<StoreStats> RingStore::Stats() {
  return Guarded("Stats", [&] { return impl_->Stats(); });
}
StoreStats RingStore::Counters() {
  try {
    return impl_->Counters();
  } catch (const std::exception&) {  // out of memory copying a string
    StoreStats st;
    st.damaged = impl_->damaged();
    return st;
  }
}
bool RingStore::damaged() const {
  return impl_->damaged();
}
std::string RingStore::damage() const {
  try {
    return impl_->damage();
  } catch (const std::exception&) {
    return "the store is damaged";
  }
}
Status RingStore::IntegrityCheck() {
  return Guarded("IntegrityCheck", [&] { return impl_->IntegrityCheck(); });
}
Status RingStore::SetMaxPageCountForTesting(int64_t pages) {
  return Guarded("SetMaxPageCountForTesting", [&] { return impl_->SetMaxPageCount(pages); });
}

}  // namespace edgemon::store
