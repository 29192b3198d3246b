#include "client/control_client.h"

#include <sys/stat.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>
#include <cerrno>
#include <cstdlib>

#include "edgemon/groups.h"
#include "proto/grpc_status.h"

namespace edgemon::client {
namespace {

std::chrono::system_clock::time_point Deadline(std::chrono::milliseconds ms) {
  return std::chrono::system_clock::now() + ms;
}

}  // namespace

std::string ControlTarget(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("EDGEMON_CONTROL"); env != nullptr && *env != '\0') return env;
  return kDefaultControlTarget;
}

Result<std::unique_ptr<ControlClient>> ControlClient::Connect(const std::string& target) {
  std::string path = target.rfind("unix:", 0) == 0 ? target.substr(5) : target;
  if (path.empty() || path.front() != '/') {
    return Status::InvalidArgument("the control helper's address must be unix:/path or /path");
  }
  auto c = std::unique_ptr<ControlClient>(new ControlClient());
  c->target_ = "unix:" + path;
  c->path_ = path;
  c->stub_ =
      v1::Control::NewStub(grpc::CreateChannel(c->target_, grpc::InsecureChannelCredentials()));
  return c;
}

// UNAVAILABLE says little: the socket's absence or its permissions say why.
Status ControlClient::Explain(const grpc::Status& s) const {
  Status out = wire::FromGrpc(s);
  if (out.code() != StatusCode::kUnavailable) return out;
  if (::access(path_.c_str(), F_OK) != 0) {
    out = Status::Unavailable(
        "no control helper at " + target_ +
        " (edgemon-control is off unless [control] enable = true in edgemond.toml "
        "and its service is started)");
  } else if (::access(path_.c_str(), R_OK | W_OK) != 0 && errno == EACCES) {
    struct stat st {};
    const std::string group = ::stat(path_.c_str(), &st) == 0
                                  ? LocalGroupName(st.st_gid).value_or(std::to_string(st.st_gid))
                                  : std::string("edgemon-control");
    out = Status::PermissionDenied("permission denied on " + path_ +
                                   ": only root and members of group " + group +
                                   " may change the power mode, clocks and fan");
  }
  return out;
}

Result<v1::ListModesResponse> ControlClient::ListModes() {
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(std::chrono::milliseconds(10000)));
  v1::ListModesResponse out;
  if (auto s = stub_->ListModes(&ctx, {}, &out); !s.ok()) return Explain(s);
  return out;
}

Result<v1::ControlState> ControlClient::GetState() {
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(std::chrono::milliseconds(10000)));
  v1::ControlState out;
  if (auto s = stub_->GetState(&ctx, {}, &out); !s.ok()) return Explain(s);
  return out;
}

Result<v1::ReleaseResponse> ControlClient::Release(const std::string& kind,
                                                   const std::string& lease_id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(Deadline(std::chrono::milliseconds(60000)));
  v1::ReleaseRequest req;
  req.set_kind(kind);
  req.set_lease_id(lease_id);
  v1::ReleaseResponse out;
  if (auto s = stub_->Release(&ctx, req, &out); !s.ok()) return Explain(s);
  return out;
}

template <typename Req>
Result<std::unique_ptr<HeldLease>> ControlClient::Open(
    const Req& req, std::unique_ptr<grpc::ClientReader<v1::LeaseEvent>> (v1::Control::Stub::*call)(
                        grpc::ClientContext*, const Req&)) {
  auto held = std::unique_ptr<HeldLease>(new HeldLease());
  held->stub_ = stub_.get();
  held->ctx_ = std::make_unique<grpc::ClientContext>();
  held->reader_ = (stub_.get()->*call)(held->ctx_.get(), req);
  v1::LeaseEvent ev;
  if (!held->reader_->Read(&ev)) {
    grpc::Status s = held->reader_->Finish();
    held->done_ = true;
    if (s.ok()) return Status::Unavailable("the helper ended the call without a lease");
    return Explain(s);
  }
  held->lease_ = ev.lease();
  // Reads the rest of the stream: an ENDED event when the helper ends the
  // lease by itself, then the end of the call.
  held->reader_thread_ = std::thread([h = held.get()] {
    v1::LeaseEvent e;
    while (h->reader_->Read(&e)) {
      if (e.kind() == v1::LeaseEvent::ENDED) {
        std::lock_guard lk(h->mu_);
        h->end_message_ = e.message();
      }
    }
    grpc::Status s = h->reader_->Finish();
    std::lock_guard lk(h->mu_);
    if (h->end_message_.empty() && !s.ok()) h->end_message_ = s.error_message();
    h->ended_ = true;
  });
  return held;
}

Result<std::unique_ptr<HeldLease>> ControlClient::SetMode(int id, const v1::LeaseOptions& options) {
  v1::SetModeRequest req;
  req.set_id(id);
  *req.mutable_lease() = options;
  return Open(req, &v1::Control::Stub::SetMode);
}

Result<std::unique_ptr<HeldLease>> ControlClient::LockClocks(const v1::LeaseOptions& options) {
  v1::LockClocksRequest req;
  *req.mutable_lease() = options;
  return Open(req, &v1::Control::Stub::LockClocks);
}

Result<std::unique_ptr<HeldLease>> ControlClient::SetFan(const std::string& fan, int percent,
                                                         const v1::LeaseOptions& options) {
  v1::SetFanRequest req;
  req.set_fan(fan);
  req.set_speed_percent(static_cast<uint32_t>(percent));
  *req.mutable_lease() = options;
  return Open(req, &v1::Control::Stub::SetFan);
}

std::string HeldLease::End() {
  if (done_) return end_message_;
  std::string message;
  if (!lease_.detached() && !ended_.load()) {
    grpc::ClientContext ctx;
    ctx.set_deadline(Deadline(timeout_));
    v1::ReleaseRequest req;
    req.set_lease_id(lease_.id());
    v1::ReleaseResponse out;
    if (auto s = stub_->Release(&ctx, req, &out); s.ok()) {
      message = out.message();
    } else if (s.error_code() != grpc::StatusCode::NOT_FOUND) {
      // Cancelling the stream makes the helper restore it too.
      message = "release failed (" + s.error_message() + "); the stream is closed instead";
    }
    ctx_->TryCancel();
  }
  if (reader_thread_.joinable()) reader_thread_.join();
  done_ = true;
  std::lock_guard lk(mu_);
  if (message.empty()) message = end_message_;
  end_message_ = message;
  return message;
}

HeldLease::~HeldLease() {
  End();
}

}  // namespace edgemon::client
