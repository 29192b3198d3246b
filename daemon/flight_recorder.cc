#include "daemon/flight_recorder.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include "daemon/store/frame_codec.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#elif defined(__aarch64__)
#include <arm_acle.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace edgemon {
namespace {

// Records written now carry a crc32c (Castagnoli): one instruction per 8
// bytes where the CPU has it (SSE4.2, ARMv8 CRC), no table to bring into the
// cache on every frame. Records of the first format (zlib's crc32) are still
// read back, so frames left by an older daemon are replayed after an upgrade.
constexpr uint32_t kMagicZlibCrc = 0x52464d45;  // "EMFR": crc32 (zlib)
constexpr uint32_t kMagic = 0x32464d45;         // "EMF2": crc32c
// magic, length, inventory hash, seq, boottime, realtime
constexpr size_t kHeader = 4 + 4 + 8 + 8 + 8 + 8;
constexpr size_t kTrailer = 4;  // crc of everything after the magic
constexpr size_t kAlign = 8;
constexpr size_t kMaxPayload = 1 << 20;

size_t Aligned(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

template <typename T>
void PutAt(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

template <typename T>
T Get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint32_t ZlibCrc(const uint8_t* p, size_t n) {
  return static_cast<uint32_t>(::crc32(0L, p, static_cast<uInt>(n)));
}

// crc32c one byte at a time (reflected polynomial 0x82f63b78): for CPUs
// without the instruction.
uint32_t Crc32cPortable(uint32_t crc, const uint8_t* p, size_t n) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  while (n-- > 0) crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Crc32cInstruction(uint32_t crc, const uint8_t* p,
                                                             size_t n) {
  uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) c = _mm_crc32_u64(c, Get<uint64_t>(p));
  crc = static_cast<uint32_t>(c);
  for (; n > 0; --n) crc = _mm_crc32_u8(crc, *p++);
  return crc;
}
bool HaveCrc32cInstruction() {
  return __builtin_cpu_supports("sse4.2");
}
#elif defined(__aarch64__)
__attribute__((target("+crc"))) uint32_t Crc32cInstruction(uint32_t crc, const uint8_t* p,
                                                           size_t n) {
  for (; n >= 8; n -= 8, p += 8) crc = __crc32cd(crc, Get<uint64_t>(p));
  for (; n > 0; --n) crc = __crc32cb(crc, *p++);
  return crc;
}
bool HaveCrc32cInstruction() {
  return (::getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
}
#else
uint32_t Crc32cInstruction(uint32_t crc, const uint8_t* p, size_t n) {
  return Crc32cPortable(crc, p, n);
}
bool HaveCrc32cInstruction() {
  return false;
}
#endif

uint32_t Crc(const uint8_t* p, size_t n) {
  static const bool instruction = HaveCrc32cInstruction();
  const uint32_t crc = ~0u;
  return ~(instruction ? Crc32cInstruction(crc, p, n) : Crc32cPortable(crc, p, n));
}

// The crc a record with `magic` carries; nullopt for no known format.
std::optional<uint32_t> RecordCrc(uint32_t magic, const uint8_t* p, size_t n) {
  if (magic == kMagic) return Crc(p, n);
  if (magic == kMagicZlibCrc) return ZlibCrc(p, n);
  return std::nullopt;
}

}  // namespace

uint64_t InventoryHash(const Inventory& inventory) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  for (const auto& c : inventory.channels) {
    std::string key = c.Key() + '\n';
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(key.data()), static_cast<uInt>(key.size()));
  }
  return (static_cast<uint64_t>(inventory.channels.size()) << 32) | crc;
}

size_t FlightRingBytes(size_t channels, size_t frames) {
  size_t per_frame = Aligned(kHeader + kTrailer + channels * 6 + 16);
  return std::clamp<size_t>(per_frame * frames, 64 << 10, 16 << 20);
}

