// libFuzzer target: the duration and time syntax (edgemon/timespec.h) on
// arbitrary bytes. Each parse returns a value or one line of error naming the
// input, never crashes; a duration is never negative.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "edgemon/timespec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto d = edgemon::ParseDurationNs(text);
  if (d.ok() && *d < 0) std::abort();
  if (!d.ok() && d.status().message().empty()) std::abort();
  auto ms = edgemon::ParseDurationNs(text, edgemon::kNsPerMillisecond);
  if (ms.ok() && *ms < 0) std::abort();
  if (!ms.ok() && ms.status().message().empty()) std::abort();
  auto t = edgemon::ParseTimeNs(text, 1'700'000'000'000'000'000);
  if (!t.ok() && t.status().message().empty()) std::abort();
  return 0;
}
