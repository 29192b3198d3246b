// FlightRecorder: the frames the store has not committed yet, kept where a
// crash of the daemon cannot take them.
//
// The store commits in batches (store.commit_interval_ms, 512 frames) to
// spare the boot medium (eMMC, SD cards): a kill -9, an OOM kill or a
// watchdog kill used to lose every frame since the last commit, seconds of
// exactly the history that explains the failure. The recorder is a FrameSink
// beside the store's: each frame is also written into a fixed-size ring in a
// memory-mapped file on the runtime directory's tmpfs (beside the API
// socket, "<socket>.flight"). A write there is a memcpy into page cache:
// nothing reaches flash. The pages outlive the process (not a power cut), so
// the next start replays the frames the store lacks, then clears the ring.
//
// Invariants:
//   - a record is [magic, length, inventory hash, seq, boottime, realtime,
//     encoded values (the store's frame codec), crc32c], 8-byte aligned,
//     and is valid only when its crc matches: a record cut short by the
//     crash, or half overwritten by the ring's wrap, is skipped, never
//     misread (records of the first format, magic "EMFR", carry zlib's
//     crc32 and are still read back);
//   - records never straddle the end of the ring: a write that does not fit
//     wraps to offset 0;
//   - replay takes only records made under the same inventory (the channel
//     keys in id order hash the same), so a value lands in the channel it
//     was sampled from; frames of another inventory are dropped and counted;
//   - replay takes only seq >= the store's next_seq(): what was committed is
//     never stored twice, and the sampler continues after what was replayed;
//   - the ring belongs to one store: records carry the store's identity
//     (TieToStore, folded into the inventory hash), so a daemon on another
//     database never replays them into its own;
//   - one process owns the ring file (an exclusive flock, owner_lock.h),
//     and the daemon empties it after a clean stop, when every frame in it
//     is committed;
//   - memory is held for the frames the store lacks, not for the whole
//     ring: given the store's commit point (FollowCommits), the head goes
//     back to the ring's start once what follows it there is committed, so
//     that the same pages (half as much again as the uncommitted frames,
//     at least 64 KiB) are written round and round; pages past them, used while the store
//     was late, are given back to the file system (a hole reads as zeros,
//     which no record matches) once it has caught up, and Reset punches
//     the whole ring; records are kept in the order written (a full ring
//     overwrites its oldest). A sampled frame's seq is
//     the seq the store gives it (the sampler continues after the store).
//
// Thread safety: OnFrame on the sampler thread; Open/Recover/Reset before
// sampling starts.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/runtime/owner_lock.h"
#include "daemon/sampler.h"
#include "edgemon/status.h"

namespace edgemon {

// crc32 of the channel keys in id order: what a recorded frame's ids mean.
uint64_t InventoryHash(const Inventory& inventory);

// A ring big enough for `frames` frames of `channels` channels (at least
// 64 KiB, at most 16 MiB).
size_t FlightRingBytes(size_t channels, size_t frames);

class FlightRecorder final : public FrameSink {
 public:
  // Maps `path` (created 0600 if absent) at `capacity` bytes; UNAVAILABLE
  // when the file cannot be opened, sized or mapped, FAILED_PRECONDITION when
  // it is not a regular file or another process holds it.
  static Result<std::unique_ptr<FlightRecorder>> Open(const std::string& path, size_t capacity);
  ~FlightRecorder() override;
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  // Ties the records to the store with identity `store_key` (OwnerLock's
  // Identity of the database file). Call before Recover and sampling.
  void TieToStore(uint64_t store_key) { store_key_ = static_cast<uint32_t>(store_key); }
  // What records of `inventory` under this store are marked with.
  uint64_t RecordKey(const Inventory& inventory) const {
    return InventoryHash(inventory) ^ store_key_;
  }