Result<std::unique_ptr<FlightRecorder>> FlightRecorder::Open(const std::string& path,
                                                             size_t capacity) {
  capacity = Aligned(capacity);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return Status::Unavailable("cannot open flight recorder " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::FailedPrecondition("flight recorder " + path + " is not a regular file");
  }
  auto owner = std::make_unique<runtime::OwnerLock>();
  if (Status s = owner->Acquire(path, "flight recorder " + path); !s.ok()) {
    ::close(fd);
    return s;
  }
  // Keep a larger ring left by an earlier run whole: its records are read
  // before the ring is cleared.
  capacity = std::max(capacity, static_cast<size_t>(st.st_size) / kAlign * kAlign);
  if (static_cast<size_t>(st.st_size) < capacity &&
      ::ftruncate(fd, static_cast<off_t>(capacity)) != 0) {
    Status error =
        Status::Unavailable("cannot size flight recorder " + path + ": " + std::strerror(errno));
    ::close(fd);
    return error;
  }
  void* base = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    Status error =
        Status::Unavailable("cannot map flight recorder " + path + ": " + std::strerror(errno));
    ::close(fd);
    return error;
  }
  return std::unique_ptr<FlightRecorder>(
      new FlightRecorder(path, std::move(owner), fd, static_cast<uint8_t*>(base), capacity));
}

bool FlightRecorder::InMemory() const {
  struct statfs fs {};
  if (::fstatfs(fd_, &fs) != 0) return false;
  // The magic numbers are 32 bits; f_type is a signed word (32 bits wide on
  // 32-bit targets, where RAMFS_MAGIC reads as negative).
  const auto type = static_cast<uint32_t>(fs.f_type);
  return type == TMPFS_MAGIC || type == RAMFS_MAGIC;
}

FlightRecorder::~FlightRecorder() {
  ::munmap(base_, capacity_);
  ::close(fd_);
}

std::vector<Frame> FlightRecorder::Recover(uint64_t inventory_hash, uint64_t from_seq,
                                           size_t* other_inventory) const {
  std::map<uint64_t, Frame> frames;
  size_t other = 0;
  for (size_t off = 0; off + kHeader + kTrailer <= capacity_;) {
    const uint8_t* p = base_ + off;
    const uint32_t magic = Get<uint32_t>(p);
    uint32_t len = Get<uint32_t>(p + 4);
    if ((magic != kMagic && magic != kMagicZlibCrc) || len > kMaxPayload ||
        off + Aligned(kHeader + len + kTrailer) > capacity_) {
      off += kAlign;
      continue;
    }
    if (RecordCrc(magic, p + 4, kHeader - 4 + len) != Get<uint32_t>(p + kHeader + len)) {
      off += kAlign;
      continue;
    }
    off += Aligned(kHeader + len + kTrailer);
    if (Get<uint64_t>(p + 8) != inventory_hash) {
      ++other;
      continue;
    }
    Frame f;
    f.seq = Get<uint64_t>(p + 16);
    f.boottime_ns = Get<int64_t>(p + 24);
    f.realtime_ns = Get<int64_t>(p + 32);
    if (f.seq < from_seq) continue;
    std::string_view blob(reinterpret_cast<const char*>(p + kHeader), len);
    bool ok = store::ForEachValue(blob, [&](uint32_t id, int64_t v) {
      if (id >= (inventory_hash >> 32)) return;  // not a channel of this inventory
      if (f.values.size() <= id) f.values.resize(id + 1);
      f.values[id] = v;
    });
    if (ok) frames[f.seq] = std::move(f);
  }
  if (other_inventory != nullptr) *other_inventory = other;
  std::vector<Frame> out;
  out.reserve(frames.size());
  for (auto& [seq, f] : frames) out.push_back(std::move(f));
  return out;
}

bool FlightRecorder::Punch(size_t from, size_t to) {
  from = (from + page_ - 1) / page_ * page_;
  to = to / page_ * page_;
  if (!can_punch_ || from >= to) return can_punch_;
  if (::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from),
                  static_cast<off_t>(to - from)) != 0) {
    can_punch_ = false;  // the memory stays held, as before; records stay valid
  }
  return can_punch_;
}

size_t FlightRecorder::ResidentBytes() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return 0;
  return static_cast<size_t>(st.st_blocks) * 512;
}

