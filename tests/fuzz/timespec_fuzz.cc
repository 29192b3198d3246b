// libFuzzer target: the duration and time syntax (edgemon/timespec.h) on
// arbitrary bytes. Each parse returns a value or one line of error naming the
// input, never crashes; a duration is never negative.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "edgemon/timespec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string error;
  auto d = edgemon::ParseDurationNs(text, &error);
  if (d && *d < 0) std::abort();
  if (!d && error.empty()) std::abort();
  error.clear();
  auto ms = edgemon::ParseDurationNs(text, &error, edgemon::kNsPerMillisecond);
  if (ms && *ms < 0) std::abort();
  if (!ms && error.empty()) std::abort();
  error.clear();
  auto t = edgemon::ParseTimeNs(text, 1'700'000'000'000'000'000, &error);
  if (!t && error.empty()) std::abort();
  return 0;
}
