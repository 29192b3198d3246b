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
    auto fd = runtime::ListenUnix(o.unix_path, LocalGroupId("edgemon"));
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
      auto key = ReadSecretFile(o.tls_key, 1 << 20);
      if (!cert) return Status::Internal("cannot read TLS certificate " + o.tls_cert);
      if (!key.ok()) return key.status().Context("TLS key");
      grpc::SslServerCredentialsOptions ssl;
      ssl.pem_key_cert_pairs.push_back({*key, *cert});
      creds = grpc::SslServerCredentials(ssl);
    } else if (!runtime::IsLoopback(o.tcp_listen)) {
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
  if (!o.tcp_listen.empty() && o.tls_cert.empty() && !runtime::ListensOnlyOnLoopback(tcp_port)) {
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
            [this](int fd, const runtime::PeerCred& cred) { service_.peers().Set(fd, cred); },
            warn);
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