void FlightRecorder::Reset() {
  // A hole reads as zeros: no record is left, and no page is held.
  const size_t tail = Punch(0, capacity_) ? capacity_ / page_ * page_ : 0;
  std::memset(base_ + tail, 0, capacity_ - tail);
  head_ = 0;
  lap_ = 0;
  released_ = releasable_ = 0;
  written_.clear();
}

void FlightRecorder::ReleaseCommitted(uint64_t committed_next) {
  const uint64_t now = lap_ * capacity_ + head_;
  // Older positions were overwritten by this lap: their offsets hold newer
  // records now.
  const uint64_t oldest = now > capacity_ ? now - capacity_ : 0;
  while (!written_.empty()) {
    const Written& w = written_.front();
    if (w.seq >= committed_next && w.end > oldest) break;
    if (w.seq < committed_next) releasable_ = std::max(releasable_, w.end);
    written_.pop_front();
  }
  constexpr uint64_t kChunk = 64 << 10;
  const uint64_t from = std::max(released_, oldest);
  if (releasable_ < from + kChunk) return;
  // Lap by lap; Punch keeps to whole pages inside [from, releasable_): the
  // page the last committed record ends in may hold the next record.
  for (uint64_t at = from; at < releasable_;) {
    const uint64_t lap_start = at - at % capacity_;
    const uint64_t end = std::min<uint64_t>(releasable_, lap_start + capacity_);
    if (!Punch(static_cast<size_t>(at - lap_start), static_cast<size_t>(end - lap_start))) return;
    at = end;
  }
  const uint64_t lap_start = releasable_ - releasable_ % capacity_;
  released_ = lap_start + (releasable_ - lap_start) / page_ * page_;
}

void FlightRecorder::OnFrame(const Inventory& inventory, uint64_t generation, const Frame& frame) {
  if (generation != generation_ || inventory_hash_ == 0) {
    inventory_hash_ = RecordKey(inventory);
    generation_ = generation;
  }
  values_.clear();
  for (size_t id = 0; id < frame.values.size(); ++id) {
    if (frame.values[id]) values_.emplace_back(static_cast<uint32_t>(id), *frame.values[id]);
  }
  // The record is built in room kept from frame to frame (grown, never
  // cleared), then copied into the ring whole.
  const size_t room = kHeader + store::MaxEncodedFrameBytes(values_.size()) + kTrailer;
  if (record_.size() < room) record_.resize(room);
  uint8_t* r = record_.data();
  char* end = store::EncodeFrameInto(values_, reinterpret_cast<char*>(r) + kHeader);
  if (end == nullptr) return;
  const auto len = static_cast<uint32_t>(end - reinterpret_cast<char*>(r) - kHeader);
  PutAt<uint32_t>(r, kMagic);
  PutAt<uint32_t>(r + 4, len);
  PutAt<uint64_t>(r + 8, inventory_hash_);
  PutAt<uint64_t>(r + 16, frame.seq);
  PutAt<int64_t>(r + 24, frame.boottime_ns);
  PutAt<int64_t>(r + 32, frame.realtime_ns);
  PutAt<uint32_t>(r + kHeader + len, Crc(r + 4, kHeader - 4 + len));
  const size_t bytes = kHeader + len + kTrailer;
  size_t size = Aligned(bytes);
  if (size > capacity_) return;
  if (head_ + size > capacity_) {
    // No stale record past the wrap: whole pages are punched, not written
    // (which would make them resident again).
    const size_t first = std::min(capacity_, (head_ + page_ - 1) / page_ * page_);
    std::memset(base_ + head_, 0, first - head_);
    const size_t tail =
        Punch(first, capacity_) ? std::max(first, capacity_ / page_ * page_) : first;
    std::memset(base_ + tail, 0, capacity_ - tail);
    // The padding goes with the lap's last record.
    if (!written_.empty()) written_.back().end = (lap_ + 1) * capacity_;
    head_ = 0;
    ++lap_;
  }
  std::memcpy(base_ + head_, r, bytes);
  std::memset(base_ + head_ + bytes, 0, size - bytes);
  head_ += size;
  if (committed_next_) {
    written_.push_back({lap_ * capacity_ + head_, frame.seq});
    ReleaseCommitted(committed_next_());
  }
}

}  // namespace edgemon
