// Rail samples (rail_samples.h): the chunk codec, the writer's inserts with
// their bounds, and reads by time range.
#include "daemon/store/rail_samples.h"

#include <algorithm>
#include <limits>

#include "daemon/store/frame_codec.h"
#include "daemon/store/ring_store_impl.h"

namespace edgemon::store {

using codec_internal::PutVarint;
using codec_internal::ReadVarint;
using codec_internal::UnZigZag;
using codec_internal::ZigZag;

namespace {

constexpr uint8_t kRailFormatV1 = 1;

void Put(uint64_t v, std::string& out) {
  char buf[10];
  out.append(buf, PutVarint(v, buf));
}

}  // namespace

std::string EncodeRailChunk(const RailChunk& chunk) {
  std::string out;
  if (!chunk.keys || chunk.keys->empty() || chunk.keys->size() > kMaxChunkChannels ||
      chunk.t_ns.empty() || chunk.values.size() != chunk.t_ns.size() * chunk.keys->size()) {
    return out;
  }
  const size_t width = chunk.keys->size();
  out.reserve(16 + chunk.t_ns.size() * (4 + 3 * width));
  out.push_back(static_cast<char>(kRailFormatV1));
  Put(width, out);
  for (const auto& k : *chunk.keys) {
    Put(k.size(), out);
    out += k;
  }
  Put(chunk.t_ns.size(), out);
  int64_t prev = chunk.t_ns.front();
  for (size_t i = 0; i < chunk.t_ns.size(); ++i) {
    // Times never go back within a chunk (the sampler's timeline).
    Put(static_cast<uint64_t>(std::max<int64_t>(0, chunk.t_ns[i] - prev)), out);
    prev = std::max(prev, chunk.t_ns[i]);
    for (size_t c = 0; c < width; ++c) {
      const Value& v = chunk.values[i * width + c];
      Put(v ? ZigZag(*v) + 1 : 0, out);
    }
  }
  return out;
}

bool DecodeRailChunk(std::string_view blob, int64_t t_ns, int64_t from_ns, int64_t to_ns,
                     size_t limit, RailSamples& out) {
  const auto* p = reinterpret_cast<const uint8_t*>(blob.data());
  const auto* end = p + blob.size();
  if (p == end || *p++ != kRailFormatV1) return false;
  uint64_t width = 0;
  if (!ReadVarint(p, end, width) || width == 0 || width > kMaxChunkChannels) return false;
  std::vector<std::string> keys;
  for (uint64_t c = 0; c < width; ++c) {
    uint64_t len = 0;
    if (!ReadVarint(p, end, len) || len > static_cast<uint64_t>(end - p)) return false;
    keys.emplace_back(reinterpret_cast<const char*>(p), len);
    p += len;
  }
  uint64_t n = 0;
  if (!ReadVarint(p, end, n) || n > kMaxChunkSamples) return false;
  // Decoded whole first: a blob that fails half-way adds nothing.
  std::vector<int64_t> times;
  std::vector<Value> values;
  int64_t t = t_ns;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t dt = 0;
    if (!ReadVarint(p, end, dt) || dt > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return false;
    t = AddSaturating(t, static_cast<int64_t>(dt));
    const bool keep = t >= from_ns && t < to_ns;
    if (keep) times.push_back(t);
    for (uint64_t c = 0; c < width; ++c) {
      uint64_t v = 0;
      if (!ReadVarint(p, end, v)) return false;
      if (keep) values.push_back(v == 0 ? Value() : Value(UnZigZag(v - 1)));
    }
  }
  if (p != end) return false;
  std::vector<size_t> column(width);
  for (size_t c = 0; c < width; ++c) {
    auto it = std::find(out.keys.begin(), out.keys.end(), keys[c]);
    column[c] = static_cast<size_t>(it - out.keys.begin());
    if (it == out.keys.end()) {
      out.keys.push_back(keys[c]);
      out.values.emplace_back(out.t_ns.size());
    }
  }
  for (size_t i = 0; i < times.size(); ++i) {
    if (out.t_ns.size() >= limit) {
      out.truncated = true;
      break;
    }
    out.t_ns.push_back(times[i]);
    for (auto& col : out.values) col.emplace_back();
    for (size_t c = 0; c < width; ++c) out.values[column[c]].back() = values[i * width + c];
  }
  return true;
}

// ---- Queue side ----

void RingStore::Impl::AppendRailChunk(RailChunk chunk) {
  if (chunk.t_ns.empty()) return;
  auto op = std::make_shared<SyncOp>();
  op->kind = SyncOp::Kind::kRailChunk;
  op->rail = std::make_shared<RailChunk>(std::move(chunk));
  {
    std::lock_guard lk(mu_);
    // Never blocks the sampler: a writer this far behind loses the chunk.
    if (stop_ || queued_rail_chunks_ >= kMaxQueuedRailChunks) {
      ++rail_chunks_dropped_;
      return;
    }
    ++queued_rail_chunks_;
    queue_.emplace_back(std::move(op));
    // Written with the frames' next batch (a read Flush()es first), unless
    // the chunks pile up: then the writer wakes for them.
    if (queued_rail_chunks_ < kMaxQueuedRailChunks / 4) return;
    sync_pending_ = true;
  }
  cv_.notify_one();
}

// ---- Writer thread ----

// kRailChunk: one row, then the bounds (rail_samples.h), in one transaction.
Status RingStore::Impl::WriteRailChunk(const SyncOp& op) {
  {
    std::lock_guard lk(mu_);
    if (queued_rail_chunks_ > 0) --queued_rail_chunks_;
  }
  if (!op.rail) return Status::Ok();
  const std::string blob = EncodeRailChunk(*op.rail);
  if (blob.empty()) return Status::InvalidArgument("rail chunk without samples or too wide");
  const int64_t from = op.rail->t_ns.front();
  const int64_t to = op.rail->t_ns.back();
  const int64_t cap = RailBytesCap(options_.max_bytes);
  return InWriteTxn([&]() -> Status {
    sql::Stmt ins(*w_, "INSERT INTO rail_chunks(t_ns, end_ns, count, data) VALUES(?1, ?2, ?3, ?4)");
    ins.Bind(1, from).Bind(2, to).Bind(3, static_cast<int64_t>(op.rail->t_ns.size()));
    if (Status e = ins.BindBlob(4, blob).Run(); !e.ok()) return e;
    // Goes with the frames of its time.
    sql::Stmt old(*w_,
                  "DELETE FROM rail_chunks WHERE end_ns < (SELECT realtime_ns FROM frames "
                  "ORDER BY seq LIMIT 1)");
    if (Status e = old.Run(); !e.ok()) return e;
    auto bytes = w_->QueryInt("SELECT coalesce(sum(length(data)), 0) FROM rail_chunks");
    if (!bytes.ok()) return bytes.status();
    if (*bytes > cap) {
      // Oldest first, down to the cap.
      sql::Stmt trim(*w_,
                     "DELETE FROM rail_chunks WHERE id IN (SELECT id FROM (SELECT id, sum(length("
                     "data)) OVER (ORDER BY id DESC) AS kept FROM rail_chunks) WHERE kept > ?1)");
      if (Status e = trim.Bind(1, cap).Run(); !e.ok()) return e;
    }
    return Status::Ok();
  });
}

// ---- Reads ----

Result<RailSamples> RingStore::Impl::RailSamplesBetween(int64_t from_ns, int64_t to_ns,
                                                        size_t limit) {
  RailSamples out;
  if (to_ns <= from_ns) return out;
  limit = limit == 0 ? kMaxRailSamplesPerRead : std::min(limit, kMaxRailSamplesPerRead);
  Lease l(*this);
  if (!l.ok()) return l.status();
  // A chunk spans at most a frame period or so; one that started up to an
  // hour before `from_ns` is found through the index.
  constexpr int64_t kLookBackNs = 3600 * int64_t{1'000'000'000};
  sql::Stmt s(l.conn(),
              "SELECT t_ns, data FROM rail_chunks WHERE t_ns >= ?1 AND t_ns < ?2 AND end_ns >= ?3 "
              "ORDER BY t_ns, id");
  s.Bind(1, SubSaturating(from_ns, kLookBackNs)).Bind(2, to_ns).Bind(3, from_ns);
  while (s.Step()) {
    // A damaged blob is skipped, never fails the read (as I14).
    (void)DecodeRailChunk(s.Blob(1), s.Int(0), from_ns, to_ns, limit, out);
    if (out.truncated) break;
  }
  if (s.failed()) return s.status();
  return out;
}

}  // namespace edgemon::store
