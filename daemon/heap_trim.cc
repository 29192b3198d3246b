#include "heap_trim.h"

#include <unistd.h>

#include <cstdio>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace edgemon {

int64_t ResidentKib() {
  // statm's second field: resident pages.
  std::FILE* f = std::fopen("/proc/self/statm", "re");
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
  const size_t free_now = mallinfo2().fordblks;
  // Trimmed pages stay counted as free chunks: compare with the figure after
  // the last trim, so that only newly freed memory triggers one.
  if (free_now < free_after_last_) free_after_last_ = free_now;
  if (free_now - free_after_last_ < min_freed_) return t;
  t.rss_before_kib = ResidentKib();
  malloc_trim(0);
  t.rss_after_kib = ResidentKib();
  t.trimmed = true;
  free_after_last_ = mallinfo2().fordblks;
#endif
  return t;
}

}  // namespace edgemon
