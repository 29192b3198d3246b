#include "server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

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
    if (!ConstantTimeEqual(got, expected_)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong bearer token");
    }
    consumed->emplace("authorization", std::string(got));
    return grpc::Status::OK;
  }

 private:
  static bool ConstantTimeEqual(std::string_view a, std::string_view b) {
    unsigned diff = a.size() == b.size() ? 0u : 1u;
    for (size_t i = 0; i < b.size(); ++i) {
      diff |=
          static_cast<unsigned char>(i < a.size() ? a[i] : 0) ^ static_cast<unsigned char>(b[i]);
    }
    return diff == 0;
  }

  std::string expected_;
};

// The gid of `name` from /etc/group. Read directly rather than through
// getgrnam: NSS modules cannot load into the static release build, and the
// socket's group is a local group created by the installer.
std::optional<gid_t> LocalGroupId(const std::string& name) {
  std::ifstream in("/etc/group");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string group, password, gid;
    if (!std::getline(fields, group, ':') || group != name) continue;
    if (!std::getline(fields, password, ':') || !std::getline(fields, gid, ':'))
      return std::nullopt;
    char* end = nullptr;
    const unsigned long value = std::strtoul(gid.c_str(), &end, 10);
    if (gid.empty() || *end != '\0') return std::nullopt;
    return static_cast<gid_t>(value);
  }
  return std::nullopt;
}

}  // namespace

std::string LoadBearerToken(const std::string& path, std::string* token) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return "cannot read token file " + path + ": " + std::strerror(errno);
  }
  if ((st.st_mode & S_IRWXO) != 0) {
    return "token file " + path + " is accessible to others (chmod o-rwx)";
  }
  auto text = ReadWholeFile(path);
  if (!text) return "cannot read token file " + path;
  std::string t = FirstLineTrimmed(*text);
  if (t.size() < 16) return "token file " + path + ": the token must be at least 16 bytes";
  *token = std::move(t);
  return {};
}

bool IsLoopback(const std::string& host_port) {
  std::string host = host_port;
  if (!host.empty() && host.front() == '[') {
    host = host.substr(1, host.find(']') - 1);
  } else if (auto colon = host.rfind(':'); colon != std::string::npos) {
    host = host.substr(0, colon);
  }
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

ApiServer::~ApiServer() {
  Shutdown(0);
}

std::string ApiServer::Start(const ServerOptions& o) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(1 << 20);
  builder.SetMaxSendMessageSize(o.max_message_bytes);
  builder.RegisterService(&service_);
  if (!o.unix_path.empty()) {
    std::error_code ec;
    auto dir = std::filesystem::path(o.unix_path).parent_path();
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    if (ec) return "cannot create " + dir.string() + ": " + ec.message();
    builder.AddListeningPort("unix:" + o.unix_path, grpc::InsecureServerCredentials());
  }
  int tcp_port = 0;
  if (!o.tcp_listen.empty()) {
    if (o.tls_cert.empty() != o.tls_key.empty()) return "TLS needs both a certificate and a key";
    std::shared_ptr<grpc::ServerCredentials> creds;
    if (!o.tls_cert.empty()) {
      auto cert = ReadWholeFile(o.tls_cert);
      auto key = ReadWholeFile(o.tls_key);
      if (!cert) return "cannot read TLS certificate " + o.tls_cert;
      if (!key) return "cannot read TLS key " + o.tls_key;
      grpc::SslServerCredentialsOptions ssl;
      ssl.pem_key_cert_pairs.push_back({*key, *cert});
      creds = grpc::SslServerCredentials(ssl);
    } else if (!IsLoopback(o.tcp_listen)) {
      return "TCP listener " + o.tcp_listen +
             " is not a loopback address; configure daemon.tls_cert and daemon.tls_key";
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
    return "cannot listen on " + (o.unix_path.empty() ? "" : "unix:" + o.unix_path) +
           (o.tcp_listen.empty() ? "" : " " + o.tcp_listen) + " (in use or not permitted)";
  }
  if (!o.tcp_listen.empty() && tcp_port == 0) {
    server_->Shutdown();
    server_.reset();
    return "cannot listen on " + o.tcp_listen + " (in use or not permitted)";
  }
  if (!o.unix_path.empty()) {
    if (::chmod(o.unix_path.c_str(), 0660) != 0) {
      return "chmod " + o.unix_path + ": " + std::strerror(errno);
    }
    if (const auto gid = LocalGroupId("edgemon")) {
      if (::chown(o.unix_path.c_str(), static_cast<uid_t>(-1), *gid) != 0) {
        return "chown " + o.unix_path + " to group edgemon: " + std::strerror(errno);
      }
    }
  }
  server_->GetHealthCheckService()->SetServingStatus("edgemon.v1.Telemetry", true);
  return {};
}

void ApiServer::Shutdown(int grace_ms) {
  service_.hub().Shutdown();
  if (server_) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(grace_ms));
    server_->Wait();
    server_.reset();
  }
  service_.Stop();
}

}  // namespace edgemon::service
