// libFuzzer target: the daemon's configuration. Arbitrary bytes as a TOML
// file, then the checks of the result; and the size parser on the same
// bytes. Each must return a value or one line of error, never crash, and a
// configuration that passes Validate must hold values in range.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "daemon/runtime/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  edgemon::runtime::Config config;
  const edgemon::Status applied = edgemon::runtime::ApplyToml(text, "fuzz.toml", config);
  const std::string& error = applied.message();
  if (applied.ok() && edgemon::runtime::Validate(config).ok()) {
    if (config.interval_ms <= 0 || config.max_streams < 1) std::abort();
  }
  if (error.find('\n') != std::string::npos) std::abort();  // one line
  if (auto bytes = edgemon::runtime::ParseBytes(text); bytes && *bytes < 0) std::abort();
  return 0;
}
