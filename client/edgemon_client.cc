#include "client/edgemon_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "client/convert.h"
#include "edgemon/secret_file.h"
#include "edgemon/v1/edgemon.grpc.pb.h"
#include "proto/grpc_status.h"

namespace edgemon::client {
namespace {

Status FromGrpc(const grpc::Status& s) {
  Status out = wire::FromGrpc(s);
  // A unix socket whose mode shuts us out fails at connect(2) with EACCES,
  // which gRPC reports as UNAVAILABLE: it is a refusal, and no retry helps.
  if (out.code() == StatusCode::kUnavailable &&
      out.message().find("Permission denied") != std::string::npos) {
    return Status::PermissionDenied(out.message());
  }
  return out;
}

// Errors a retry cannot fix: the request itself or the server is wrong.
bool IsPermanent(StatusCode code) {
  return code == StatusCode::kInvalidArgument || code == StatusCode::kNotFound ||
         code == StatusCode::kUnimplemented || code == StatusCode::kPermissionDenied ||
         code == StatusCode::kUnauthenticated || code == StatusCode::kOutOfRange;
}

void AddBearer(grpc::ClientContext& ctx, const std::string& token) {
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
}

}  // namespace

std::string_view ToString(ConnectionState state) {
  switch (state) {
    case ConnectionState::kConnecting:
      return "connecting";
    case ConnectionState::kConnected:
      return "connected";
    case ConnectionState::kDisconnected:
      return "disconnected";
    case ConnectionState::kStopped:
      return "stopped";
  }
  return "?";
}

struct Client::Impl {
  std::string target;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Telemetry::Stub> stub;
  std::atomic<int64_t> timeout_ms{10'000};
  std::string bearer_token;

  void Prepare(grpc::ClientContext& ctx) const {
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::milliseconds(timeout_ms.load(std::memory_order_relaxed)));
    AddBearer(ctx, bearer_token);
  }
  // A unix socket: the daemon shares this machine's CLOCK_BOOTTIME.
  bool SameMachine() const { return target.starts_with("unix"); }
};

namespace {

class WatcherImpl final : public Watcher {
 public:
  WatcherImpl(v1::Telemetry::Stub* stub, std::shared_ptr<grpc::Channel> channel,
              std::string bearer_token, const WatchOptions& options, FrameCallback on_frame,
              StateCallback on_state, std::stop_token external)
      : stub_(stub),
        channel_(std::move(channel)),
        bearer_token_(std::move(bearer_token)),
        options_(options),
        on_frame_(std::move(on_frame)),
        on_state_(std::move(on_state)) {
    options_.initial_backoff = std::max(options_.initial_backoff, std::chrono::milliseconds(1));
    options_.max_backoff = std::max(options_.max_backoff, options_.initial_backoff);
    request_.set_interval_ms(options.interval_ms);
    for (const std::string& c : options.channels) request_.add_channels(c);
    running_ = true;
    thread_ = std::jthread([this, external](std::stop_token own) { Run(own, external); });
  }

  ~WatcherImpl() override { Stop(); }

  void Stop() override {
    std::lock_guard stop_lock(stop_mu_);  // Stop() may race with itself
    if (!thread_.joinable()) return;
    thread_.request_stop();
    CancelCurrent();
    thread_.join();
  }

  bool running() const override { return running_.load(); }
  uint64_t attempts() const override { return attempts_.load(); }

 private:
  void CancelCurrent() {
    std::lock_guard lock(mu_);
    if (ctx_ != nullptr) ctx_->TryCancel();
    cv_.notify_all();
  }

  void SetState(ConnectionState s, const Status& status) {
    if (on_state_) on_state_(s, status);
  }

