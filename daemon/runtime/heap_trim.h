// HeapTrimmer: gives the heap freed after a load back to the kernel.
//
// glibc's malloc keeps freed memory in its arenas (one per thread that
// allocated, up to eight per core) and returns only the top of the main heap
// on its own: after 50 concurrent one-hour Queries edgemond had freed about
// 50 MiB and still held all of it resident. Tick(), called every few seconds
// from the daemon's main loop, calls malloc_trim(0), which releases every
// whole free page of every arena, when since the last trim either
//   - the arenas' free bytes (mallinfo2) grew by `min_bytes`: memory was
//     freed (a load that was running at the last trim has ended), or
//   - the resident set grew by `min_bytes`: a load came and went between two
//     ticks, faulting in pages of free chunks trimmed before, which leaves
//     the free bytes where they were.
// An idle daemon pays one mallinfo2 and one read of /proc/self/statm a tick.
//
// TuneHeap(), called first thing in main before any thread starts, sets
// glibc's allocator for a long-running daemon on a small board: two arenas
// (a thread per gRPC poller otherwise gets one of up to eight per core, and
// memory freed in one cannot serve another), and fixed 128 KiB mmap and trim
// thresholds instead of glibc's dynamic ones, which after one large free
// let each arena keep up to 32 MiB on top of its heap that malloc_trim does
// not return (it trims only the main arena's top).
//
// Elsewhere than glibc (musl, a sanitizer's allocator) both do nothing.
//
// Thread safety: one thread calls Tick().
#pragma once

#include <cstddef>
#include <cstdint>

#include "edgemon/status.h"

namespace edgemon::runtime {

class HeapTrimmer {
 public:
  explicit HeapTrimmer(size_t min_bytes = 256 << 10) : min_bytes_(min_bytes) {}

  struct Trim {
    bool trimmed = false;
    int64_t rss_before_kib = 0;  // VmRSS around the trim (0 when unread)
    int64_t rss_after_kib = 0;
  };
  Trim Tick();

 private:
  size_t min_bytes_;
  size_t free_low_ = 0;      // the arenas' least free bytes seen since the last trim
  int64_t rss_low_kib_ = 0;  // the least resident set seen since the last trim
};

void TuneHeap();

// Gives back the pages of the program's own file that only start-up needed.
// Start-up (static initialisers; gRPC, protobuf and OpenSSL setting
// themselves up) touches most of a statically linked edgemond once: the
// release bundle's daemon held 11.4 MiB of its file resident, of which a
// minute of steady work (1 Hz frames, 100 Hz energy, a client watching)
// touched 2.1 MiB again. This asks the kernel to page out every resident page
// of the program's read-only mappings (code and constant data; writable ones
// are left alone), found by the file's identity (device and inode of
// /proc/self/exe), not its name; what the daemon still uses faults back in
// from the file, once, page by page (the mappings are marked MADV_RANDOM
// first, so read-ahead does not bring their neighbours back). Pages another
// process maps too are left to the kernel
// (MADV_PAGEOUT skips them). Shared libraries are not touched.
// Returns the resident set around it; UNIMPLEMENTED where the kernel has no
// MADV_PAGEOUT (before Linux 5.4), NOT_FOUND when no mapping of the program
// was found.
Result<HeapTrimmer::Trim> PageOutProgramText();

// The process's resident set in KiB (VmRSS), 0 when /proc is unreadable.
int64_t ResidentKib();

}  // namespace edgemon::runtime
