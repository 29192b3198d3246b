// ApiServer: builds the grpc::Server for the Telemetry service on a unix
// socket (always) and an optional TCP listener, with the standard health
// service and server reflection (grpc.reflection.v1alpha on gRPC 1.51).
//
// Transport rules (checked again here, besides Config's Validate):
//   - the unix socket's parent directory is created (0755) and the socket is
//     chmod 0660 after bind, with group "edgemon" when that group exists; the
//     daemon runs under umask 077, so the socket is never open to others
//     between bind and chmod;
//   - the unix socket is accepted by edgemond itself (peers.h), so each
//     call's principal (the peer's uid) is known to the service;
//   - a socket file that another process still answers on is never replaced
//     (Start fails); a stale one (connection refused) is removed;
//   - TCP on a non-loopback address requires TLS (cert and key files): the
//     host is judged by its value (an IP literal; "localhost"; any other
//     name is refused), and again after bind by the listening sockets' own
//     addresses (getsockname);
//   - SO_REUSEPORT is off, so a second daemon on the same port fails to start.
//
// Health (grpc.health.v1): "" and "edgemon.v1.Telemetry" are SERVING while
// the server runs (live data is served whatever the store's state);
// kStoreHealthService ("edgemon.store") is SERVING while the history store
// works and NOT_SERVING once it is found damaged (SetStoreServing);
// kPushHealthService ("edgemon.push") is NOT_SERVING while a push destination
// is stalled (SetPushServing).
//
// Thread safety: Start and Shutdown from one thread; SetStoreServing from any.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "daemon/runtime/peers.h"
#include "daemon/runtime/sockets.h"
#include "daemon/service/feed.h"
#include "daemon/service/service.h"
#include "edgemon/status.h"

namespace edgemon::service {

// The health service name of the history store.
inline constexpr char kStoreHealthService[] = "edgemon.store";
// The health service name of the push destinations.
inline constexpr char kPushHealthService[] = "edgemon.push";

struct ServerOptions {
  std::string unix_path;   // "/run/edgemon/edgemond.sock"; "" = no unix socket
  std::string tcp_listen;  // "127.0.0.1:7070"; "" = no TCP
  std::string tls_cert;    // PEM files; both or neither
  std::string tls_key;
  // When set, every call over TCP must carry "authorization: Bearer <token>"
  // (UNAUTHENTICATED otherwise). The unix socket relies on its file mode.
  std::string bearer_token;
  int max_message_bytes = 16 << 20;
  // How long the local feed waits for a connection's request.
  int feed_request_timeout_ms = LocalFeed::kRequestTimeoutMs;
  // Where the acceptor reports a failed accept (null: nowhere).
  std::function<void(const std::string&)> warn;
};

class ApiServer {
 public:
  explicit ApiServer(TelemetryService& service) : service_(service) {}
  ~ApiServer();

  // Listens; returns OK, else one line saying what failed.
  Status Start(const ServerOptions& options);
  // Finishes live watches, then shuts the server down (in-flight calls get
  // `grace_ms` to finish, then are cancelled), then stops the service's worker.
  void Shutdown(int grace_ms = 2000);
  // The store's health status (kStoreHealthService); kept across Start.
  void SetStoreServing(bool serving);
  // The push destinations' health status (kPushHealthService): false while
  // any is stalled; kept across Start.
  void SetPushServing(bool serving);

  grpc::Server* server() { return server_.get(); }
  // The local feed beside the unix socket; null when there is none.
  const LocalFeed* feed() const { return feed_.get(); }

 private:
  TelemetryService& service_;
  std::mutex health_mu_;       // guards the health service's use against Shutdown
  bool store_serving_ = true;  // guarded by health_mu_
  bool push_serving_ = true;   // guarded by health_mu_
  bool serving_ = false;       // guarded by health_mu_: Start succeeded, no Shutdown yet
  std::unique_ptr<grpc::Server> server_;
  runtime::UnixAcceptor acceptor_;
  std::unique_ptr<LocalFeed> feed_;  // beside the unix socket (feed.h)
  std::string unix_path_;            // removed at Shutdown
};

}  // namespace edgemon::service
