#include "logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/systemd_sink.h>

#include <cstdlib>

namespace edgemon {

std::shared_ptr<spdlog::logger> MakeLogger(const std::string& name, const std::string& level) {
  std::shared_ptr<spdlog::logger> logger;
  if (std::getenv("JOURNAL_STREAM") != nullptr) {
    // journald adds its own timestamps and the unit name.
    auto sink = std::make_shared<spdlog::sinks::systemd_sink_mt>(name);
    logger = std::make_shared<spdlog::logger>(name, std::move(sink));
    logger->set_pattern("%v");
  } else {
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    logger = std::make_shared<spdlog::logger>(name, std::move(sink));
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %n: %v");
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::warn);
  return logger;
}

}  // namespace edgemon
