// Peers: who is on the other end of a unix-socket connection.
//
// gRPC's own unix listener does not say who connected. Both edgemond and
// edgemon-control therefore listen on their unix socket themselves
// (ListenUnix), accept each connection (UnixAcceptor), read its SO_PEERCRED
// (uid, gid, pid as the kernel saw them at connect) into a PeerTable keyed
// by the connection's fd, and hand the fd to the grpc::Server
// (AddInsecureChannelFromFd). A call's ServerContext::peer() is then
// "fd:N", and PeerTable::Of finds its credentials.
//
// An fd number is reused only after the kernel closed the previous
// connection on it, and Set replaces the entry before the new connection is
// handed to gRPC.
//
// Thread safety: PeerTable from any thread; UnixAcceptor's Start and Stop
// from one thread.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "daemon/runtime/principal.h"
#include "edgemon/status.h"

namespace edgemon::runtime {

struct PeerCred {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
};

// Credentials by connection fd, filled by the accept loop.
template <typename T>
class ByConnection {
 public:
  void Set(int fd, T value) {
    std::lock_guard lk(mu_);
    by_fd_[fd] = std::move(value);
  }
  // The entry of the connection a call came in on ("fd:N"); nullopt for any
  // other peer (TCP, in-process) or an unknown fd.
  std::optional<T> Of(const std::string& peer) const {
    if (peer.rfind("fd:", 0) != 0) return std::nullopt;
    int fd = -1;
    try {
      fd = std::stoi(peer.substr(3));
    } catch (const std::exception&) {
      return std::nullopt;
    }
    std::lock_guard lk(mu_);
    auto it = by_fd_.find(fd);
    if (it == by_fd_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<int, T> by_fd_;
};
using PeerTable = ByConnection<PeerCred>;

// The principal of a call from `peer` (ServerContext::peer()): "uid:N" for
// a unix-socket connection in `table`, "tcp:HOST" for "ipv4:HOST:PORT" and
// "ipv6:[HOST]:PORT", else the peer name itself. `table` may be null.
Principal PrincipalOf(const PeerTable* table, const std::string& peer);
// The kernel's credentials of a connected unix socket's peer (at connect).
std::optional<PeerCred> PeerCredOf(int fd);
// The principal of a unix-socket peer: "uid:N", privileged for uid 0.
Principal PrincipalOf(const PeerCred& cred);

// Binds and listens on a unix socket at `path`: its directory is created
// (0755), a stale socket file is replaced but a live one never
// (ClaimUnixPath), the socket is chmod 0660 and given group `gid` when set.
// `type` is SOCK_STREAM or SOCK_SEQPACKET. Returns the listening fd.
Result<int> ListenUnix(const std::string& path, std::optional<gid_t> gid, int type = SOCK_STREAM);

// Accepts connections on a listening unix socket, reads each one's
// SO_PEERCRED, calls `on_accept(fd, cred)` and then hands the fd to `server`.
class UnixAcceptor {
 public:
  UnixAcceptor() = default;
  ~UnixAcceptor();
  UnixAcceptor(const UnixAcceptor&) = delete;
  UnixAcceptor& operator=(const UnixAcceptor&) = delete;

  // Takes ownership of `listen_fd`; `server` must outlive Stop().
  Status Start(int listen_fd, grpc::Server* server,
               std::function<void(int fd, const PeerCred&)> on_accept,
               std::function<void(const std::string&)> warn);
  // Stops accepting and closes the listening socket (connections live on).
  void Stop();

 private:
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace edgemon::runtime
