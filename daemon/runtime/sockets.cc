#include "daemon/runtime/sockets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace edgemon::runtime {

bool IsLoopbackAddress(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    // ::ffff:127.x.y.z
    return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

bool IsLoopback(const std::string& host_port) {
  std::string host = host_port;
  if (!host.empty() && host.front() == '[') {
    host = host.substr(1, host.find(']') - 1);
  } else if (auto colon = host.rfind(':'); colon != std::string::npos) {
    host = host.substr(0, colon);
  }
  if (host.empty()) return false;  // gRPC binds every address
  // Decided on what the host is, never on its spelling: a name such as
  // "127.0.0.1.example.test" may resolve to any address. "localhost" is let
  // through here (no name lookup: the static build has no NSS); what gRPC
  // bound for it is checked after bind (ListensOnlyOnLoopback).
  if (host == "localhost") return true;
  sockaddr_storage ss{};
  auto* in4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, host.c_str(), &in4->sin_addr) == 1) {
    ss.ss_family = AF_INET;
  } else if (::inet_pton(AF_INET6, host.c_str(), &in6->sin6_addr) == 1) {
    ss.ss_family = AF_INET6;
  } else {
    return false;
  }
  return IsLoopbackAddress(reinterpret_cast<sockaddr*>(&ss));
}

// After bind: every listening TCP socket of this process on `port` has a
// loopback local address (getsockname), whatever the resolver said.
bool ListensOnlyOnLoopback(int port) {
  rlimit lim{};
  int max_fd = 4096;
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    max_fd = static_cast<int>(std::min<rlim_t>(lim.rlim_cur, 65536));
  }
  for (int fd = 0; fd < max_fd; ++fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) continue;
    if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) continue;
    int listening = 0;
    socklen_t ll = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) != 0 || !listening) continue;
    int bound_port = ss.ss_family == AF_INET
                         ? ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port)
                         : ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
    if (bound_port != port) continue;
    if (!IsLoopbackAddress(reinterpret_cast<sockaddr*>(&ss))) return false;
  }
  return true;
}

// A live socket is never replaced: another process answering on `path` is an
// error; a stale socket file (nobody listening) is removed so bind succeeds.
Status ClaimUnixPath(const std::string& path, int type) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Status::Ok();
  if (!S_ISSOCK(st.st_mode))
    return Status::AlreadyExists(path + " exists and is not a socket; refusing to replace it");
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return Status::Internal("socket path too long: " + path);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Internal(std::string("socket: ") + std::strerror(errno));
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int err = errno;
  ::close(fd);
  if (rc == 0 || err == EAGAIN || err == EACCES) {
    return Status::AlreadyExists(
        "another process is serving on " + path +
        " (is edgemond already running?); refusing to replace a live socket");
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status::Internal("cannot remove stale socket " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status MakeSocketDirectory(const std::string& unix_path) {
  std::error_code ec;
  auto dir = std::filesystem::path(unix_path).parent_path();
  // Created 0755 whatever the umask: clients in the edgemon group must reach
  // the socket, whose own mode (0660) is what restricts access.
  if (!dir.empty() && std::filesystem::create_directories(dir, ec)) {
    std::filesystem::permissions(dir, std::filesystem::perms(0755), ec);
  }
  if (ec) return Status::Internal("cannot create " + dir.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace edgemon::runtime
