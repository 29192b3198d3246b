#include "daemon/runtime/peers.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <grpcpp/server_posix.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "daemon/runtime/sockets.h"
#include "daemon/runtime/thread_name.h"

namespace edgemon::runtime {

Principal PrincipalOf(const PeerCred& cred) {
  return Principal{"uid:" + std::to_string(cred.uid), cred.uid == 0};
}

Principal PrincipalOf(const PeerTable* table, const std::string& peer) {
  if (table != nullptr) {
    if (auto cred = table->Of(peer)) return PrincipalOf(*cred);
  }
  for (const char* scheme : {"ipv4:", "ipv6:"}) {
    if (peer.rfind(scheme, 0) != 0) continue;
    std::string host = peer.substr(5);
    if (auto colon = host.rfind(':'); colon != std::string::npos) host.resize(colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    return Principal{"tcp:" + host, false};
  }
  return Principal{peer, false};
}

std::optional<PeerCred> PeerCredOf(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
  return PeerCred{cred.uid, cred.gid, cred.pid};
}

Result<int> ListenUnix(const std::string& path, std::optional<gid_t> gid, int type) {
  if (Status s = MakeSocketDirectory(path); !s.ok()) return s;
  if (Status s = ClaimUnixPath(path, type); !s.ok()) return s;
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    return Status::InvalidArgument("socket path too long: " + path);
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  // The group: a daemon run by an ordinary user (not in it) keeps its own,
  // so that the socket stays its user's alone.
  auto set_group = [&] {
    if (!gid || ::chown(path.c_str(), static_cast<uid_t>(-1), *gid) == 0) return true;
    return errno == EPERM && ::geteuid() != 0;
  };
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::chmod(path.c_str(), 0660) != 0 || !set_group() || ::listen(fd, 128) != 0) {
    Status failed =
        Status::Unavailable("cannot listen on unix:" + path + ": " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return failed;
  }
  return fd;
}

UnixAcceptor::~UnixAcceptor() {
  Stop();
}

Status UnixAcceptor::Start(int listen_fd, grpc::Server* server,
                           std::function<void(int fd, const PeerCred&)> on_accept,
                           std::function<void(const std::string&)> warn) {
  listen_fd_ = listen_fd;
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) {
    return Status::Internal(std::string("pipe: ") + std::strerror(errno));
  }
  thread_ = std::thread([this, server, on_accept = std::move(on_accept), warn = std::move(warn)] {
    for (;;) {
      pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) continue;
      if (p[1].revents != 0) return;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        // Out of descriptors (EMFILE) leaves the connection pending: do not spin.
        if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
          warn(std::string("accept: ") + std::strerror(errno));
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        continue;
      }
      auto cred = PeerCredOf(fd);
      if (!cred) {
        ::close(fd);
        continue;
      }
      on_accept(fd, *cred);
      grpc::AddInsecureChannelFromFd(server, fd);
    }
  });
  NameThread(thread_, "accept");
  return Status::Ok();
}

void UnixAcceptor::Stop() {
  if (thread_.joinable()) {
    if (::write(stop_pipe_[1], "x", 1) < 0) {
      // The pipe cannot be full (one byte, once): nothing else to do.
    }
    thread_.join();
  }
  for (int* fd : {&stop_pipe_[0], &stop_pipe_[1], &listen_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

}  // namespace edgemon::runtime
