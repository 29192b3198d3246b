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
  cycle_ = 0;
  cycle_end_ = 0;
  window_ = 0;
  pending_ = peak_ = high_ = 0;
  written_.clear();
}

size_t FlightRecorder::WindowFor(size_t peak) const {
  constexpr size_t kLeast = 64 << 10;
  const size_t want = std::max(kLeast, (peak + peak / 2 + page_ - 1) / page_ * page_);
  return want > capacity_ / 3 ? capacity_ : want;
}

void FlightRecorder::ForgetOldest() {
  pending_ -= written_.front().end - written_.front().start;
  written_.pop_front();
}

void FlightRecorder::Wrap(bool full) {
  if (full) {
    // No stale record past the wrap: whole pages are punched, not written
    // (which would make them resident again).
    const size_t first = std::min(capacity_, (head_ + page_ - 1) / page_ * page_);
    std::memset(base_ + head_, 0, first - head_);
    const size_t tail =
        Punch(first, capacity_) ? std::max(first, capacity_ / page_ * page_) : first;
    std::memset(base_ + tail, 0, capacity_ - tail);
  }
  // The window for the next cycle; the pages this one used past it hold
  // memory until the store has caught up. Past a third of the ring the
  // head goes round the whole of it: a cycle's records then always fit
  // after the cycle before's (see Place).
  window_ = WindowFor(peak_);
  // Records of older cycles than the one that ends are overwritten by now
  // or about to be (only a full ring wraps with them).
  while (!written_.empty() && written_.front().cycle < cycle_) {
    ForgetOldest();
  }
  cycle_end_ = head_;
  head_ = 0;
  ++cycle_;
  peak_ = pending_;
}

void FlightRecorder::Place(size_t size, uint64_t committed_next) {
  while (!written_.empty() && written_.front().seq < committed_next) {
    ForgetOldest();
  }
  if (window_ == 0) window_ = WindowFor(0);
  // Back to the start once past the window, when every record the store
  // lacks was written in this cycle after the room the next one needs.
  if (head_ >= window_ && head_ + size <= capacity_ &&
      (written_.empty() || (written_.front().cycle == cycle_ && written_.front().start >= size))) {
    Wrap(false);
    return;
  }
  if (head_ + size > capacity_) Wrap(true);
  if (!written_.empty() && written_.front().cycle != cycle_ &&
      head_ + size > written_.front().start && head_ < written_.front().end) {
    // The head reached a record of the cycle before that is not committed
    // (the store is late). Undo the wrap: this cycle's records go after
    // the cycle before's end, and the ring stays in the order it was
    // written. With no room for that, the ring is full: its oldest records
    // are overwritten.
    const size_t moved = head_;
    if (cycle_end_ + moved + size <= capacity_) {
      std::memmove(base_ + cycle_end_, base_, moved);
      for (Written& w : written_) {
        if (w.cycle != cycle_) continue;
        w.start += cycle_end_;
        w.end += cycle_end_;
        w.cycle = cycle_ - 1;
      }
      --cycle_;
      head_ = cycle_end_ + moved;
      cycle_end_ = 0;
    } else {
      while (!written_.empty() && written_.front().cycle != cycle_ &&
             written_.front().start < head_ + size) {
        ForgetOldest();
      }
    }
  }
}

void FlightRecorder::GiveBack() {
  // Past the window only records the store has committed: the head is
  // below it, and no record of the cycle before is waiting.
  constexpr size_t kChunk = 64 << 10;
  if (high_ < window_ + kChunk || head_ > window_) return;
  if (!written_.empty() && written_.front().cycle != cycle_) return;
  const size_t to = std::min(capacity_, (high_ + page_ - 1) / page_ * page_);
  if (Punch(window_, to)) high_ = head_;
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
  if (committed_next_) {
    Place(size, committed_next_());
  } else if (head_ + size > capacity_) {
    Wrap(true);
  }
  const size_t start = head_;
  std::memcpy(base_ + head_, r, bytes);
  std::memset(base_ + head_ + bytes, 0, size - bytes);
  head_ += size;
  if (committed_next_) {
    written_.push_back({cycle_, start, head_, frame.seq});
    pending_ += size;
    peak_ = std::max(peak_, pending_);
    high_ = std::max(high_, head_);
    GiveBack();
  }
}

}  // namespace edgemon
