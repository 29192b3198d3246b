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

bool FrameReader::Resolve(std::string_view& blob) {
  uint64_t head = 0, index = 0;
  if (!FrameBlockRef(blob, head, index)) {
    // Versions 1 and 2 stand alone; a malformed block header is bad.
    return blob.empty() || (blob[0] != static_cast<char>(kFrameFormatBlock) &&
                            blob[0] != static_cast<char>(kFrameFormatInBlock));
  }
  if (block_ != head) {
    block_.reset();
    bool decoded = false;
    if (index == 0) {
      decoded = DecodeFrameBlock(blob, block_raw_, block_frames_);
    } else {
      sql::Stmt s(c_, "SELECT data FROM frames WHERE seq = ?1");
      s.Bind(1, static_cast<int64_t>(std::min<uint64_t>(head, INT64_MAX)));
      uint64_t own = 0, at = 0;
      decoded = s.Step() && FrameBlockRef(s.Blob(0), own, at) && own == head && at == 0 &&
                DecodeFrameBlock(s.Blob(0), block_raw_, block_frames_);
    }
    if (!decoded) return false;
    block_ = head;
  }
  if (index >= block_frames_.size()) return false;
  blob = block_frames_[index];
  return true;
}

}  // namespace internal

Status RingStore::Impl::InsertFrames(Deltas& d) {
  // The base as committed; this transaction's new one goes to base_ only
  // once it commits (a rolled-back base row is gone).
  std::optional<FrameBase> base = base_;
  // Each frame's stored blob, then the frames in blocks (I18): a block ends
  // at kMaxBlockFrames frames or kBlockTargetBytes of their blobs, at a new
  // boot segment and with the batch.
  std::vector<std::string> blobs;
  blobs.reserve(batch_.size());
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
    blobs.push_back(delta ? stored_ : r.blob);
  }
  for (size_t first = 0; first < batch_.size();) {
    size_t end = first + 1;
    size_t bytes = blobs[first].size();
    while (end < batch_.size() && end - first < kMaxBlockFrames &&
           bytes + blobs[end].size() <= kBlockTargetBytes &&
           batch_[end].boottime_ns >= batch_[end - 1].boottime_ns) {
      bytes += blobs[end].size();
      ++end;
    }
    if (Status e = InsertBlock(first, end, blobs, d); !e.ok()) return e;
    first = end;
  }
  d.base = std::move(base);
  return Status::Ok();
}

// (I18) The frames batch_[first, end) with their stored blobs: as a block
// when that takes fewer bytes than the frames alone.
Status RingStore::Impl::InsertBlock(size_t first, size_t end, const std::vector<std::string>& blobs,
                                    Deltas& d) {
  const uint64_t head = batch_[first].seq;
  std::string block;
  std::vector<std::string> refs(end - first - 1);  // the later frames' references
  size_t alone = 0;
  for (size_t i = first; i < end; ++i) alone += blobs[i].size();
  if (end - first >= 2) {
    std::vector<std::string_view> frames(blobs.begin() + static_cast<ptrdiff_t>(first),
                                         blobs.begin() + static_cast<ptrdiff_t>(end));
    size_t refs_bytes = 0;
    for (size_t i = first + 1; i < end; ++i) {
      EncodeInBlock(head, i - first, refs[i - first - 1]);
      refs_bytes += refs[i - first - 1].size();
    }
    if (!EncodeFrameBlock(head, frames, block) || block.size() + refs_bytes >= alone) {
      block.clear();
    }
  }
  for (size_t i = first; i < end; ++i) {
    const auto& r = batch_[i];
    std::string_view blob = blobs[i];
    if (!block.empty()) blob = i == first ? std::string_view(block) : refs[i - first - 1];
    sql::Stmt s(*w_,
                "INSERT INTO frames(seq, boottime_ns, realtime_ns, data) VALUES(?1, ?2, ?3, ?4)");
    s.Bind(1, static_cast<int64_t>(r.seq)).Bind(2, r.boottime_ns).Bind(3, r.realtime_ns);
    s.BindBlob(4, blob);
    if (Status e = s.Run(); !e.ok()) return e;
    ++d.inserted;
    d.stored_bytes += static_cast<int64_t>(blob.size());
  }
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
    internal::FrameReader frames(*w_);
    uint64_t id = 0;
    while (!oldest && s.Step()) {
      // A block's frames are read through its head (I18).
      std::string_view blob = s.Blob(0);
      if (frames.Resolve(blob) && FrameBaseId(blob, id)) oldest = id;
    }
    if (s.failed()) return s.status();
  }
  if (!oldest) return Status::Ok();
  sql::Stmt s(*w_, "DELETE FROM frame_bases WHERE id < ?1");
  return s.Bind(1, static_cast<int64_t>(std::min<uint64_t>(*oldest, INT64_MAX))).Run();
}

}  // namespace edgemon::store