  void Run(std::stop_token own, std::stop_token external) {
    auto stopped = [&] { return own.stop_requested() || external.stop_requested(); };
    // Requests to stop from either token cancel the open stream.
    std::stop_callback own_cb(own, [this] { CancelCurrent(); });
    std::stop_callback ext_cb(external, [this] { CancelCurrent(); });
    auto backoff = options_.initial_backoff;
    Status final_status;
    while (!stopped()) {
      SetState(ConnectionState::kConnecting, {});
      grpc::ClientContext ctx;
      AddBearer(ctx, bearer_token_);
      {
        std::lock_guard lock(mu_);
        ctx_ = &ctx;
      }
      ++attempts_;
      bool got_frame = false;
      grpc::Status gs;
      if (!stopped()) {
        std::unique_ptr<grpc::ClientReader<v1::Frame>> reader = stub_->Watch(&ctx, request_);
        v1::Frame pb;
        while (reader->Read(&pb)) {
          if (!got_frame) {
            got_frame = true;
            backoff = options_.initial_backoff;
            SetState(ConnectionState::kConnected, {});
          }
          std::optional<Frame> f = wire::FrameFromProto(pb);
          if (f && on_frame_) on_frame_(LiveFrame{std::move(*f), pb.generation(), {}});
        }
        gs = reader->Finish();
      }
      {
        std::lock_guard lock(mu_);
        ctx_ = nullptr;
      }
      if (stopped()) break;
      Status st = FromGrpc(gs);
      if (st.ok()) st = Status::Unavailable("the stream ended");
      if (IsPermanent(st.code())) {
        final_status = st;
        break;
      }
      SetState(ConnectionState::kDisconnected, st);
      // Wait out the backoff, but retry as soon as the channel has come back:
      // seen down (a READY at first is the connection that just failed), then
      // READY again. A restarted daemon is back within the channel's reconnect
      // backoff, not ours.
      const auto until = std::chrono::steady_clock::now() + backoff;
      bool seen_down = false;
      while (!stopped() && std::chrono::steady_clock::now() < until) {
        auto slice = std::min(until, std::chrono::steady_clock::now() + kReadyPoll);
        if (!channel_) {
          std::unique_lock lock(mu_);
          cv_.wait_until(lock, slice, [&] { return stopped(); });
          continue;
        }
        grpc_connectivity_state state = channel_->GetState(/*try_to_connect=*/true);
        if (state == GRPC_CHANNEL_READY && seen_down) break;
        if (state != GRPC_CHANNEL_READY) seen_down = true;
        channel_->WaitForStateChange(
            state, std::chrono::system_clock::now() + (slice - std::chrono::steady_clock::now()));
      }
      backoff = std::min(backoff * 2, options_.max_backoff);
    }
    running_ = false;
    SetState(ConnectionState::kStopped, final_status);
  }

  static constexpr std::chrono::milliseconds kReadyPoll{50};
  v1::Telemetry::Stub* stub_;
  std::shared_ptr<grpc::Channel> channel_;  // null: plain backoff
  std::string bearer_token_;
  WatchOptions options_;
  FrameCallback on_frame_;
  StateCallback on_state_;
  v1::WatchRequest request_;
  std::mutex stop_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  grpc::ClientContext* ctx_ = nullptr;  // guarded by mu_
  std::atomic<bool> running_{false};
  std::atomic<uint64_t> attempts_{0};
  std::jthread thread_;  // last: started after every other member exists
};

}  // namespace

Result<std::string> Client::NormalizeTarget(std::string_view target) {
  auto bad = [target] {
    return Status::InvalidArgument("bad target '" + std::string(target) +
                                   "': expected unix:/path, /path or host:port");
  };
  if (target.empty()) return bad();
  if (target.front() == '/') return "unix:" + std::string(target);
  if (target.starts_with("unix:")) {
    if (target.size() == 5) return bad();
    return std::string(target);
  }
  if (target.starts_with("unix-abstract:") || target.starts_with("dns:") ||
      target.starts_with("ipv4:") || target.starts_with("ipv6:")) {
    return std::string(target);
  }
  // host:port, [v6]:port
  size_t colon = target.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == target.size()) return bad();
  std::string_view port = target.substr(colon + 1);
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return bad();
  }
  if (port.size() > 5 || std::stoi(std::string(port)) > 65535) return bad();
  return std::string(target);
}

Result<std::unique_ptr<Client>> Client::Connect(std::string_view target) {
  return Connect(target, ConnectOptions{});
}

