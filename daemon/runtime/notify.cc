#include "daemon/runtime/notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

// The sd_notify protocol spoken directly: one datagram per message to the
// AF_UNIX socket named by $NOTIFY_SOCKET ("@name" is an abstract address).
// No libsystemd at build or run time, so the same binary starts on machines
// without it; systemd 237 and later understand every message sent here.
namespace edgemon::runtime {
namespace {

void Send(std::string_view message) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || path[0] == '\0') return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t len = std::strlen(path);
  if ((path[0] != '/' && path[0] != '@') || len >= sizeof(addr.sun_path)) return;
  std::memcpy(addr.sun_path, path, len);
  if (path[0] == '@') addr.sun_path[0] = '\0';
  const auto addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  ssize_t sent = 0;
  do {
    sent = ::sendto(fd, message.data(), message.size(), MSG_NOSIGNAL,
                    reinterpret_cast<const sockaddr*>(&addr), addr_len);
  } while (sent < 0 && errno == EINTR);
  ::close(fd);
}

// sd_watchdog_enabled(): WATCHDOG_USEC set, and WATCHDOG_PID (when set) is us.
uint64_t WatchdogUsecFromEnv() {
  const char* usec = std::getenv("WATCHDOG_USEC");
  if (usec == nullptr) return 0;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(usec, &end, 10);
  if (errno != 0 || end == usec || *end != '\0') return 0;
  if (const char* pid = std::getenv("WATCHDOG_PID")) {
    if (std::strtoll(pid, nullptr, 10) != static_cast<long long>(::getpid())) return 0;
  }
  return value;
}

}  // namespace

Notifier::Notifier() {
  watchdog_usec_ = WatchdogUsecFromEnv();
}

void Notifier::Ready(const std::string& status) {
  Send(fmt::format("READY=1\nSTATUS={}", status));
}

void Notifier::Status(const std::string& status) {
  Send(fmt::format("STATUS={}", status));
}

void Notifier::Watchdog(int64_t monotonic_ns) {
  if (watchdog_usec_ == 0) return;
  int64_t half = static_cast<int64_t>(watchdog_usec_.load()) * 500;
  if (monotonic_ns - last_watchdog_ns_.load() < half) return;
  last_watchdog_ns_.store(monotonic_ns);
  Send("WATCHDOG=1");
}

void Notifier::Reloading(int64_t monotonic_ns) {
  Send(fmt::format("RELOADING=1\nMONOTONIC_USEC={}", monotonic_ns / 1000));
}

void Notifier::FitWatchdogTo(int64_t frame_period_ns) {
  if (watchdog_usec_ == 0) return;
  uint64_t need = static_cast<uint64_t>(frame_period_ns / 1000) * 3;
  if (need <= watchdog_usec_) return;
  watchdog_usec_ = need;
  Send(fmt::format("WATCHDOG_USEC={}", need));
}

void Notifier::Stopping() {
  Send("STOPPING=1");
}

}  // namespace edgemon::runtime
