// Frames against their bases (I17): the writer encodes each frame as the
// difference from a base, an earlier frame of the same ids kept in
// frame_bases (frame_codec.h, version 2); FrameReader decodes either
// version; bases go once no frame needs them.
#include "daemon/store/ring_store_impl.h"

namespace edgemon::store {
namespace {

// A new base after this many frames: it costs a version-1 frame once, and
// the values drift from it (a counter grows, a temperature wanders), so a
// difference takes more bytes the older the base.
constexpr uint64_t kFramesPerBase = 256;

bool SameIds(const FrameValues& a, const FrameValues& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const auto& x, const auto& y) { return x.first == y.first; });
}

}  // namespace

namespace internal {

bool FrameReader::BaseOf(std::string_view blob, const FrameValues*& base) {
  uint64_t id = 0;
  if (!FrameBaseId(blob, id)) return true;  // version 1 (or malformed: the decoder says)
  if (id_ != id) {
    id_.reset();
    values_.clear();
    sql::Stmt s(c_, "SELECT data FROM frame_bases WHERE id = ?1");
    s.Bind(1, static_cast<int64_t>(std::min<uint64_t>(id, INT64_MAX)));
    if (!s.Step()) return false;
    // A base is a version-1 frame.
    uint64_t nested = 0;
    if (FrameBaseId(s.Blob(0), nested)) return false;
    if (!ForEachValue(s.Blob(0), [this](uint32_t k, int64_t v) { values_.emplace_back(k, v); })) {
      values_.clear();
      return false;
    }
    id_ = id;
  }
  base = &values_;
  return true;
}

}  // namespace internal

Status RingStore::Impl::InsertFrames(Deltas& d) {
  // The base as committed; this transaction's new one goes to base_ only
  // once it commits (a rolled-back base row is gone).
  std::optional<FrameBase> base = base_;
  for (const auto& r : batch_) {
    pairs_.clear();
    stored_.clear();
    const bool decoded =
        ForEachValue(r.blob, [this](uint32_t id, int64_t v) { pairs_.emplace_back(id, v); });
    bool delta = false;
    if (decoded && !pairs_.empty()) {
      // A new base when there is none, when the frame's ids are not the
      // base's (a channel came or went), or when the base is old.
      const bool ids_differ = !base || !SameIds(pairs_, base->values);
      if (ids_differ || r.seq < base->first_seq || r.seq - base->first_seq >= kFramesPerBase) {
        sql::Stmt b(*w_, "INSERT INTO frame_bases(data) VALUES(?1)");
        if (Status e = b.BindBlob(1, r.blob).Run(); !e.ok()) return e;
        base = FrameBase{static_cast<uint64_t>(sqlite3_last_insert_rowid(w_->db())), r.seq, pairs_};
      }
      // Against the base unless that takes more than the frame's own
      // encoding (values that jumped since the base was made).
      delta = EncodeFrameDelta(pairs_, base->id, base->values, stored_) &&
              stored_.size() < r.blob.size();
    }
    const std::string& blob = delta ? stored_ : r.blob;
    sql::Stmt s(*w_,
                "INSERT INTO frames(seq, boottime_ns, realtime_ns, data) VALUES(?1, ?2, ?3, ?4)");
    s.Bind(1, static_cast<int64_t>(r.seq)).Bind(2, r.boottime_ns).Bind(3, r.realtime_ns);
    s.BindBlob(4, blob);
    if (Status e = s.Run(); !e.ok()) return e;
    ++d.inserted;
    d.stored_bytes += static_cast<int64_t>(blob.size());
  }
  d.base = std::move(base);
  return Status::Ok();
}

// Bases are made in seq order, so the first frame written against one (in
// seq order) names the oldest base any frame needs; version-1 frames need
// none. When none of the oldest frames is written against a base (a store
// written before bases, or values that do not repeat), none is dropped: a
// few hundred bytes a base until the frames reach one.
Status RingStore::Impl::DropUnusedBases() {
  std::optional<uint64_t> oldest;
  {
    sql::Stmt s(*w_, "SELECT data FROM frames ORDER BY seq LIMIT ?1");
    s.Bind(1, static_cast<int64_t>(2 * kFramesPerBase));
    uint64_t id = 0;
    while (!oldest && s.Step()) {
      if (FrameBaseId(s.Blob(0), id)) oldest = id;
    }
    if (s.failed()) return s.status();
  }
  if (!oldest) return Status::Ok();
  sql::Stmt s(*w_, "DELETE FROM frame_bases WHERE id < ?1");
  return s.Bind(1, static_cast<int64_t>(std::min<uint64_t>(*oldest, INT64_MAX))).Run();
}

}  // namespace edgemon::store
