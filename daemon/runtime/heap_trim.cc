#include "daemon/runtime/heap_trim.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "daemon/collect/sysfs.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace edgemon::runtime {

int64_t ResidentKib() {
  // statm's second field: resident pages.
  std::FILE* f = std::fopen(HostProcPath("self/statm").c_str(), "re");
  if (f == nullptr) return 0;
  long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

void TuneHeap() {
#if defined(__GLIBC__)
  mallopt(M_ARENA_MAX, 2);
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  mallopt(M_TRIM_THRESHOLD, 128 * 1024);
#endif
}

HeapTrimmer::Trim HeapTrimmer::Tick() {
  Trim t;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  // Trimmed pages stay counted as free chunks: compare with the least seen
  // since the last trim, so that only newly freed memory counts.
  const size_t free_now = mallinfo2().fordblks;
  const int64_t rss_now = ResidentKib();
  if (rss_low_kib_ == 0 || rss_now < rss_low_kib_) rss_low_kib_ = rss_now;
  if (free_now < free_low_) free_low_ = free_now;
  const int64_t min_kib = static_cast<int64_t>(min_bytes_ / 1024);
  if (free_now - free_low_ < min_bytes_ && rss_now - rss_low_kib_ < min_kib) return t;
  t.rss_before_kib = rss_now;
  malloc_trim(0);
  t.rss_after_kib = ResidentKib();
  t.trimmed = true;
  free_low_ = mallinfo2().fordblks;
  rss_low_kib_ = t.rss_after_kib;
#endif
  return t;
}

Result<HeapTrimmer::Trim> PageOutProgramText() {
#if defined(MADV_PAGEOUT)
  struct stat exe {};
  if (::stat(HostProcPath("self/exe").c_str(), &exe) != 0) {
    return Status::NotFound(std::string("the program's file: ") + std::strerror(errno));
  }
  const std::string maps = HostProcPath("self/maps");
  std::FILE* f = std::fopen(maps.c_str(), "re");
  if (f == nullptr) return Status::NotFound(maps + ": " + std::strerror(errno));
  HeapTrimmer::Trim t;
  t.rss_before_kib = ResidentKib();
  int mappings = 0;
  int failure = 0;
  char line[4096];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    uintptr_t lo = 0, hi = 0;
    char perms[5] = {};
    unsigned long long offset = 0, inode = 0;
    unsigned int dev_major = 0, dev_minor = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s %llx %x:%x %llu", &lo, &hi, perms, &offset,
                    &dev_major, &dev_minor, &inode) != 7) {
      continue;
    }
    if (inode != exe.st_ino || dev_major != major(exe.st_dev) || dev_minor != minor(exe.st_dev)) {
      continue;
    }
    ++mappings;
    if (perms[1] == 'w' || hi <= lo) continue;  // writable: its pages are the program's state
    // Random access from now on: a page faulted back in is read alone, not
    // with its neighbours (read-ahead would bring back most of what goes out).
    (void)::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_RANDOM);
    if (::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_PAGEOUT) != 0 && failure == 0) {
      failure = errno;
    }
  }
  std::fclose(f);
  if (mappings == 0) return Status::NotFound("no mapping of the program's file in " + maps);
  if (failure == EINVAL) return Status::Unimplemented("this kernel has no MADV_PAGEOUT");
  if (failure != 0) return Status::Internal(std::string("madvise: ") + std::strerror(failure));
  t.rss_after_kib = ResidentKib();
  t.trimmed = true;
  return t;
#else
  return Status::Unimplemented("built without MADV_PAGEOUT");
#endif
}

}  // namespace edgemon::runtime
