// RingStore implementation. Read ring_store.h's design note first: the
// numbered invariants are referred to below as (I1)..(I10).
#include "daemon/store/ring_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>
#include <variant>

#include "daemon/store/frame_codec.h"
#include "daemon/store/sql.h"
#include "edgemon/checked.h"

namespace edgemon::store {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int64_t kMinMaxBytes = 256 << 10;
constexpr auto kFailureReportInterval = std::chrono::seconds(60);
// Bytes a frame row costs beyond its blob: record header, seq, two
// timestamps, and its entry in frames_by_time.
constexpr int64_t kRowOverheadBytes = 40;
// A change of realtime - boottime beyond this between two frames of one boot
// is a wall-clock step (I11); NTP slews far less.
constexpr int64_t kClockJumpNs = 1'000'000'000;
constexpr int64_t kRollupRowBytes = 40;
// Closed rollup rows kept in memory while writes fail (disk full).
constexpr size_t kMaxPendingRollupRows = 1'000'000;

int64_t NowRealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::optional<int64_t> FileSize(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<int64_t>(st.st_size);
}

bool IsFull(int extended_code) {
  return (extended_code & 0xff) == SQLITE_FULL;
}
bool IsBadFileCode(int extended_code) {
  int c = extended_code & 0xff;
  return c == SQLITE_NOTADB || c == SQLITE_CORRUPT;
}
// A statement failed because the file is damaged (I13): its content is
// corrupt or no longer a database, or reading it fails (EIO, a file
// shortened under us). Disk full and write errors are not damage: they pass
// (kFailing).
bool IsDamageCode(int extended_code) {
  switch (extended_code) {
    case SQLITE_IOERR_READ:
    case SQLITE_IOERR_SHORT_READ:
    case SQLITE_IOERR_CORRUPTFS:
    case SQLITE_IOERR_DATA:
      return true;
    default:
      return IsBadFileCode(extended_code);
  }
}

// ---- Channel descriptions <-> columns ----

std::string TripsJson(const std::vector<TripPoint>& trips) {
  auto j = nlohmann::json::array();
  for (const auto& t : trips) j.push_back({t.type, t.temp_mc});
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string AttrsJson(const std::vector<std::pair<std::string, std::string>>& attrs) {
  auto j = nlohmann::json::array();
  for (const auto& [k, v] : attrs) j.push_back({k, v});
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<TripPoint> TripsFromJson(const std::string& text) {
  std::vector<TripPoint> out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_number_integer()) {
      out.push_back({e[0].get<std::string>(), e[1].get<int64_t>()});
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> AttrsFromJson(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      out.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
    }
  }
  return out;
}

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

StoredChannel ChannelFromRow(const sql::Stmt& s) {
  StoredChannel c;
  c.store_id = s.Int(0);
  c.key = s.Text(1);
  c.channel.kind = KindFromString(s.Text(2)).value_or(Kind::kBoard);
  c.channel.name = s.Text(3);
  c.channel.field = FieldFromString(s.Text(4)).value_or(Field::kLoad);
  c.channel.unit = UnitOf(c.channel.field);
  c.channel.device = s.Text(6);
  c.channel.parent = s.Text(7);
  c.channel.flags = static_cast<uint32_t>(s.Int(8));
  c.channel.min = s.OptInt(9);
  c.channel.max = s.OptInt(10);
  c.channel.crit = s.OptInt(11);
  c.channel.trips = TripsFromJson(s.Text(12));
  c.channel.attrs = AttrsFromJson(s.Text(13));
  c.first_seen_ns = s.Int(14);
  return c;
}

// ---- Schema (I10: application_id + user_version) ----

// Each migration takes the schema from version i to i + 1, inside one
// transaction together with the user_version bump.
const char* const kMigrations[] = {
    // 0 -> 1: the initial schema.
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE channels("
    "  id INTEGER PRIMARY KEY,"
    "  key TEXT NOT NULL UNIQUE,"
    "  kind TEXT NOT NULL, name TEXT NOT NULL, field TEXT NOT NULL, unit TEXT NOT NULL,"
    "  device TEXT NOT NULL, parent TEXT NOT NULL, flags INTEGER NOT NULL,"
    "  min INTEGER, max INTEGER, crit INTEGER,"
    "  trips TEXT NOT NULL, attrs TEXT NOT NULL,"
    "  first_seen_ns INTEGER NOT NULL);"
    "CREATE TABLE frames("
    "  seq INTEGER PRIMARY KEY,"
    "  boottime_ns INTEGER NOT NULL,"
    "  realtime_ns INTEGER NOT NULL,"
    "  data BLOB NOT NULL);"
    "CREATE INDEX frames_by_time ON frames(realtime_ns);"
    "CREATE TABLE rollup("
    "  channel INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    "  count INTEGER NOT NULL, min INTEGER NOT NULL, max INTEGER NOT NULL, sum INTEGER NOT NULL,"
    "  PRIMARY KEY(channel, t_ns)) WITHOUT ROWID;"
    "CREATE TABLE windows("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  label TEXT NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER);"
    "CREATE INDEX windows_by_start ON windows(start_ns);"
    "INSERT INTO meta(key, value) VALUES('frames', 0), ('rollup_rows', 0), ('rollup_seq', 0);",
    // 1 -> 2: wall-clock steps seen while writing (I11).
    "CREATE TABLE clock_jumps("
    "  boottime_ns INTEGER NOT NULL, realtime_ns INTEGER NOT NULL,"
    "  old_offset_ns INTEGER NOT NULL, new_offset_ns INTEGER NOT NULL);"
    // Boot segments of the frames held (I5): found once here, then kept by
    // the writer.
    "CREATE TABLE boots(first_seq INTEGER PRIMARY KEY);"
    "INSERT INTO boots(first_seq) SELECT seq FROM (SELECT seq, boottime_ns, "
    "  lag(boottime_ns) OVER (ORDER BY seq) AS prev FROM frames) "
    "  WHERE prev IS NULL OR boottime_ns < prev;",
    // 2 -> 3: window leases and abandoned windows (I12).
    ("ALTER TABLE windows ADD COLUMN abandoned INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE windows ADD COLUMN lease_ns INTEGER;"),
    // 3 -> 4: who opened each window (principal.h); '' for older rows.
    "ALTER TABLE windows ADD COLUMN owner TEXT NOT NULL DEFAULT '';",
};
static_assert(std::size(kMigrations) == kSchemaVersion);

// Running min/max/sum/count of one channel over one period.
struct Agg {
  int64_t count = 0;
  int64_t min = 0;
  int64_t max = 0;
  int64_t sum = 0;

  void Add(int64_t v) {
    if (count == 0) {
      min = max = v;
    } else {
      min = std::min(min, v);
      max = std::max(max, v);
    }
    sum = AddSaturating(sum, v);
    ++count;
  }
};

// Read-side accumulator (sums in double: averages only).
struct ReadAgg {
  int64_t count = 0;
  int64_t min = 0;
  int64_t max = 0;
  double sum = 0;

  void Merge(int64_t n, int64_t mn, int64_t mx, double s) {
    if (n <= 0) return;
    if (count == 0) {
      min = mn;
      max = mx;
    } else {
      min = std::min(min, mn);
      max = std::max(max, mx);
    }
    count += n;
    sum += s;
  }
};

struct Point {
  int64_t t;
  double v;
};

// The time of the oldest frame (where the raw tier starts); nullopt when there
// is no frame.
Result<std::optional<int64_t>> OldestFrameNs(sql::Conn& c) {
  sql::Stmt o(c, "SELECT min(realtime_ns) FROM frames");
  std::optional<int64_t> oldest;
  if (o.Step() && !o.IsNull(0)) oldest = o.Int(0);
  if (o.failed()) return o.status();
  return oldest;
}

// The nearest frame holding a value of `id` at or before t, or after t. A
// frame that does not decode is passed over (I14: interpolate across it).
enum class Side { kAtOrBefore, kAfter };
Result<std::optional<Point>> RawNeighbour(sql::Conn& c, uint32_t id, int64_t t, Side side) {
  sql::Stmt s(c, side == Side::kAfter
                     ? "SELECT realtime_ns, data FROM frames WHERE realtime_ns > ?1 "
                       "ORDER BY realtime_ns, seq"
                     : "SELECT realtime_ns, data FROM frames WHERE realtime_ns <= ?1 "
                       "ORDER BY realtime_ns DESC, seq DESC");
  s.Bind(1, t);
  std::optional<int64_t> v;
  while (s.Step()) {
    if (!FindValue(s.Blob(1), id, v)) continue;
    if (v) return std::optional<Point>(Point{s.Int(0), static_cast<double>(*v)});
  }
  if (s.failed()) return s.status();
  return std::optional<Point>();
}

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

class RingStore::Impl {
 public:
  Impl(std::string path, RingStoreOptions options)
      : path_(std::move(path)), options_(std::move(options)) {}
  ~Impl() { (void)Close(); }

  Status Init();
  // Init() failed on damage found after the file passed validation (I10):
  // a second Impl given the reason treats the file as bad (recreate_bad).
  const std::string& damaged_opening() const { return damaged_opening_; }
  void TreatAsBad(std::string why) { treat_as_bad_ = std::move(why); }
  void Start() {
    started_ = true;
    thread_ = std::thread([this] { Run(); });
  }
  Status Close();

  void SetInventory(const Inventory& inventory);
  uint64_t Append(Frame frame);
  Status Flush();
  uint64_t next_seq() const {
    std::lock_guard lk(mu_);
    return next_seq_;
  }

  Result<int64_t> BeginWindow(const std::string& label, int64_t start_ns,
                              std::optional<int64_t> lease_ns, const std::string& owner);
  Status EndWindow(int64_t id, int64_t end_ns, bool abandoned);
  Result<int64_t> AddWindow(const std::string& label, int64_t start_ns, int64_t end_ns);
  Result<std::optional<Window>> GetWindow(int64_t id);
  Result<std::vector<Window>> ListWindows(int64_t from_ns, int64_t to_ns, size_t limit,
                                          std::optional<std::pair<int64_t, int64_t>> after);
  Result<std::vector<Window>> OpenWindows();
  size_t max_windows() const {
    if (options_.max_bytes <= 0) return 65536;
    return static_cast<size_t>(std::clamp<int64_t>(options_.max_bytes / 8192, 64, 65536));
  }
  Status CapWindows();
  Status TrimWindowsToData();

  Result<std::vector<StoredChannel>> Channels();
  Result<FrameSet> Latest(const std::vector<std::string>& keys);
  Result<FrameSet> Range(int64_t from_ns, int64_t to_ns, const std::vector<std::string>& keys,
                         size_t limit);
  Result<std::vector<Bucket>> Downsample(const std::string& key, int64_t from_ns, int64_t to_ns,
                                         int64_t step_ns, Tier tier, uint64_t* bad_frames);
  Result<std::optional<double>> CounterAt(const std::string& key, int64_t t_ns);
  Result<std::optional<double>> EnergyBetween(const std::string& key, int64_t t0, int64_t t1);
  Result<std::map<std::string, int64_t>> LastCounters();
  Result<StoreStats> Stats();
  StoreStats Counters();
  bool damaged() const { return damaged_.load(std::memory_order_acquire); }
  std::string damage() {
    std::lock_guard lk(stats_mu_);
    return counters_.damage;
  }
  // (I13) Marks the store damaged once: `code` is the extended result code
  // of the failed statement, `doing` what was being done, `error` its message.
  void NoteDamage(int code, std::string_view doing, const std::string& error);
  Result<std::optional<int64_t>> OldestNs();
  Result<std::vector<ClockJump>> ClockJumps(int64_t from_ns, int64_t to_ns);
  Status IntegrityCheck();
  Status SetMaxPageCount(int64_t pages);

 private:
  // ---- Queue items ----
  struct SyncOp {
    enum class Kind { kFlush, kBeginWindow, kEndWindow, kAddWindow, kSetMaxPages } kind;
    std::string label;
    int64_t a = 0;
    int64_t b = 0;
    std::optional<int64_t> c;  // BeginWindow: lease; EndWindow: abandoned if set
    std::string owner;         // BeginWindow
    std::promise<Result<int64_t>> done;
  };
  using InventoryPtr = std::shared_ptr<const std::vector<Channel>>;
  using Item = std::variant<Frame, InventoryPtr, std::shared_ptr<SyncOp>>;

  Result<int64_t> Submit(SyncOp::Kind kind, std::string label, int64_t a, int64_t b,
                         std::optional<int64_t> c = std::nullopt, std::string owner = {});

  // ---- Opening ----
  struct Verdict {
    Status status;    // error that is not about the file's content
    std::string bad;  // non-empty: the file is not a usable store, and why
  };
  Verdict Validate();
  Status MoveAside(std::string& moved_to);
  Status Setup();
  Status LoadState();

  // ---- Writer thread ----
  void Run();
  void Process(std::deque<Item>& items);
  Status HandleSyncOp(SyncOp& op, Result<int64_t>& result);
  void ApplyInventory(const std::vector<Channel>& channels);
  void Ingest(Frame& frame);
  void StampWallTime(Frame& frame);
  void Fold(uint64_t seq, int64_t realtime_ns,
            const std::vector<std::pair<uint32_t, int64_t>>& values);
  void CloseBucket();
  Status Commit();
  struct Deltas {
    int64_t inserted = 0;
    int64_t expired = 0;
    int64_t trimmed = 0;
    int64_t rollup_inserted = 0;
    int64_t rollup_deleted = 0;
    int64_t rollup_trimmed = 0;
    std::optional<int64_t> channels_version;
    size_t boots_emptied = 0;  // oldest boot segments fully expired (I5)
  };
  Status TryCommit(Deltas& d);
  Status EnsureRoom(int64_t need_pages, int64_t target_pages, Deltas& d);
  Result<bool> TrimOnce(int64_t excess_pages, Deltas& d);
  Status WriteMeta(const char* key, int64_t value);
  Status InWriteTxn(const std::function<Status()>& body);
  int64_t EstimatePages() const;
  void Report(StoreEvent::Kind kind, const std::string& message);
  void SetState(WriterState s) {
    std::lock_guard lk(stats_mu_);
    counters_.state = s;
  }

  // ---- Readers ----
  class Lease;
  Result<std::unique_ptr<sql::Conn>> AcquireReader();
  void ReleaseReader(std::unique_ptr<sql::Conn> conn);
  Result<std::vector<StoredChannel>> LoadChannels(sql::Conn& c);
  struct ChannelRef {
    int64_t id = 0;
    uint32_t flags = 0;
  };
  Result<ChannelRef> FindChannel(sql::Conn& c, const std::string& key);
  // The id of a counter channel; InvalidArgument when the channel is no counter.
  Result<uint32_t> FindCounter(sql::Conn& c, const std::string& key);
  Result<FrameSet> ReadFrames(bool latest, int64_t from_ns, int64_t to_ns,
                              const std::vector<std::string>& keys, size_t limit);
  Status FoldRaw(sql::Conn& c, uint32_t id, int64_t from_ns, int64_t to_ns, int64_t step_ns,
                 std::optional<uint64_t> after_seq, std::vector<ReadAgg>& acc,
                 uint64_t& bad_frames);
  Result<std::optional<double>> CounterAtIn(sql::Conn& c, uint32_t id, int64_t t);

  const std::string path_;
  const RingStoreOptions options_;

  // ---- Queue: guarded by mu_ ----
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  size_t queued_frames_ = 0;
  bool sync_pending_ = false;
  bool stop_ = false;
  uint64_t next_seq_ = 1;
  SteadyClock::time_point first_queued_;
  std::thread thread_;

  // ---- Close: guarded by close_mu_ ----
  std::mutex close_mu_;
  bool closed_ = false;
  Status close_status_;

  // ---- Damage (I13): set once, never cleared ----
  std::atomic<bool> damaged_{false};
  std::atomic<bool> started_{false};  // Open() succeeded: damage is reported, not returned
  std::string damaged_opening_;       // Init only: why, when Setup/LoadState met damage
  std::string treat_as_bad_;          // Init only

  // ---- Counters for Stats(): guarded by stats_mu_ ----
  std::mutex stats_mu_;
  StoreStats counters_;
  uint64_t queue_dropped_ = 0;  // guarded by mu_

  // ---- Read connections: guarded by pool_mu_ ----
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<sql::Conn>> idle_readers_;
  std::atomic<bool> readers_closed_{false};
  // Channel rows as last read, by meta.channels_version: guarded by pool_mu_.
  std::optional<int64_t> cached_channels_version_;
  std::shared_ptr<const std::vector<StoredChannel>> cached_channels_;

  // ---- Writer thread only (and Init, before the thread starts) ----
  std::unique_ptr<sql::Conn> w_;
  int64_t page_size_ = 4096;
  int64_t max_pages_ = 0;  // ring cap (I6); 0 = none
  struct ChanState {
    std::string key;
    Channel desc;
    int64_t first_seen_ns = 0;
    bool dirty = false;
    std::optional<int64_t> last_counter;  // (I8)
    int64_t counter_offset = 0;
  };
  std::vector<ChanState> chans_{1};  // index = store id; 0 unused
  std::unordered_map<std::string, uint32_t> id_by_key_;
  std::vector<uint32_t> inv_map_;                    // inventory ChannelId -> store id (0 = none)
  std::vector<std::pair<uint32_t, int64_t>> pairs_;  // scratch
  struct Row {
    uint64_t seq;
    int64_t boottime_ns;
    int64_t realtime_ns;
    std::string blob;
  };
  std::vector<Row> batch_;
  int64_t batch_bytes_ = 0;
  // Rollup (I7).
  std::optional<int64_t> bucket_;  // start of the open period
  std::vector<Agg> agg_;           // by store id
  std::vector<uint32_t> touched_;  // ids with agg_[id].count > 0
  uint64_t folded_seq_ = 0;        // last seq folded into the open period
  struct RollupRow {
    uint32_t channel;
    int64_t t_ns;
    Agg agg;
  };
  std::vector<RollupRow> pending_rollup_;
  uint64_t pending_rollup_seq_ = 0;  // rollup_seq once pending_rollup_ is written
  bool rollup_dirty_ = false;
  uint64_t rollup_seq_ = 0;       // as stored
  int64_t frames_ = 0;            // as stored (meta.frames)
  int64_t rollup_rows_ = 0;       // as stored (meta.rollup_rows)
  int64_t channels_version_ = 0;  // as stored (meta.channels_version)
  std::optional<int64_t> newest_rt_;
  // Clock policy (I5, I11): the last frame ingested, as stored and as
  // carried, and the boot segments of the frames held, oldest first (a
  // segment starts where boottime_ns goes down in seq order).
  std::optional<int64_t> last_rt_, last_bt_, last_offset_;
  struct BootSeg {
    uint64_t first_seq;
    int64_t last_bt;
  };
  std::vector<BootSeg> boots_;
  std::vector<uint64_t> pending_boots_;  // segments started since the last commit
  struct Jump {
    int64_t boottime_ns, realtime_ns, old_offset_ns, new_offset_ns;
  };
  std::vector<Jump> pending_jumps_;
  double avg_row_bytes_ = 600;
  std::optional<SteadyClock::time_point> last_failure_report_;
  uint64_t unreported_failures_ = 0;
  bool failing_ = false;
  int last_errcode_ = SQLITE_OK;             // of the last failed InWriteTxn
  std::optional<Status> error_since_flush_;  // first dropped batch since the last Flush
};

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
  time_t now = time(nullptr);
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
  return Status::Ok();
}

Status RingStore::Impl::Setup() {
  auto version = w_->QueryInt("PRAGMA user_version");
  if (!version.ok()) return version.status();
  if (*version == 0) {
    // Must precede the first table (I6: the file can shrink when the cap is lowered).
    if (Status s = w_->Exec("PRAGMA auto_vacuum=INCREMENTAL; PRAGMA page_size=4096"); !s.ok()) {
      return s;
    }
  }
  auto mode = w_->QueryText("PRAGMA journal_mode=WAL");
  if (!mode.ok()) return mode.status();
  if (*mode != "wal") return Status::Internal("cannot enable WAL (journal_mode is " + *mode + ")");
  const std::string setup =
      "PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY; PRAGMA secure_delete=FAST; "
      "PRAGMA cache_size=-" +
      std::to_string(std::max<int64_t>(64, options_.cache_kib));
  if (Status s = w_->Exec(setup.c_str()); !s.ok()) return s;
  auto ps = w_->QueryInt("PRAGMA page_size");
  if (!ps.ok()) return ps.status();
  page_size_ = *ps;
  // WAL bound (I6): checkpoint at min(1000, cap / 16) pages and truncate the
  // WAL back to that size afterwards.
  int64_t wal_pages = 1000;
  if (options_.max_bytes > 0) {
    wal_pages = std::clamp<int64_t>(options_.max_bytes / page_size_ / 16, 16, 1000);
  }
  std::string pragmas = "PRAGMA wal_autocheckpoint=" + std::to_string(wal_pages) +
                        "; PRAGMA journal_size_limit=" + std::to_string(wal_pages * page_size_);
  if (Status s = w_->Exec(pragmas.c_str()); !s.ok()) return s;

  // Migrations, each with its user_version bump in one transaction.
  for (;;) {
    auto v = w_->QueryInt("PRAGMA user_version");
    if (!v.ok()) return v.status();
    if (*v >= kSchemaVersion) break;
    Status s = InWriteTxn([&]() -> Status {
      auto again = w_->QueryInt("PRAGMA user_version");  // another process may have migrated
      if (!again.ok()) return again.status();
      if (*again != *v) return Status::Ok();
      if (Status e = w_->Exec(kMigrations[*v]); !e.ok()) return e;
      std::string bump = "PRAGMA application_id=" + std::to_string(kApplicationId) +
                         "; PRAGMA user_version=" + std::to_string(*v + 1);
      return w_->Exec(bump.c_str());
    });
    if (!s.ok()) return s.Context("migrating schema " + std::to_string(*v));
  }
  return Status::Ok();
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
  }
  // Last stored counter values (I8): newest frames first.
  {
    size_t missing = 0;
    for (size_t id = 1; id < chans_.size(); ++id) {
      if (chans_[id].desc.Has(kFlagCounter)) ++missing;
    }
    sql::Stmt s(*w_, "SELECT data FROM frames ORDER BY seq DESC LIMIT 100000");
    while (missing > 0 && s.Step()) {
      pairs_.clear();
      // (I14) a blob that does not decode gives nothing
      if (!ForEachValue(s.Blob(0), [&](uint32_t id, int64_t v) { pairs_.emplace_back(id, v); })) {
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
      sql::Stmt r(*w_, "SELECT max FROM rollup WHERE channel = ?1 ORDER BY t_ns DESC LIMIT 1");
      r.Bind(1, static_cast<int64_t>(id));
      if (r.Step()) c.last_counter = r.Int(0);
      if (r.failed()) return r.status();
    }
  }
  // Rebuild the open rollup period from the frames it lacks (I7).
  {
    sql::Stmt s(*w_, "SELECT seq, realtime_ns, data FROM frames WHERE seq > ?1 ORDER BY seq");
    s.Bind(1, static_cast<int64_t>(rollup_seq_));
    while (s.Step()) {
      pairs_.clear();
      if (!ForEachValue(s.Blob(2), [&](uint32_t id, int64_t v) { pairs_.emplace_back(id, v); })) {
        pairs_.clear();  // (I14) the frame counts for its seq, with no values
      }
      Fold(static_cast<uint64_t>(s.Int(0)), s.Int(1), pairs_);
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
      if (Status e = w_->Exec("PRAGMA incremental_vacuum"); !e.ok()) return e;
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

// ============================ Queue side ============================

void RingStore::Impl::SetInventory(const Inventory& inventory) {
  auto copy = std::make_shared<const std::vector<Channel>>(inventory.channels);
  std::lock_guard lk(mu_);
  if (stop_) return;
  queue_.emplace_back(std::move(copy));
}

uint64_t RingStore::Impl::Append(Frame frame) {
  bool wake = false;
  uint64_t seq = 0;
  {
    std::lock_guard lk(mu_);
    if (stop_ || queued_frames_ >= options_.max_queued_frames) {
      ++queue_dropped_;
      return 0;
    }
    seq = std::max(frame.seq, next_seq_);  // (I2)
    frame.seq = seq;
    next_seq_ = seq + 1;
    if (queued_frames_ == 0) first_queued_ = SteadyClock::now();
    queue_.emplace_back(std::move(frame));
    ++queued_frames_;
    wake = queued_frames_ == 1 || queued_frames_ == options_.batch_frames;
  }
  if (wake) cv_.notify_one();
  return seq;
}

Result<int64_t> RingStore::Impl::Submit(SyncOp::Kind kind, std::string label, int64_t a, int64_t b,
                                        std::optional<int64_t> c, std::string owner) {
  auto op = std::make_shared<SyncOp>();
  op->kind = kind;
  op->label = std::move(label);
  op->owner = std::move(owner);
  op->a = a;
  op->b = b;
  op->c = c;
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

Result<int64_t> RingStore::Impl::BeginWindow(const std::string& label, int64_t start_ns,
                                             std::optional<int64_t> lease_ns,
                                             const std::string& owner) {
  return Submit(SyncOp::Kind::kBeginWindow, label, start_ns, 0, lease_ns, owner);
}

Status RingStore::Impl::EndWindow(int64_t id, int64_t end_ns, bool abandoned) {
  auto r = Submit(SyncOp::Kind::kEndWindow, {}, id, end_ns,
                  abandoned ? std::optional<int64_t>(1) : std::nullopt);
  return r.ok() ? Status::Ok() : r.status();
}

Result<int64_t> RingStore::Impl::AddWindow(const std::string& label, int64_t start_ns,
                                           int64_t end_ns) {
  if (end_ns < start_ns) return Status::InvalidArgument("window end is before its start");
  return Submit(SyncOp::Kind::kAddWindow, label, start_ns, end_ns);
}

Status RingStore::Impl::SetMaxPageCount(int64_t pages) {
  auto r = Submit(SyncOp::Kind::kSetMaxPages, {}, pages, 0);
  return r.ok() ? Status::Ok() : r.status();
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

// ============================ Writer thread ============================

void RingStore::Impl::Run() {
  const auto interval = std::chrono::milliseconds(options_.commit_interval_ms);
  for (;;) {
    std::deque<Item> items;
    bool stopping = false;
    {
      std::unique_lock lk(mu_);
      while (!stop_ && !sync_pending_ && queued_frames_ < options_.batch_frames) {
        if (queue_.empty()) {
          cv_.wait(lk);
        } else if (SteadyClock::now() >= first_queued_ + interval) {
          break;
        } else {
          cv_.wait_until(lk, first_queued_ + interval);
        }
      }
      items.swap(queue_);
      queued_frames_ = 0;
      sync_pending_ = false;
      stopping = stop_;
    }
    Process(items);
    if (stopping) break;  // Append refuses once stop_ is set: the queue is empty
  }
  // Close (I7): write the open period so a restart needs no replay.
  CloseBucket();
  (void)Commit();
  if (!damaged()) (void)w_->Exec("PRAGMA wal_checkpoint(TRUNCATE)");
}

void RingStore::Impl::Process(std::deque<Item>& items) {
  for (auto& item : items) {
    bool answered = false;
    try {
      if (auto* f = std::get_if<Frame>(&item)) {
        Ingest(*f);
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
  // Rollup rows alone are not retried right after a failed commit.
  if (!batch_.empty() || (!failing_ && (!pending_rollup_.empty() || rollup_dirty_))) {
    try {
      (void)Commit();
    } catch (const std::exception& e) {
      batch_.clear();
      batch_bytes_ = 0;
      std::lock_guard lk(stats_mu_);
      counters_.last_error = std::string("writer: ") + e.what();
    }
  }
  // Channels declared without frames are written with the next batch.
}

Status RingStore::Impl::HandleSyncOp(SyncOp& op, Result<int64_t>& result) {
  using K = SyncOp::Kind;
  Status committed = Commit();  // everything queued before the op
  if (op.kind != K::kFlush && damaged()) {
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
      int64_t id = 0;
      Status s = InWriteTxn([&]() -> Status {
        if (Status e = CapWindows(); !e.ok()) return e;
        sql::Stmt ins(*w_,
                      "INSERT INTO windows(label, start_ns, end_ns, lease_ns, owner) "
                      "VALUES(?1, ?2, ?3, ?4, ?5)");
        ins.Bind(1, std::string_view(op.label)).Bind(2, op.a).Bind(5, std::string_view(op.owner));
        if (op.kind == K::kAddWindow) {
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
      result = id;
      return Status::Ok();
    }
    case K::kEndWindow: {
      Status s = InWriteTxn([&]() -> Status {
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
        sql::Stmt u(*w_, "UPDATE windows SET end_ns = ?2, abandoned = ?3 WHERE id = ?1");
        return u.Bind(1, op.a).Bind(2, op.b).Bind(3, int64_t{op.c ? 1 : 0}).Run();
      });
      if (!s.ok()) return s;
      result = op.a;
      return Status::Ok();
    }
  }
  return Status::Internal("unknown operation");
}

void RingStore::Impl::ApplyInventory(const std::vector<Channel>& channels) {
  ChannelId max_id = 0;
  for (const auto& ch : channels) max_id = std::max(max_id, ch.id);
  inv_map_.assign(channels.empty() ? 0 : size_t{max_id} + 1, 0);
  const int64_t now = NowRealtimeNs();
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

void RingStore::Impl::Ingest(Frame& frame) {
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
  StampWallTime(frame);
  Row row{frame.seq, frame.boottime_ns, frame.realtime_ns, {}};
  EncodeFrame(pairs_, row.blob);
  Fold(frame.seq, frame.realtime_ns, pairs_);
  batch_bytes_ += static_cast<int64_t>(row.blob.size()) + kRowOverheadBytes;
  batch_.push_back(std::move(row));
}

// (I11) Wall-clock steps: detected, recorded, and never let stored time go back.
void RingStore::Impl::StampWallTime(Frame& frame) {
  const int64_t bt = frame.boottime_ns;
  const int64_t offset = SubSaturating(frame.realtime_ns, bt);
  const bool same_boot = last_bt_ && bt >= *last_bt_;
  const bool jumped =
      same_boot && last_offset_ &&
      std::max(SpanNs(offset, *last_offset_), SpanNs(*last_offset_, offset)) > kClockJumpNs;
  const int64_t old_offset = last_offset_.value_or(offset);
  last_offset_ = offset;
  if (last_rt_ && frame.realtime_ns < *last_rt_) {
    // Behind the newest stored frame: continue from it at boottime's pace.
    frame.realtime_ns = AddSaturating(*last_rt_, same_boot ? SubSaturating(bt, *last_bt_) : 0);
  }
  if (jumped) {
    pending_jumps_.push_back(Jump{bt, frame.realtime_ns, old_offset, offset});
    Report(StoreEvent::Kind::kClockJump,
           "recorded a wall-clock step of " +
               std::to_string(SubSaturating(offset, old_offset) / 1'000'000) + " ms at boottime " +
               std::to_string(bt) + " ns");
  }
  if (!same_boot || boots_.empty()) {
    boots_.push_back(BootSeg{frame.seq, bt});
    pending_boots_.push_back(frame.seq);
  }
  boots_.back().last_bt = bt;
  last_rt_ = frame.realtime_ns;
  last_bt_ = bt;
}

void RingStore::Impl::Fold(uint64_t seq, int64_t realtime_ns,
                           const std::vector<std::pair<uint32_t, int64_t>>& values) {
  const int64_t period = options_.rollup_period_ns;
  const int64_t start = FloorToMultiple(realtime_ns, period);
  if (bucket_ && *bucket_ != start) CloseBucket();
  bucket_ = start;
  for (const auto& [id, v] : values) {
    if (agg_.size() <= id) agg_.resize(size_t{id} + 1);
    if (agg_[id].count == 0) touched_.push_back(id);
    agg_[id].Add(v);
  }
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
  bucket_.reset();
  pending_rollup_seq_ = folded_seq_;
  rollup_dirty_ = true;
  if (pending_rollup_.size() > kMaxPendingRollupRows) {  // writes keep failing: forget the oldest
    pending_rollup_.erase(pending_rollup_.begin(),
                          pending_rollup_.begin() + static_cast<ptrdiff_t>(pending_rollup_.size() -
                                                                           kMaxPendingRollupRows));
  }
}

int64_t RingStore::Impl::EstimatePages() const {
  int64_t bytes = 0;
  for (const auto& r : batch_) bytes += static_cast<int64_t>(r.blob.size()) + kRowOverheadBytes;
  bytes += static_cast<int64_t>(pending_rollup_.size()) * kRollupRowBytes;
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

Status RingStore::Impl::Commit() {
  bool dirty_channels = false;
  for (size_t id = 1; id < chans_.size() && !dirty_channels; ++id)
    dirty_channels = chans_[id].dirty;
  if (batch_.empty() && pending_rollup_.empty() && !rollup_dirty_ && !dirty_channels) {
    return Status::Ok();
  }
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
    batch_.clear();  // dropped; rollup rows and channel rows stay pending
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
  if (!batch_.empty()) {
    int64_t bytes = 0;
    for (const auto& r : batch_) bytes += static_cast<int64_t>(r.blob.size());
    double avg =
        static_cast<double>(bytes) / static_cast<double>(batch_.size()) + kRowOverheadBytes;
    avg_row_bytes_ = 0.7 * avg_row_bytes_ + 0.3 * avg;
    newest_rt_ = batch_.back().realtime_ns;
  }
  boots_.erase(boots_.begin(), boots_.begin() + static_cast<std::ptrdiff_t>(d.boots_emptied));
  pending_jumps_.clear();
  pending_boots_.clear();
  batch_.clear();
  batch_bytes_ = 0;
  pending_rollup_.clear();
  rollup_dirty_ = false;
  rollup_seq_ = pending_rollup_seq_;
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
    last_failure_report_.reset();
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
    // Frames (I2: in seq order, as carried).
    for (const auto& r : batch_) {
      sql::Stmt s(*w_,
                  "INSERT INTO frames(seq, boottime_ns, realtime_ns, data) VALUES(?1, ?2, ?3, ?4)");
      s.Bind(1, static_cast<int64_t>(r.seq)).Bind(2, r.boottime_ns).Bind(3, r.realtime_ns);
      s.BindBlob(4, r.blob);
      if (Status e = s.Run(); !e.ok()) return e;
      ++d.inserted;
    }
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
    // (I5) raw retention by elapsed boottime. A frame's age is known within
    // its boot; a frame of an earlier boot is at least as old as the boottime
    // elapsed since that boot's last frame plus every later boot's last
    // boottime. Within a segment boottime grows with seq.
    if (newest && !batch_.empty()) {
      int64_t later = 0;  // boottime known to have elapsed after this segment
      for (size_t k = boots_.size(); k-- > 0;) {
        const auto& b = boots_[k];
        const uint64_t end = k + 1 < boots_.size() ? boots_[k + 1].first_seq : UINT64_MAX;
        const int64_t cutoff =
            SubSaturating(AddSaturating(b.last_bt, later), options_.raw_retention_ns);
        later = AddSaturating(later, b.last_bt);
        sql::Stmt s(*w_,
                    "DELETE FROM frames WHERE seq >= ?1 AND seq < coalesce((SELECT seq FROM "
                    "frames WHERE seq >= ?1 AND seq < ?2 AND boottime_ns >= ?3 ORDER BY seq "
                    "LIMIT 1), ?2)");
        s.Bind(1, static_cast<int64_t>(b.first_seq))
            .Bind(2, static_cast<int64_t>(std::min<uint64_t>(end, INT64_MAX)))
            .Bind(3, cutoff);
        if (Status e = s.Run(); !e.ok()) return e;
        d.expired += sqlite3_changes(w_->db());
        if (k + 1 < boots_.size() && cutoff > b.last_bt) ++d.boots_emptied;
      }
      if (d.boots_emptied > 0) {
        sql::Stmt s(*w_, "DELETE FROM boots WHERE first_seq < ?1");
        s.Bind(1, static_cast<int64_t>(boots_[d.boots_emptied].first_seq));
        if (Status e = s.Run(); !e.ok()) return e;
      }
    }
    // (I7) closed rollup periods, merged into rows a clock step may have revisited.
    for (const auto& r : pending_rollup_) {
      // Both statements take the period's key and aggregate as ?1..?6.
      auto run = [&r](sql::Stmt& s) {
        s.Bind(1, int64_t{r.channel}).Bind(2, r.t_ns).Bind(3, r.agg.count);
        s.Bind(4, r.agg.min).Bind(5, r.agg.max).Bind(6, r.agg.sum);
        return s.Run();
      };
      sql::Stmt u(*w_,
                  "UPDATE rollup SET count = count + ?3, min = min(min, ?4), max = max(max, ?5), "
                  "sum = sum + ?6 WHERE channel = ?1 AND t_ns = ?2");
      if (Status e = run(u); !e.ok()) return e;
      if (sqlite3_changes(w_->db()) > 0) continue;
      sql::Stmt i(*w_,
                  "INSERT INTO rollup(channel, t_ns, count, min, max, sum) "
                  "VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
      if (Status e = run(i); !e.ok()) return e;
      ++d.rollup_inserted;
    }
    if (rollup_dirty_) {
      if (Status e = WriteMeta("rollup_seq", static_cast<int64_t>(pending_rollup_seq_)); !e.ok()) {
        return e;
      }
    }
    // (I5) rollup and window retention, with every batch of frames.
    if (!batch_.empty() || rollup_dirty_) {
      if (newest) {
        int64_t cutoff = SubSaturating(*newest, options_.rollup_retention_ns);
        for (size_t id = 1; id < chans_.size(); ++id) {
          sql::Stmt s(*w_, "DELETE FROM rollup WHERE channel = ?1 AND t_ns < ?2");
          if (Status e = s.Bind(1, static_cast<int64_t>(id)).Bind(2, cutoff).Run(); !e.ok()) {
            return e;
          }
          d.rollup_deleted += sqlite3_changes(w_->db());
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
    if (Status e = WriteMeta("frames", frames_ + d.inserted - d.expired - d.trimmed); !e.ok()) {
      return e;
    }
    return WriteMeta("rollup_rows",
                     rollup_rows_ + d.rollup_inserted - d.rollup_deleted - d.rollup_trimmed);
  });
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
    for (size_t id = 1; id < chans_.size(); ++id) {
      sql::Stmt s(*w_, "SELECT t_ns FROM rollup WHERE channel = ?1 ORDER BY t_ns LIMIT 1");
      s.Bind(1, static_cast<int64_t>(id));
      if (s.Step()) oldest_rollup = std::min(oldest_rollup.value_or(INT64_MAX), s.Int(0));
      if (s.failed()) return s.status();
    }
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
    sql::Stmt s(*w_,
                "DELETE FROM frames WHERE seq <= "
                "(SELECT seq FROM frames ORDER BY seq LIMIT 1 OFFSET ?1)");
    if (Status e = s.Bind(1, n - 1).Run(); !e.ok()) return e;
    int64_t deleted = sqlite3_changes(w_->db());
    d.trimmed += deleted;
    return deleted > 0;
  }
  // Rollup: drop the oldest 1/16 of its span, at least one period.
  const uint64_t span = SpanNs(*oldest_rollup, newest);
  const int64_t cutoff = AddSaturating(
      *oldest_rollup, std::max(options_.rollup_period_ns, static_cast<int64_t>(span / 16)));
  int64_t deleted = 0;
  for (size_t id = 1; id < chans_.size(); ++id) {
    sql::Stmt s(*w_, "DELETE FROM rollup WHERE channel = ?1 AND t_ns < ?2");
    if (Status e = s.Bind(1, static_cast<int64_t>(id)).Bind(2, cutoff).Run(); !e.ok()) return e;
    deleted += sqlite3_changes(w_->db());
  }
  d.rollup_trimmed += deleted;
  return deleted > 0;
}

void RingStore::Impl::Report(StoreEvent::Kind kind, const std::string& message) {
  if (!options_.on_event) return;
  StoreEvent ev{kind, message, 0};
  if (kind == StoreEvent::Kind::kWriteFailed) {
    auto now = SteadyClock::now();
    if (last_failure_report_ && now - *last_failure_report_ < kFailureReportInterval) {
      ++unreported_failures_;
      return;
    }
    if (unreported_failures_ > 0) {
      ev.message +=
          " (and " + std::to_string(unreported_failures_) + " more since the last report)";
    }
    unreported_failures_ = 0;
    last_failure_report_ = now;
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

// ============================ Readers ============================

Result<std::unique_ptr<sql::Conn>> RingStore::Impl::AcquireReader() {
  {
    std::lock_guard lk(pool_mu_);
    if (readers_closed_) return Status::Unavailable("store is closed");
    if (!idle_readers_.empty()) {
      auto c = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return c;
    }
  }
  auto c = sql::Conn::Open(path_, SQLITE_OPEN_READWRITE);
  if (!c.ok()) return c.status();
  sqlite3_busy_timeout((*c)->db(), 5000);
  std::string pragmas = "PRAGMA query_only=1; PRAGMA mmap_size=" +
                        std::to_string(std::max<int64_t>(0, options_.reader_mmap_bytes)) +
                        "; PRAGMA cache_size=-" +
                        std::to_string(std::max<int64_t>(64, options_.cache_kib));
  if (Status s = (*c)->Exec(pragmas.c_str()); !s.ok()) {
    // The first statement of a new connection reads the schema (I13).
    if (int code = (*c)->failure_code(); IsDamageCode(code)) {
      NoteDamage(code, "opening a reader", (*c)->failure_message());
    }
    return s;
  }
  return std::move(c.value());
}

void RingStore::Impl::ReleaseReader(std::unique_ptr<sql::Conn> conn) {
  if (conn->InTransaction()) (void)conn->Exec("ROLLBACK");
  // An idle reader keeps no page cache (the file's pages stay in the OS page
  // cache): a burst of large reads leaves no memory behind in the pool.
  sqlite3_db_release_memory(conn->db());
  std::lock_guard lk(pool_mu_);
  if (!readers_closed_ && idle_readers_.size() < options_.max_idle_readers) {
    idle_readers_.push_back(std::move(conn));
  }
}

// A read connection inside one short read transaction (I9).
class RingStore::Impl::Lease {
 public:
  explicit Lease(Impl& impl) : impl_(impl) {
    auto c = impl.AcquireReader();
    if (!c.ok()) {
      status_ = c.status();
      return;
    }
    conn_ = std::move(c.value());
    conn_->set_failure_code(SQLITE_OK);
    status_ = conn_->Exec("BEGIN");
  }
  ~Lease() {
    if (!conn_) return;
    // (I13) Any statement of this read that found the file damaged.
    if (int code = conn_->failure_code(); IsDamageCode(code)) {
      impl_.NoteDamage(code, "reading", conn_->failure_message());
    }
    if (conn_->InTransaction()) (void)conn_->Exec("COMMIT");
    impl_.ReleaseReader(std::move(conn_));
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  sql::Conn& conn() { return *conn_; }

 private:
  Impl& impl_;
  std::unique_ptr<sql::Conn> conn_;
  Status status_;
};

Result<std::vector<StoredChannel>> RingStore::Impl::LoadChannels(sql::Conn& c) {
  // Decoding every description (JSON trips and attrs) per read is the larger
  // part of a small read: reuse them while channels_version is unchanged.
  int64_t version = 0;
  {
    sql::Stmt v(c, "SELECT value FROM meta WHERE key = 'channels_version'");
    if (v.Step()) version = v.Int(0);
    if (v.failed()) return v.status();
  }
  {
    std::lock_guard lk(pool_mu_);
    if (cached_channels_ && cached_channels_version_ == version) return *cached_channels_;
  }
  std::vector<StoredChannel> out;
  sql::Stmt s(c,
              "SELECT id, key, kind, name, field, unit, device, parent, flags, min, max, crit, "
              "trips, attrs, first_seen_ns FROM channels ORDER BY id");
  while (s.Step()) out.push_back(ChannelFromRow(s));
  if (s.failed()) return s.status();
  for (size_t i = 0; i < out.size(); ++i) out[i].channel.id = static_cast<ChannelId>(i);
  std::lock_guard lk(pool_mu_);
  cached_channels_version_ = version;
  cached_channels_ = std::make_shared<const std::vector<StoredChannel>>(out);
  return out;
}

Result<RingStore::Impl::ChannelRef> RingStore::Impl::FindChannel(sql::Conn& c,
                                                                 const std::string& key) {
  sql::Stmt s(c, "SELECT id, flags FROM channels WHERE key = ?1");
  s.Bind(1, std::string_view(key));
  if (!s.Step()) {
    if (s.failed()) return s.status();
    return Status::NotFound("unknown channel \"" + key + "\"");
  }
  return ChannelRef{s.Int(0), static_cast<uint32_t>(s.Int(1))};
}

Result<uint32_t> RingStore::Impl::FindCounter(sql::Conn& c, const std::string& key) {
  auto ch = FindChannel(c, key);
  if (!ch.ok()) return ch.status();
  if ((ch->flags & kFlagCounter) == 0)
    return Status::InvalidArgument("\"" + key + "\" is not a counter");
  return static_cast<uint32_t>(ch->id);
}

Result<std::vector<StoredChannel>> RingStore::Impl::Channels() {
  Lease l(*this);
  if (!l.ok()) return l.status();
  return LoadChannels(l.conn());
}

Result<FrameSet> RingStore::Impl::ReadFrames(bool latest, int64_t from_ns, int64_t to_ns,
                                             const std::vector<std::string>& keys, size_t limit) {
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto all = LoadChannels(l.conn());
  if (!all.ok()) return all.status();
  FrameSet out;
  if (keys.empty()) {
    out.channels = std::move(all.value());
  } else {
    std::unordered_map<std::string_view, size_t> by_key;
    for (size_t i = 0; i < all->size(); ++i) by_key.emplace((*all)[i].key, i);
    for (const auto& k : keys) {
      auto it = by_key.find(k);
      if (it == by_key.end()) return Status::NotFound("unknown channel \"" + k + "\"");
      for (const auto& have : out.channels) {
        if (have.key == k) return Status::InvalidArgument("channel \"" + k + "\" requested twice");
      }
      out.channels.push_back((*all)[it->second]);
      out.channels.back().channel.id = static_cast<ChannelId>(out.channels.size() - 1);
    }
  }
  std::vector<int32_t> column;
  for (size_t i = 0; i < out.channels.size(); ++i) {
    auto id = static_cast<size_t>(out.channels[i].store_id);
    if (column.size() <= id) column.resize(id + 1, -1);
    column[id] = static_cast<int32_t>(i);
  }
  auto read_row = [&](sql::Stmt& s) -> Status {
    Frame f;
    f.seq = static_cast<uint64_t>(s.Int(0));
    f.boottime_ns = s.Int(1);
    f.realtime_ns = s.Int(2);
    f.values.resize(out.channels.size());
    bool ok = ForEachValue(s.Blob(3), [&](uint32_t id, int64_t v) {
      if (id < column.size() && column[id] >= 0) f.values[static_cast<size_t>(column[id])] = v;
    });
    if (ok) {
      out.frames.push_back(std::move(f));
    } else {
      ++out.bad_frames;  // (I14) skipped, not the whole range
    }
    return Status::Ok();
  };
  if (latest) {
    sql::Stmt s(l.conn(),
                "SELECT seq, boottime_ns, realtime_ns, data FROM frames ORDER BY seq DESC LIMIT 1");
    if (s.Step()) {
      if (Status e = read_row(s); !e.ok()) return e;
    }
    if (s.failed()) return s.status();
    return out;
  }
  if (to_ns <= from_ns) return out;
  sql::Stmt s(l.conn(),
              "SELECT seq, boottime_ns, realtime_ns, data FROM frames "
              "WHERE realtime_ns >= ?1 AND realtime_ns < ?2 ORDER BY realtime_ns, seq LIMIT ?3");
  s.Bind(1, from_ns).Bind(2, to_ns);
  // No SQL limit: skipped bad frames (I14) must not end a page early; the
  // index scan stops when the loop does.
  s.Bind(3, int64_t{-1});
  while (s.Step()) {
    if (limit != 0 && out.frames.size() == limit) {
      out.truncated = true;
      break;
    }
    if (Status e = read_row(s); !e.ok()) return e;
  }
  if (s.failed()) return s.status();
  return out;
}

Result<FrameSet> RingStore::Impl::Latest(const std::vector<std::string>& keys) {
  return ReadFrames(true, 0, 0, keys, 1);
}

Result<FrameSet> RingStore::Impl::Range(int64_t from_ns, int64_t to_ns,
                                        const std::vector<std::string>& keys, size_t limit) {
  return ReadFrames(false, from_ns, to_ns, keys, limit);
}

// Folds raw frames' values of channel `id` into per-step accumulators. With
// `after_seq`, only frames with a larger seq (the rollup tier's tail).
Status RingStore::Impl::FoldRaw(sql::Conn& c, uint32_t id, int64_t from_ns, int64_t to_ns,
                                int64_t step_ns, std::optional<uint64_t> after_seq,
                                std::vector<ReadAgg>& acc, uint64_t& bad_frames) {
  int64_t lo, hi;
  if (after_seq) {
    lo = static_cast<int64_t>(*after_seq) + 1;
    hi = INT64_MAX;
  } else {
    // The seq span of the time range (an index-only scan), then one pass over
    // the table in rowid order: cheaper than a rowid lookup per index entry.
    sql::Stmt b(
        c, "SELECT min(seq), max(seq) FROM frames WHERE realtime_ns >= ?1 AND realtime_ns < ?2");
    b.Bind(1, from_ns).Bind(2, to_ns);
    if (!b.Step()) return b.failed() ? b.status() : Status::Ok();
    if (b.IsNull(0)) return Status::Ok();
    lo = b.Int(0);
    hi = b.Int(1);
  }
  sql::Stmt s(c, "SELECT realtime_ns, data FROM frames WHERE seq BETWEEN ?1 AND ?2");
  s.Bind(1, lo).Bind(2, hi);
  std::optional<int64_t> v;
  while (s.Step()) {
    int64_t t = s.Int(0);
    if (t < from_ns || t >= to_ns) continue;
    if (!FindValue(s.Blob(1), id, v)) {
      ++bad_frames;  // (I14)
      continue;
    }
    if (!v) continue;
    auto& a = acc[static_cast<size_t>(BucketIndex(t, from_ns, step_ns))];
    a.Merge(1, *v, *v, static_cast<double>(*v));
  }
  return s.failed() ? s.status() : Status::Ok();
}

Result<std::vector<Bucket>> RingStore::Impl::Downsample(const std::string& key, int64_t from_ns,
                                                        int64_t to_ns, int64_t step_ns, Tier tier,
                                                        uint64_t* bad_frames) {
  uint64_t bad = 0;
  if (step_ns <= 0) return Status::InvalidArgument("step must be positive");
  if (to_ns <= from_ns) return std::vector<Bucket>{};
  // Exact for any int64 bounds: the width of the range may exceed int64.
  const uint64_t steps = BucketCount(from_ns, to_ns, step_ns);
  if (steps > kMaxDownsampleSteps) {
    return Status::InvalidArgument("too many steps (" + std::to_string(steps) + " > " +
                                   std::to_string(kMaxDownsampleSteps) + ")");
  }
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto ch = FindChannel(l.conn(), key);
  if (!ch.ok()) return ch.status();
  const auto id = static_cast<uint32_t>(ch->id);
  std::vector<ReadAgg> acc(static_cast<size_t>(steps));

  if (tier == Tier::kAuto) {
    tier = Tier::kRollup;
    if (step_ns < options_.rollup_period_ns) {
      auto oldest = OldestFrameNs(l.conn());
      if (!oldest.ok()) return oldest.status();
      if (*oldest && from_ns >= **oldest) tier = Tier::kRaw;
    }
  }
  if (tier == Tier::kRaw) {
    if (Status s = FoldRaw(l.conn(), id, from_ns, to_ns, step_ns, std::nullopt, acc, bad);
        !s.ok()) {
      return s;
    }
  } else {
    uint64_t rollup_seq = 0;
    {
      sql::Stmt m(l.conn(), "SELECT value FROM meta WHERE key = 'rollup_seq'");
      if (m.Step()) rollup_seq = static_cast<uint64_t>(m.Int(0));
      if (m.failed()) return m.status();
    }
    sql::Stmt s(l.conn(),
                "SELECT t_ns, count, min, max, sum FROM rollup "
                "WHERE channel = ?1 AND t_ns >= ?2 AND t_ns < ?3");
    s.Bind(1, int64_t{id}).Bind(2, from_ns).Bind(3, to_ns);
    while (s.Step()) {
      const int64_t t = s.Int(0);
      if (t < from_ns || t >= to_ns) continue;  // what SQL selected, checked before indexing
      auto& a = acc[static_cast<size_t>(BucketIndex(t, from_ns, step_ns))];
      a.Merge(s.Int(1), s.Int(2), s.Int(3), static_cast<double>(s.Int(4)));
    }
    if (s.failed()) return s.status();
    // Frames not yet in the rollup tier (the open period).
    if (Status e = FoldRaw(l.conn(), id, from_ns, to_ns, step_ns, rollup_seq, acc, bad); !e.ok()) {
      return e;
    }
  }
  std::vector<Bucket> out;
  for (size_t k = 0; k < acc.size(); ++k) {
    const auto& a = acc[k];
    if (a.count == 0) continue;
    // Below BucketCount: a start inside [from_ns, to_ns).
    const int64_t t = BucketStart(from_ns, k, step_ns).value_or(to_ns);
    out.push_back({t, a.min, a.sum / static_cast<double>(a.count), a.max, a.count});
  }
  if (bad_frames) *bad_frames += bad;
  return out;
}

Result<std::optional<double>> RingStore::Impl::CounterAtIn(sql::Conn& c, uint32_t id, int64_t t) {
  auto oldest = OldestFrameNs(c);
  if (!oldest.ok()) return oldest.status();
  const std::optional<int64_t> oldest_raw = *oldest;
  std::optional<Point> prev, next;
  if (oldest_raw && t >= *oldest_raw) {
    auto p = RawNeighbour(c, id, t, Side::kAtOrBefore);
    if (!p.ok()) return p.status();
    prev = *p;
    if (prev && prev->t == t) return std::optional<double>(prev->v);
    auto n = RawNeighbour(c, id, t, Side::kAfter);
    if (!n.ok()) return n.status();
    next = *n;
  }
  if (!prev) {
    // Older than the raw tier: the rollup tier, where a period's row is the
    // counter going from `min` at its start to `max` at its end.
    const int64_t period = options_.rollup_period_ns;
    sql::Stmt p(c,
                "SELECT t_ns, min, max FROM rollup WHERE channel = ?1 AND t_ns <= ?2 "
                "ORDER BY t_ns DESC LIMIT 1");
    p.Bind(1, int64_t{id}).Bind(2, t);
    if (p.Step()) {
      const int64_t tb = p.Int(0);
      const int64_t te = AddSaturating(tb, period);  // the period's end
      if (t < te) {
        prev = Point{tb, static_cast<double>(p.Int(1))};
        if (!next || next->t > te) next = Point{te, static_cast<double>(p.Int(2))};
      } else {
        prev = Point{te, static_cast<double>(p.Int(2))};
      }
    }
    if (p.failed()) return p.status();
    if (prev && !next) {
      sql::Stmt n(c,
                  "SELECT t_ns, min FROM rollup WHERE channel = ?1 AND t_ns > ?2 "
                  "ORDER BY t_ns LIMIT 1");
      n.Bind(1, int64_t{id}).Bind(2, t);
      if (n.Step()) next = Point{n.Int(0), static_cast<double>(n.Int(1))};
      if (n.failed()) return n.status();
      if (!next) {
        auto r = RawNeighbour(c, id, t, Side::kAfter);
        if (!r.ok()) return r.status();
        next = *r;
      }
    }
  }
  if (!prev || !next) return std::optional<double>();
  if (prev->t == t) return std::optional<double>(prev->v);
  if (next->t <= prev->t) return std::optional<double>(next->v);
  // Spans in uint64: the points may be further apart than int64 reaches.
  double f =
      static_cast<double>(SpanNs(prev->t, t)) / static_cast<double>(SpanNs(prev->t, next->t));
  return std::optional<double>(prev->v + (next->v - prev->v) * f);
}

Result<std::optional<double>> RingStore::Impl::CounterAt(const std::string& key, int64_t t_ns) {
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto id = FindCounter(l.conn(), key);
  if (!id.ok()) return id.status();
  return CounterAtIn(l.conn(), *id, t_ns);
}

Result<std::optional<double>> RingStore::Impl::EnergyBetween(const std::string& key, int64_t t0,
                                                             int64_t t1) {
  if (t1 < t0) return Status::InvalidArgument("window ends before it starts");
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto id = FindCounter(l.conn(), key);
  if (!id.ok()) return id.status();
  auto a = CounterAtIn(l.conn(), *id, t0);
  if (!a.ok()) return a.status();
  auto b = CounterAtIn(l.conn(), *id, t1);
  if (!b.ok()) return b.status();
  if (!*a || !*b) return std::optional<double>();
  return std::optional<double>(**b - **a);
}

Result<std::map<std::string, int64_t>> RingStore::Impl::LastCounters() {
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto all = LoadChannels(l.conn());
  if (!all.ok()) return all.status();
  std::unordered_map<int64_t, const StoredChannel*> wanted;
  for (const auto& c : *all) {
    if (c.channel.Has(kFlagCounter)) wanted.emplace(c.store_id, &c);
  }
  std::map<std::string, int64_t> out;
  sql::Stmt s(l.conn(), "SELECT data FROM frames ORDER BY seq DESC LIMIT 100000");
  std::vector<std::pair<uint32_t, int64_t>> values;
  while (!wanted.empty() && s.Step()) {
    values.clear();
    // (I14) a blob that does not decode gives nothing, not its first values
    if (!ForEachValue(s.Blob(0), [&](uint32_t id, int64_t v) { values.emplace_back(id, v); })) {
      continue;
    }
    for (const auto& [id, v] : values) {
      auto it = wanted.find(id);
      if (it == wanted.end()) continue;
      out.emplace(it->second->key, v);
      wanted.erase(it);
    }
  }
  if (s.failed()) return s.status();
  for (const auto& [id, c] : wanted) {
    sql::Stmt r(l.conn(), "SELECT max FROM rollup WHERE channel = ?1 ORDER BY t_ns DESC LIMIT 1");
    r.Bind(1, id);
    if (r.Step()) out.emplace(c->key, r.Int(0));
    if (r.failed()) return r.status();
  }
  return out;
}

namespace {
// The statements are cached by address: each is one literal.
#define EDGEMON_WINDOW_COLUMNS "SELECT id, label, start_ns, end_ns, abandoned, lease_ns, owner "
Window WindowRow(sql::Stmt& s) {
  return Window{s.Int(0), s.Text(1), s.Int(2), s.OptInt(3), s.Int(4) != 0, s.OptInt(5), s.Text(6)};
}
}  // namespace

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

Result<std::vector<ClockJump>> RingStore::Impl::ClockJumps(int64_t from_ns, int64_t to_ns) {
  Lease l(*this);
  if (!l.ok()) return l.status();
  std::vector<ClockJump> out;
  sql::Stmt s(l.conn(),
              "SELECT boottime_ns, realtime_ns, old_offset_ns, new_offset_ns FROM clock_jumps "
              "WHERE realtime_ns >= ?1 AND realtime_ns < ?2 ORDER BY rowid");
  s.Bind(1, from_ns).Bind(2, to_ns);
  while (s.Step()) out.push_back(ClockJump{s.Int(0), s.Int(1), s.Int(2), s.Int(3)});
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
#undef EDGEMON_WINDOW_COLUMNS

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
  for (size_t id = 1; id < chans_.size(); ++id) {
    sql::Stmt r(*w_, "SELECT min(t_ns) FROM rollup WHERE channel = ?1");
    r.Bind(1, static_cast<int64_t>(id));
    if (r.Step() && !r.IsNull(0)) oldest = std::min(oldest.value_or(r.Int(0)), r.Int(0));
    if (r.failed()) return r.status();
  }
  if (!oldest) return Status::Ok();
  sql::Stmt w(*w_, "DELETE FROM windows WHERE end_ns IS NOT NULL AND end_ns < ?1");
  return w.Bind(1, *oldest).Run();
}

Result<std::optional<int64_t>> RingStore::Impl::OldestNs() {
  Lease l(*this);
  if (!l.ok()) return l.status();
  // One primary-key probe per channel for the rollup tier (no t_ns index).
  sql::Stmt s(l.conn(),
              "SELECT (SELECT min(realtime_ns) FROM frames), "
              "(SELECT min((SELECT min(t_ns) FROM rollup WHERE channel = c.id)) FROM channels c)");
  std::optional<int64_t> raw, rollup;
  if (s.Step()) {
    raw = s.OptInt(0);
    rollup = s.OptInt(1);
  }
  if (s.failed()) return s.status();
  // A rollup row is stamped with its period's start, before the first frame
  // folded into it: it only reaches further back than the raw tier when it
  // is from an earlier period.
  const int64_t period = options_.rollup_period_ns;
  if (raw && (!rollup || *rollup >= FloorToMultiple(*raw, period))) return raw;
  return rollup;
}

StoreStats RingStore::Impl::Counters() {
  StoreStats st;
  {
    std::lock_guard lk(stats_mu_);
    st = counters_;
  }
  {
    std::lock_guard lk(mu_);
    st.queued_frames = queued_frames_;
    st.dropped_frames += queue_dropped_;
  }
  st.max_bytes = options_.max_bytes;
  st.db_bytes = FileSize(path_).value_or(0);
  st.wal_bytes = FileSize(path_ + "-wal").value_or(0);
  return st;
}

// One scalar subquery per bound: SQLite answers a lone min() or max() from
// the end of an index, but several aggregates in one SELECT scan the whole
// table (a week of 1 Hz frames: over 100 ms on the service's read worker,
// which every Summarize began with).
const char* const RingStore::kFrameBoundsSql =
    "SELECT (SELECT min(realtime_ns) FROM frames), (SELECT max(realtime_ns) FROM frames), "
    "(SELECT min(seq) FROM frames), (SELECT max(seq) FROM frames)";

Result<StoreStats> RingStore::Impl::Stats() {
  StoreStats st = Counters();
  Lease l(*this);
  if (!l.ok()) return l.status();
  auto& c = l.conn();
  for (auto [sql, field] : {std::pair{"PRAGMA page_size", &st.page_size},
                            std::pair{"PRAGMA page_count", &st.page_count},
                            std::pair{"PRAGMA freelist_count", &st.freelist_pages},
                            std::pair{"SELECT count(*) FROM channels", &st.channels},
                            std::pair{"SELECT count(*) FROM windows", &st.windows}}) {
    auto r = c.QueryInt(sql);
    if (!r.ok()) return r.status();
    *field = *r;
  }
  {
    sql::Stmt s(c, "SELECT key, value FROM meta WHERE key IN ('frames', 'rollup_rows')");
    while (s.Step()) (s.Text(0) == "frames" ? st.frames : st.rollup_rows) = s.Int(1);
    if (s.failed()) return s.status();
  }
  {
    sql::Stmt s(c, RingStore::kFrameBoundsSql);
    if (s.Step() && !s.IsNull(0)) {
      st.oldest_ns = s.Int(0);
      st.newest_ns = s.Int(1);
      st.first_seq = static_cast<uint64_t>(s.Int(2));
      st.last_seq = static_cast<uint64_t>(s.Int(3));
    }
    if (s.failed()) return s.status();
  }
  return st;
}

Status RingStore::Impl::IntegrityCheck() {
  Lease l(*this);
  if (!l.ok()) return l.status();
  sql::Stmt s(l.conn(), "PRAGMA integrity_check");
  std::string problems;
  while (s.Step()) {
    std::string line = s.Text(0);
    if (line == "ok") continue;
    if (!problems.empty()) problems += "; ";
    problems += line;
  }
  if (s.failed()) return s.status();
  if (!problems.empty()) return Status::Internal("integrity_check: " + problems);
  return Status::Ok();
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
    return impl_->Append(std::move(frame));
  } catch (const std::exception&) {  // out of memory: the frame is lost
    return 0;
  }
}
Status RingStore::Flush() {
  return Guarded("Flush", [&] { return impl_->Flush(); });
}
uint64_t RingStore::next_seq() const {
  return impl_->next_seq();
}
Result<int64_t> RingStore::BeginWindow(const std::string& label, int64_t start_ns,
                                       std::optional<int64_t> lease_ns, const std::string& owner) {
  return Guarded("BeginWindow",
                 [&] { return impl_->BeginWindow(label, start_ns, lease_ns, owner); });
}
Status RingStore::EndWindow(int64_t id, int64_t end_ns, bool abandoned) {
  return Guarded("EndWindow", [&] { return impl_->EndWindow(id, end_ns, abandoned); });
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
Result<std::vector<Bucket>> RingStore::Downsample(const std::string& key, int64_t from_ns,
                                                  int64_t to_ns, int64_t step_ns, Tier tier,
                                                  uint64_t* bad_frames) {
  return Guarded("Downsample",
                 [&] { return impl_->Downsample(key, from_ns, to_ns, step_ns, tier, bad_frames); });
}
Result<std::optional<double>> RingStore::CounterAt(const std::string& key, int64_t realtime_ns) {
  return Guarded("CounterAt", [&] { return impl_->CounterAt(key, realtime_ns); });
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

Result<std::optional<int64_t>> RingStore::OldestNs() {
  return Guarded("OldestNs", [&] { return impl_->OldestNs(); });
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
