#include "daemon/heap_trim.h"

#include <unistd.h>

#include <cstdio>

#include "daemon/collect/sysfs.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace edgemon {

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

}  // namespace edgemon