Result<std::unique_ptr<Client>> Client::Connect(std::string_view target,
                                                const ConnectOptions& options) {
  auto checked = NormalizeTarget(target);
  if (!checked.ok()) return checked.status();
  const std::string normalized = std::move(checked).value();
  grpc::ChannelArguments args;
  // gRPC's own reconnect backoff (1 s .. 120 s by default) would hide a
  // daemon that comes back; 100 ms .. 500 ms sees a restarted daemon within a
  // second. gRPC reads the "minimum" backoff as the time one connection
  // attempt is given to finish its HTTP/2 handshake: at 100 ms a daemon on a
  // busy board read as unreachable, so an attempt keeps gRPC's 20 s (each
  // call's deadline still bounds the wait; a daemon that is not there fails
  // at once).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 20'000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  args.SetMaxReceiveMessageSize(64 << 20);
  auto impl = std::make_unique<Impl>();
  impl->target = normalized;
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (options.tls || !options.tls_ca_file.empty()) {
    if (normalized.starts_with("unix")) {
      return Status::InvalidArgument("TLS is for TCP targets, not " + normalized);
    }
    grpc::SslCredentialsOptions ssl;
    if (!options.tls_ca_file.empty()) {
      auto roots = ReadWholeFile(options.tls_ca_file);
      if (!roots) return Status::InvalidArgument("cannot read CA file " + options.tls_ca_file);
      ssl.pem_root_certs = *roots;
    }
    if (!options.tls_server_name.empty()) {
      args.SetSslTargetNameOverride(options.tls_server_name);
    }
    creds = grpc::SslCredentials(ssl);
  }
  impl->bearer_token = options.bearer_token;
  impl->channel = grpc::CreateCustomChannel(normalized, creds, args);
  if (!impl->channel) return Status::InvalidArgument("cannot create a channel to " + normalized);
  impl->stub = v1::Telemetry::NewStub(impl->channel);
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

const std::string& Client::target() const {
  return impl_->target;
}

void Client::set_timeout(std::chrono::milliseconds timeout) {
  impl_->timeout_ms.store(std::max<int64_t>(1, timeout.count()));
}

Result<edgemon::client::DeviceInfo> Client::DeviceInfo() {
  grpc::ClientContext ctx;
  impl_->Prepare(ctx);
  v1::DeviceInfo pb;
  grpc::Status s = impl_->stub->GetDeviceInfo(&ctx, v1::GetDeviceInfoRequest{}, &pb);
  if (!s.ok()) return FromGrpc(s);
  return DeviceInfoFromProto(pb);
}

Result<LiveFrame> Client::Latest(const std::vector<std::string>& channels, bool last_rises) {
  grpc::ClientContext ctx;
  impl_->Prepare(ctx);
  v1::GetLatestRequest req;
  for (const std::string& c : channels) req.add_channels(c);
  req.set_last_rises(last_rises);
  v1::Frame pb;
  grpc::Status s = impl_->stub->GetLatest(&ctx, req, &pb);
  if (!s.ok()) return FromGrpc(s);
  std::optional<Frame> f = wire::FrameFromProto(pb);
  if (!f) return Status::Internal("malformed frame from the daemon");
  LiveFrame out{std::move(*f), pb.generation(), {}};
  for (const v1::LastRise& r : pb.last_rises())
    out.last_rises.emplace_back(r.id(), r.realtime_ns());
  return out;
}

Result<QueryResult> Client::Query(const QueryRequest& request) {
  grpc::ClientContext ctx;
  impl_->Prepare(ctx);
  v1::QueryRequest req;
  req.set_from_ns(request.from_ns);
  req.set_to_ns(request.to_ns);
  for (const std::string& c : request.channels) req.add_channels(c);
  req.set_step_ns(request.step_ns);
  req.set_limit(request.limit);
  QueryResult out;
  std::unique_ptr<grpc::ClientReader<v1::QueryChunk>> reader = impl_->stub->Query(&ctx, req);
  v1::QueryChunk chunk;
  bool malformed = false;
  while (reader->Read(&chunk)) {
    ++out.chunks;
    for (const v1::Frame& pb : chunk.frames()) {
      std::optional<Frame> f = wire::FrameFromProto(pb);
      if (f) {
        out.frames.push_back(std::move(*f));
      } else {
        malformed = true;
      }
    }
    for (const v1::Series& s : chunk.series()) {
      Series series;
      series.id = s.id();
      series.buckets.reserve(s.buckets_size());
      for (const v1::Bucket& b : s.buckets()) {
        series.buckets.push_back(wire::BucketFromProto(b));
      }
      // A channel's buckets may continue over several chunks.
      if (!out.series.empty() && out.series.back().id == series.id) {
        auto& dst = out.series.back().buckets;
        dst.insert(dst.end(), series.buckets.begin(), series.buckets.end());
      } else {
        out.series.push_back(std::move(series));
      }
    }
    if (chunk.truncated()) out.truncated = true;
    out.bad_frames += chunk.bad_frames();
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return FromGrpc(s);
  if (malformed) return Status::Internal("malformed frame from the daemon");
  return out;
}

Result<QueryResult> Client::Query(int64_t from_ns, int64_t to_ns,
                                  const std::vector<std::string>& channels, int64_t step_ns,
                                  uint32_t limit) {
  return Query(QueryRequest{from_ns, to_ns, channels, step_ns, limit});
}

Result<Window> Client::BeginWindow(const std::string& label, std::optional<uint32_t> lease_ms,
                                   std::optional<int64_t> caller_boottime_ns) {
  grpc::ClientContext ctx;
  impl_->Prepare(ctx);
  v1::BeginWindowRequest req;
  req.set_label(label);
  if (lease_ms) req.set_lease_ms(*lease_ms);
  if (caller_boottime_ns && impl_->SameMachine()) req.set_caller_boottime_ns(*caller_boottime_ns);
  v1::Window pb;
  grpc::Status s = impl_->stub->BeginWindow(&ctx, req, &pb);
  if (!s.ok()) return FromGrpc(s);
  return wire::WindowFromProto(pb);
}

Result<Window> Client::RenewWindow(int64_t id) {
  grpc::ClientContext ctx;
  impl_->Prepare(ctx);
  v1::BeginWindowRequest req;
  req.set_renew_id(id);
  v1::Window pb;
  grpc::Status s = impl_->stub->BeginWindow(&ctx, req, &pb);
  if (!s.ok()) return FromGrpc(s);
  return wire::WindowFromProto(pb);
}

Result<Window> Client::EndWindow(int64_t id, std::optional<int64_t> caller_boottime_ns,
                                 std::optional<int64_t> caller_start_boottime_ns,
                                 const WindowResult& sent) {
  grpc::ClientContext ctx;
  impl_->Prepare(ctx);
  v1::EndWindowRequest req;
  req.set_id(id);
  if (caller_boottime_ns && impl_->SameMachine()) req.set_caller_boottime_ns(*caller_boottime_ns);
  if (caller_start_boottime_ns && impl_->SameMachine()) {
    req.set_caller_start_boottime_ns(*caller_start_boottime_ns);
  }
  if (sent.items) req.set_items(*sent.items);
  if (sent.exit_status) req.set_exit_status(*sent.exit_status);
  v1::Window pb;
  grpc::Status s = impl_->stub->EndWindow(&ctx, req, &pb);
  if (!s.ok()) return FromGrpc(s);
  return wire::WindowFromProto(pb);
}

Result<std::vector<Window>> Client::ListWindows(int64_t from_ns, int64_t to_ns) {
  v1::ListWindowsRequest req;
  req.set_from_ns(from_ns);
  req.set_to_ns(to_ns);
  std::vector<Window> out;
  for (;;) {
    grpc::ClientContext ctx;
    impl_->Prepare(ctx);
    v1::ListWindowsResponse pb;
    grpc::Status s = impl_->stub->ListWindows(&ctx, req, &pb);
    if (!s.ok()) return FromGrpc(s);
    for (const v1::Window& w : pb.windows()) out.push_back(wire::WindowFromProto(w));
    if (pb.next_page_token().empty()) return out;
    req.set_page_token(pb.next_page_token());
  }
}

Result<Summary> Client::SummarizeWindow(int64_t window_id) {
  grpc::ClientContext ctx;
  impl_->Prepare(ctx);
  v1::SummarizeRequest req;
  req.set_window_id(window_id);
  v1::Summary pb;
  grpc::Status s = impl_->stub->Summarize(&ctx, req, &pb);
  if (!s.ok()) return FromGrpc(s);
  return wire::SummaryFromProto(pb);
}

Result<Summary> Client::Summarize(int64_t from_ns, int64_t to_ns) {
  grpc::ClientContext ctx;
  impl_->Prepare(ctx);
  v1::SummarizeRequest req;
  req.mutable_time()->set_from_ns(from_ns);
  req.mutable_time()->set_to_ns(to_ns);
  v1::Summary pb;
  grpc::Status s = impl_->stub->Summarize(&ctx, req, &pb);
  if (!s.ok()) return FromGrpc(s);
  return wire::SummaryFromProto(pb);
}

Result<BoostLease> Client::Boost(uint32_t rate_hz, uint32_t duration_ms, uint64_t lease_id) {
  grpc::ClientContext ctx;
  impl_->Prepare(ctx);
  v1::BoostRequest req;
  req.set_rate_hz(rate_hz);
  req.set_duration_ms(duration_ms);
  req.set_lease_id(lease_id);
  v1::BoostResponse pb;
  grpc::Status s = impl_->stub->Boost(&ctx, req, &pb);
  if (!s.ok()) return FromGrpc(s);
  return BoostLease{pb.rate_hz(), pb.until_ns(), pb.lease_id()};
}

Result<RailSampleSet> Client::RailSamples(int64_t window_id, int64_t from_ns, int64_t to_ns) {
  RailSampleSet out;
  v1::ReadRailSamplesRequest req;
  req.set_window_id(window_id);
  req.set_from_ns(from_ns);
  req.set_to_ns(to_ns);
  for (;;) {
    grpc::ClientContext ctx;
    impl_->Prepare(ctx);
    const size_t room = kMaxRailSamples - out.t_ns.size();
    req.set_limit(static_cast<uint32_t>(std::min<size_t>(room, 100'000)));
    v1::RailSamples pb;
    grpc::Status s = impl_->stub->ReadRailSamples(&ctx, req, &pb);
    if (!s.ok()) return FromGrpc(s);
    if (out.t_ns.empty()) out.complete_to_ns = pb.complete_to_ns();
    const size_t before = out.t_ns.size();
    const size_t n = static_cast<size_t>(pb.t_ns_size());
    out.t_ns.insert(out.t_ns.end(), pb.t_ns().begin(), pb.t_ns().end());
    for (auto& col : out.values) col.resize(before + n);  // a rail this page lacks: absent
    for (const v1::RailColumn& rc : pb.rails()) {
      if (static_cast<size_t>(rc.values_size()) != n) {
        return Status::Internal("rail samples: column " + rc.key() + " has " +
                                std::to_string(rc.values_size()) + " values for " +
                                std::to_string(n) + " times");
      }
      auto it = std::find(out.keys.begin(), out.keys.end(), rc.key());
      const size_t k = static_cast<size_t>(it - out.keys.begin());
      if (it == out.keys.end()) {
        out.keys.push_back(rc.key());
        out.values.emplace_back(before + n);
      }
      auto& col = out.values[k];
      for (size_t i = 0; i < n; ++i) col[before + i] = rc.values(static_cast<int>(i));
      for (uint32_t a : rc.absent()) {
        if (a < n) col[before + a].reset();
      }
    }
    if (!pb.has_next_from_ns() || n == 0) break;
    if (out.t_ns.size() >= kMaxRailSamples) {
      out.truncated = true;
      break;
    }
    req.set_from_ns(pb.next_from_ns());
    if (window_id == 0 && req.from_ns() >= to_ns) break;
  }
  return out;
}

Result<ProcessList> Client::ListProcesses(const std::string& sort, uint32_t limit) {
  grpc::ClientContext ctx;
  impl_->Prepare(ctx);
  v1::ListProcessesRequest req;
  req.set_sort(sort);
  req.set_limit(limit);
  v1::ListProcessesResponse pb;
  grpc::Status s = impl_->stub->ListProcesses(&ctx, req, &pb);
  if (!s.ok()) return FromGrpc(s);
  ProcessList out;
  out.realtime_ns = pb.realtime_ns();
  out.gpu_mem_unavailable = pb.gpu_mem_unavailable();
  for (const v1::Process& p : pb.processes()) out.processes.push_back(ProcessFromProto(p));
  return out;
}

std::unique_ptr<Watcher> Client::Watch(const WatchOptions& options, FrameCallback on_frame,
                                       StateCallback on_state, std::stop_token stop) {
  return std::make_unique<WatcherImpl>(impl_->stub.get(), impl_->channel, impl_->bearer_token,
                                       options, std::move(on_frame), std::move(on_state),
                                       std::move(stop));
}

}  // namespace edgemon::client