  // The valid frames the ring holds for `inventory_hash` with seq >=
  // `from_seq`, in seq order. Frames of other inventories are counted in
  // *other_inventory.
  std::vector<Frame> Recover(uint64_t inventory_hash, uint64_t from_seq,
                             size_t* other_inventory) const;
  // Empties the ring and gives its memory back.
  void Reset();
  // `committed_next` answers (on the sampler thread) one past the newest
  // frame the store has made durable; records below it are given back.
  void FollowCommits(std::function<uint64_t()> committed_next) {
    committed_next_ = std::move(committed_next);
  }
  // Bytes of the ring file that hold memory (allocated blocks).
  size_t ResidentBytes() const;
  // Whether the ring lives in memory (tmpfs, ramfs), as it should: on a
  // disk file system every record dirties the file's pages, which the
  // kernel then writes to the disk.
  bool InMemory() const;

  void OnFrame(const Inventory& inventory, uint64_t generation, const Frame& frame) override;

  const std::string& path() const { return path_; }

 private:
  FlightRecorder(std::string path, std::unique_ptr<runtime::OwnerLock> owner, int fd, uint8_t* base,
                 size_t capacity)
      : path_(std::move(path)),
        owner_(std::move(owner)),
        fd_(fd),
        base_(base),
        capacity_(capacity),
        page_(static_cast<size_t>(::sysconf(_SC_PAGESIZE))) {}

  std::string path_;
  std::unique_ptr<runtime::OwnerLock> owner_;
  uint32_t store_key_ = 0;
  int fd_;
  uint8_t* base_;
  size_t capacity_;
  size_t page_;
  // Gives [from, to) back to the file system (whole pages only); false
  // where the file system cannot punch holes.
  bool Punch(size_t from, size_t to);
  // Where the next record of `size` bytes goes (head_ after it), given the
  // store's commit point.
  void Place(size_t size, uint64_t committed_next);
  // Starts the next cycle at offset 0; `full`: the end of the ring, not the
  // window, ended this one.
  void Wrap(bool full);
  // Gives back the pages past the window once none holds a record the
  // store lacks.
  void GiveBack();
  // The window for a cycle after one whose uncommitted records came to
  // `peak` bytes at most.
  size_t WindowFor(size_t peak) const;
  // Stops following the oldest record in written_.
  void ForgetOldest();

  // Where records go. With the store's commit point (FollowCommits) the
  // head returns to 0 as soon as it is past `window_` and every record not
  // yet committed lies after the room the next one needs: the ring then
  // goes round the same resident pages (a first touch of a punched page
  // costs a page fault and a zeroed page each time), and only pages past
  // the window, used while the store is late, are punched once the store
  // catches up. The window is half as much again as the most bytes of
  // uncommitted records seen in the cycle before (at least 64 KiB; beyond a
  // third of the ring, the whole ring), so a record is committed before
  // the head comes back to it. Should the head reach a record of
  // the cycle before that is still not committed, the cycle's records are
  // moved after the cycle before's end, as if it had not wrapped, so that
  // the ring stays in the order it was written and a full ring loses its
  // oldest records first.
  size_t head_ = 0;
  uint64_t cycle_ = 0;    // wraps so far
  size_t cycle_end_ = 0;  // where the cycle before ended
  size_t window_ = 0;     // where the head may go back to 0 (0: not yet set)
  size_t pending_ = 0;    // bytes of the records in written_
  size_t peak_ = 0;       // most pending_ in this cycle
  size_t high_ = 0;       // pages below it may hold memory
  struct Written {
    uint64_t cycle;
    size_t start, end;  // where it lies
    uint64_t seq;
  };
  std::deque<Written> written_;  // records not yet known to be committed, oldest first
  std::function<uint64_t()> committed_next_;
  bool can_punch_ = true;
  uint64_t generation_ = 0;
  uint64_t inventory_hash_ = 0;
  std::vector<std::pair<uint32_t, int64_t>> values_;  // reused per frame
  std::vector<uint8_t> record_;                       // reused per frame
};

}  // namespace edgemon
