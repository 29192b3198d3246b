#include "daemon/service/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include "edgemon/groups.h"
#include "edgemon/secret_file.h"

namespace edgemon::service {
namespace {

// Checks "authorization: Bearer <token>" on each call; runs on gRPC's own
// thread (IsBlocking false): a constant-time comparison, no I/O.
class BearerTokenProcessor final : public grpc::AuthMetadataProcessor {
 public:
  explicit BearerTokenProcessor(std::string token) : expected_("Bearer " + std::move(token)) {}

  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext*, OutputMetadata* consumed,
                       OutputMetadata*) override {
    auto it = metadata.find("authorization");
    if (it == metadata.end()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "this listener needs a bearer token (authorization metadata)");
    }
    std::string_view got(it->second.data(), it->second.size());
    if (!SecretEqual(got, expected_)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong bearer token");
    }
    consumed->emplace("authorization", std::string(got));
    return grpc::Status::OK;
  }

 private:
  std::string expected_;
};

}  // namespace

Result<std::string> LoadBearerToken(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::Internal("cannot read token file " + path + ": " + std::strerror(errno));
  }
  if ((st.st_mode & S_IRWXO) != 0) {
    return Status::PermissionDenied("token file " + path +
                                    " is accessible to others (chmod o-rwx)");
  }
  auto text = ReadWholeFile(path);
  if (!text) return Status::Internal("cannot read token file " + path);
  std::string t = FirstLineTrimmed(*text);
  if (t.size() < 16)
    return Status::InvalidArgument("token file " + path + ": the token must be at least 16 bytes");
  return t;
}

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

namespace {

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

}  // namespace

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

ApiServer::~ApiServer() {
  Shutdown(0);
}

Status ApiServer::Start(const ServerOptions& o) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(1 << 20);
  builder.SetMaxSendMessageSize(o.max_message_bytes);
  builder.RegisterService(&service_);
  int unix_fd = -1;
  if (!o.unix_path.empty()) {
    auto fd = ListenUnix(o.unix_path, LocalGroupId("edgemon"));
    if (!fd.ok()) return fd.status();
    unix_fd = *fd;
    unix_path_ = o.unix_path;
  }
  // The unix socket is ours until the acceptor takes it.
  auto drop_unix = [&] {
    if (unix_fd >= 0) {
      ::close(unix_fd);
      ::unlink(o.unix_path.c_str());
      unix_path_.clear();
    }
  };
  int tcp_port = 0;
  if (!o.tcp_listen.empty()) {
    if (o.tls_cert.empty() != o.tls_key.empty())
      return Status::InvalidArgument("TLS needs both a certificate and a key");
    std::shared_ptr<grpc::ServerCredentials> creds;
    if (!o.tls_cert.empty()) {
      auto cert = ReadWholeFile(o.tls_cert);
      auto key = ReadWholeFile(o.tls_key);
      if (!cert) return Status::Internal("cannot read TLS certificate " + o.tls_cert);
      if (!key) return Status::Internal("cannot read TLS key " + o.tls_key);
      grpc::SslServerCredentialsOptions ssl;
      ssl.pem_key_cert_pairs.push_back({*key, *cert});
      creds = grpc::SslServerCredentials(ssl);
    } else if (!IsLoopback(o.tcp_listen)) {
      return Status::Internal(
          "TCP listener " + o.tcp_listen +
          " is not a loopback address; configure daemon.tls_cert and daemon.tls_key");
    } else if (!o.bearer_token.empty()) {
      // Plain text on loopback, but through a security connector so the token
      // check below can run (insecure credentials take no processor). Peers
      // that are not on loopback are refused by the connector itself.
      creds = grpc::experimental::LocalServerCredentials(LOCAL_TCP);
    } else {
      creds = grpc::InsecureServerCredentials();
    }
    if (!o.bearer_token.empty()) {
      creds->SetAuthMetadataProcessor(std::make_shared<BearerTokenProcessor>(o.bearer_token));
    }
    builder.AddListeningPort(o.tcp_listen, creds, &tcp_port);
  }
  server_ = builder.BuildAndStart();
  if (!server_) {
    drop_unix();
    return Status::Unavailable(
        "cannot listen on " + (o.unix_path.empty() ? "" : "unix:" + o.unix_path) +
        (o.tcp_listen.empty() ? "" : " " + o.tcp_listen) + " (in use or not permitted)");
  }
  if (!o.tcp_listen.empty() && tcp_port == 0) {
    drop_unix();
    server_->Shutdown();
    server_.reset();
    return Status::Unavailable("cannot listen on " + o.tcp_listen + " (in use or not permitted)");
  }
  if (!o.tcp_listen.empty() && o.tls_cert.empty() && !ListensOnlyOnLoopback(tcp_port)) {
    drop_unix();
    server_->Shutdown();
    server_.reset();
    return Status::Internal(
        "TCP listener " + o.tcp_listen +
        " is bound to a non-loopback address; configure daemon.tls_cert and daemon.tls_key");
  }
  if (unix_fd >= 0) {
    auto warn = o.warn ? o.warn : [](const std::string&) {};
    if (Status s = acceptor_.Start(
            unix_fd, server_.get(),
            [this](int fd, const PeerCred& cred) { service_.peers().Set(fd, cred); }, warn);
        !s.ok()) {
      drop_unix();
      server_->Shutdown();
      server_.reset();
      return s;
    }
    // The Watch stream without HTTP/2 for local clients; without it they
    // use Watch, so a feed that cannot start is not fatal.
    feed_ = std::make_unique<LocalFeed>(service_, o.feed_request_timeout_ms);
    if (Status s = feed_->Start(FeedPath(o.unix_path), LocalGroupId("edgemon")); !s.ok()) {
      warn("no local feed beside " + o.unix_path + ": " + s.message() + " (clients use Watch)");
      feed_.reset();
    }
  }
  server_->GetHealthCheckService()->SetServingStatus("edgemon.v1.Telemetry", true);
  std::lock_guard lk(health_mu_);
  server_->GetHealthCheckService()->SetServingStatus(kStoreHealthService, store_serving_);
  server_->GetHealthCheckService()->SetServingStatus(kPushHealthService, push_serving_);
  serving_ = true;
  return Status::Ok();
}

void ApiServer::SetStoreServing(bool serving) {
  std::lock_guard lk(health_mu_);
  store_serving_ = serving;
  if (serving_) server_->GetHealthCheckService()->SetServingStatus(kStoreHealthService, serving);
}

void ApiServer::SetPushServing(bool serving) {
  std::lock_guard lk(health_mu_);
  push_serving_ = serving;
  if (serving_) server_->GetHealthCheckService()->SetServingStatus(kPushHealthService, serving);
}

void ApiServer::Shutdown(int grace_ms) {
  service_.hub().Shutdown();
  std::unique_ptr<grpc::Server> server;
  {
    std::lock_guard lk(health_mu_);
    if (serving_) server_->GetHealthCheckService()->SetServingStatus(false);
    serving_ = false;
    server = std::move(server_);
  }
  if (feed_) feed_->Stop();
  acceptor_.Stop();
  if (!unix_path_.empty()) ::unlink(unix_path_.c_str());
  unix_path_.clear();
  if (server) {
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(grace_ms));
    server->Wait();
  }
  service_.Stop();
}

}  // namespace edgemon::service
