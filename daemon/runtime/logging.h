// Logging: spdlog to journald under systemd (JOURNAL_STREAM set; "<N>" priority prefixes on
// stderr), to stderr otherwise. The logger is created by main and passed down; nothing global is
// installed.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <string>

namespace edgemon::runtime {

// `level` is one of trace, debug, info, warn, error (validated by Config).
std::shared_ptr<spdlog::logger> MakeLogger(const std::string& name, const std::string& level);

}  // namespace edgemon::runtime
