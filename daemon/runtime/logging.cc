#include "daemon/runtime/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>

#include "edgemon/text.h"

namespace edgemon::runtime {
namespace {

// "%*" writes the syslog priority of the message's level; journald reads a
// leading "<N>" on each stderr line as that line's priority
// (SyslogLevelPrefix=yes, systemd's default since long before 237), so the
// journal keeps levels without libsystemd.
class SyslogPriorityFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    static constexpr char kPriority[] = {'7', '7', '6', '4', '3', '2', '6'};
    const auto level = static_cast<size_t>(msg.level);
    dest.push_back(level < sizeof(kPriority) ? kPriority[level] : '6');
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SyslogPriorityFlag>();
  }
};

// "%~" writes the message TerminalSafe: log lines quote sysfs names (the
// board model, a zone's type) and clients' text, and reach a terminal
// whenever edgemond runs in one.
class SafeMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string safe = TerminalSafe(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(safe.data(), safe.data() + safe.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SafeMessageFlag>();
  }
};

}  // namespace

std::shared_ptr<spdlog::logger> MakeLogger(const std::string& name, const std::string& level) {
  std::shared_ptr<spdlog::logger> logger;
  if (std::getenv("JOURNAL_STREAM") != nullptr) {
    // journald adds its own timestamps and the unit name.
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    logger = std::make_shared<spdlog::logger>(name, std::move(sink));
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<SyslogPriorityFlag>('*').add_flag<SafeMessageFlag>('~').set_pattern(
        "<%*>%~");
    logger->set_formatter(std::move(formatter));
  } else {
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    logger = std::make_shared<spdlog::logger>(name, std::move(sink));
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<SafeMessageFlag>('~').set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %n: %~");
    logger->set_formatter(std::move(formatter));
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::warn);
  return logger;
}

}  // namespace edgemon::runtime
