#include "daemon/service/service.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>

#include "daemon/runtime/thread_name.h"
#include "daemon/service/codec.h"
#include "daemon/summary/last_rise.h"
#include "edgemon/checked.h"
#include "edgemon/text.h"
#include "proto/convert.h"
#include "proto/grpc_status.h"

namespace edgemon::service {
namespace {

using summary::StoreFailure;

constexpr int64_t kNsPerMs = 1'000'000;
constexpr int64_t kMinIntervalMs = Sampler::kMinLivePeriodNs / kNsPerMs;  // 100 Hz
constexpr int64_t kMaxIntervalMs = 3'600'000;
constexpr uint32_t kMaxBoostHz = 1000;
constexpr size_t kMaxLabel = 256;
constexpr uint32_t kMaxLeaseMs = 86'400'000;
constexpr uint32_t kMaxWindowPage = 1000;
constexpr int64_t kSweepEveryMs = 200;

std::string SecondsText(int64_t later, int64_t earlier) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", DurationS(earlier, later));
  return buf;
}

Status Invalid(const std::string& m) {
  return Status::InvalidArgument(m);
}

// A caller's stamp of a window's edge (caller_boottime_ns) is this machine's
// CLOCK_BOOTTIME, at most this far ahead of the daemon's reading (the two
// reads of one clock) and at most this old (a call in flight that long is
// not a stamp of its edge); the proto says the same.
constexpr int64_t kStampAheadNs = 5 * kNsPerMs;
constexpr int64_t kStampMaxAgeNs = 10'000 * kNsPerMs;

// The stamped edge on the frames' timeline (`sampler` null: the wall clock's;
// a stamp a hair ahead is now), or INVALID_ARGUMENT naming `field` and what
// is implausible about it. A work's start sent with EndWindow is as old as
// the work: its age is bounded by the window's recorded start instead.
Status StampedEdge(const Sampler* sampler, Clock& clock, int64_t stamp, int64_t* out,
                   std::string_view field = "caller_boottime_ns",
                   int64_t max_age_ns = kStampMaxAgeNs) {
  Sampler::BoottimeOnTimeline at;
  if (sampler) {
    at = sampler->TimelineAtBoottime(stamp);
  } else {
    const int64_t rt = clock.RealtimeNs();
    at.age_ns = SubSaturating(clock.BoottimeNs(), stamp);
    at.timeline_ns = SubSaturating(rt, at.age_ns);
  }
  if (at.age_ns >= -kStampAheadNs && at.age_ns <= max_age_ns) {
    *out = at.age_ns < 0 ? AddSaturating(at.timeline_ns, at.age_ns) : at.timeline_ns;
    return Status::Ok();
  }
  return Invalid(std::string(field) + " " + std::to_string(stamp) + " is " +
                 (at.age_ns < 0 ? SecondsText(0, at.age_ns) + " s in the future"
                                : SecondsText(at.age_ns, 0) + " s old") +
                 " (the daemon's CLOCK_BOOTTIME reads " +
                 std::to_string(AddSaturating(stamp, at.age_ns)) +
                 " ns): only a client on the daemon's machine may stamp an edge" +
                 (max_age_ns < std::numeric_limits<int64_t>::max()
                      ? ", at most " + SecondsText(max_age_ns, 0) + " s before its call"
                      : std::string()));
}

// ListWindows page tokens: "<start_ns>:<id>" of the last window sent.
std::string WindowToken(const store::Window& w) {
  return std::to_string(w.start_ns) + ":" + std::to_string(w.id);
}
std::optional<std::pair<int64_t, int64_t>> ParseWindowToken(const std::string& t) {
  auto colon = t.find(':');
  if (colon == std::string::npos) return std::nullopt;
  int64_t start = 0, id = 0;
  const char* end = t.data() + t.size();
  auto a = std::from_chars(t.data(), t.data() + colon, start);
  auto b = std::from_chars(t.data() + colon + 1, end, id);
  if (a.ec != std::errc() || a.ptr != t.data() + colon || b.ec != std::errc() || b.ptr != end) {
    return std::nullopt;
  }
  return std::pair{start, id};
}

// A worker's queue, or the caller's share of it, is full.
Status Busy() {
  return Status::ResourceExhausted(
      "edgemond is busy: its queue of requests, or your share of it (a quarter), is full; "
      "retry");
}

// A unary reactor finished with a status: converted to gRPC's here, once.
void FinishWith(grpc::ServerUnaryReactor* r, const Status& s) {
  r->Finish(wire::ToGrpc(s));
}
grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* ctx, const Status& s) {
  auto* r = ctx->DefaultReactor();
  FinishWith(r, s);
  return r;
}

// Query: raw frames in pages, or one downsampled series per channel; each
// chunk is fetched on the worker after the previous one was written.
class QueryReactor final : public grpc::ServerWriteReactor<v1::QueryChunk> {
 public:
  QueryReactor(TelemetryService& svc, const v1::QueryRequest& req, std::vector<std::string> keys,
               std::unordered_map<std::string, ChannelId> ids, uint32_t limit,
               runtime::Principal who)
      : svc_(svc),
        who_(std::move(who)),
        next_from_(req.from_ns()),
        to_(req.to_ns()),
        step_(req.step_ns()),
        keys_(std::move(keys)),
        ids_(std::move(ids)),
        rows_left_(limit) {
    std::lock_guard lock(mu_);
    PostLocked();
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    if (!ok) {
      MaybeFinishLocked(Status::Cancelled("write failed"));
    } else if (last_) {
      MaybeFinishLocked(Status::Ok());
    } else {
      PostLocked();
    }
  }

  void OnCancel() override {
    std::lock_guard lock(mu_);
    MaybeFinishLocked(Status::Cancelled(""));
  }

  void OnDone() override {
    {
      std::lock_guard lock(mu_);
      done_ = true;
      if (job_outstanding_) return;  // the job deletes us
    }
    svc_.hub().ReleaseStream(who_);
    delete this;
  }

 private:
  void PostLocked() {
    if (finish_called_) return;
    job_outstanding_ = true;
    if (!svc_.worker().Post([this] { Fetch(); }, who_)) {
      job_outstanding_ = false;
      MaybeFinishLocked(Busy());
    }
  }

  // On the worker thread.
  void Fetch() {
    Status error;
    bool cancelled;
    {
      std::lock_guard lock(mu_);
      cancelled = finish_called_;
    }
    if (!cancelled) {
      chunk_.Clear();
      // Frames still queued for the batched writer that fall in the range
      // are read from its memory (RangeWithQueued, DownsampleWithQueued):
      // a query commits nothing.
      error = step_ > 0 ? FetchSeries() : FetchFrames();
    }
    bool self_delete = false;
    {
      std::lock_guard lock(mu_);
      job_outstanding_ = false;
      if (done_) {
        self_delete = true;
      } else if (!error.ok()) {
        MaybeFinishLocked(error);
      } else if (!finish_called_) {
        StartWrite(&chunk_);
      }
    }
    if (self_delete) {
      svc_.hub().ReleaseStream(who_);
      delete this;
    }
  }

  Status FetchFrames() {
    size_t page = std::min<size_t>(svc_.options().frames_per_chunk, rows_left_);
    auto set = svc_.store().RangeWithQueued(next_from_, to_, keys_, page);
    if (!set.ok()) return StoreFailure(svc_.store(), "query: " + set.status().message());
    bad_frames_ += set->bad_frames;
    std::vector<ChannelId> col_ids;
    for (const auto& sc : set->channels) {
      auto it = ids_.find(sc.key);
      col_ids.push_back(it == ids_.end() ? std::numeric_limits<ChannelId>::max() : it->second);
    }
    for (const auto& f : set->frames) {
      auto* pf = chunk_.add_frames();
      pf->set_seq(f.seq);
      pf->set_boottime_ns(f.boottime_ns);
      pf->set_realtime_ns(f.realtime_ns);
      for (size_t c = 0; c < f.values.size() && c < col_ids.size(); ++c) {
        if (!f.values[c] || col_ids[c] == std::numeric_limits<ChannelId>::max()) continue;
        pf->add_ids(col_ids[c]);
        pf->add_values(*f.values[c]);
      }
      next_from_ = f.realtime_ns + 1;
    }
    rows_left_ -= set->frames.size();
    if (!set->truncated) {
      last_ = true;
    } else if (rows_left_ == 0) {
      last_ = true;
      chunk_.set_truncated(true);
    }
    if (last_) chunk_.set_bad_frames(bad_frames_);
    return Status::Ok();
  }

  Status FetchSeries() {
    if (key_index_ >= keys_.size()) {
      last_ = true;
      return Status::Ok();
    }
    const std::string& key = keys_[key_index_++];
    uint64_t bad = 0;
    auto buckets =
        svc_.store().DownsampleWithQueued(key, next_from_, to_, step_, store::Tier::kAuto, &bad);
    if (!buckets.ok())
      return StoreFailure(svc_.store(), "query " + key + ": " + buckets.status().message());
    // Every series reads the same frames: a bad one counts once.
    bad_frames_ = std::max(bad_frames_, bad);
    auto* s = chunk_.add_series();
    s->set_id(ids_.at(key));
    size_t n = std::min<size_t>(buckets->size(), rows_left_);
    for (size_t i = 0; i < n; ++i) wire::ToProto((*buckets)[i], s->add_buckets());
    if (n < buckets->size()) truncated_ = true;
    if (key_index_ >= keys_.size()) {
      last_ = true;
      chunk_.set_truncated(truncated_);
      chunk_.set_bad_frames(bad_frames_);
    }
    return Status::Ok();
  }

  void MaybeFinishLocked(const Status& s) {
    if (finish_called_) return;
    finish_called_ = true;
    Finish(wire::ToGrpc(s));
  }

  TelemetryService& svc_;
  const runtime::Principal who_;  // holds the stream slot
  int64_t next_from_;
  const int64_t to_;
  const int64_t step_;
  const std::vector<std::string> keys_;
  const std::unordered_map<std::string, ChannelId> ids_;
  size_t rows_left_;
  size_t key_index_ = 0;
  bool truncated_ = false;
  uint64_t bad_frames_ = 0;  // frames skipped because their data did not decode
  bool last_ = false;        // the chunk being written is the last one

  std::mutex mu_;
  v1::QueryChunk chunk_;
  bool job_outstanding_ = false;  // guarded by mu_
  bool finish_called_ = false;    // guarded by mu_
  bool done_ = false;             // guarded by mu_
};

template <typename Msg>
class RefusedStream final : public grpc::ServerWriteReactor<Msg> {
 public:
  explicit RefusedStream(const Status& s) { this->Finish(wire::ToGrpc(s)); }
  void OnDone() override { delete this; }
};

}  // namespace

// ---- TelemetryService ----

TelemetryService::TelemetryService(WatchHub& hub, store::RingStore& store, Clock& clock,
                                   Sampler* sampler, SysFs* fs, ServiceOptions options)
    : hub_(hub),
      store_(store),
      clock_(clock),
      sampler_(sampler),
      fs_(fs),
      options_(std::move(options)),
      worker_(options_.max_queued_jobs, "api-worker"),
      window_worker_(options_.max_queued_jobs, "window-worker"),
      book_(
          store_, clock_, [this] { return Now(); },
          [this] {
            {
              std::lock_guard lock(timer_mu_);
            }  // the timer is waiting, or sees it before it waits
            timer_cv_.notify_all();
          }) {
  summaries_ = options_.summaries;
  if (summaries_ == nullptr) {
    own_summaries_ = std::make_unique<summary::Summaries>(
        store_,
        summary::Summaries::Options{sampler_, options_.frame_period_ns, options_.energy_rate_hz,
                                    options_.live_energy, options_.summary_page_frames});
    summaries_ = own_summaries_.get();
  }
  gpu_processes_ = options_.gpu_processes;
  if (gpu_processes_ == nullptr && fs_ != nullptr) {
    own_gpu_processes_ = std::make_unique<GpuProcessReader>(*fs_, /*nvml=*/false);
    gpu_processes_ = own_gpu_processes_.get();
  }
  if (fs_ != nullptr) processes_ = std::make_unique<ProcessReader>(*fs_, clock_);
  // Sweeps every kSweepEveryMs while some open window has a lease; with none
  // (the common case) it sleeps until a leased window is begun.
  lease_timer_ = std::thread([this] {
    std::unique_lock lock(timer_mu_);
    for (;;) {
      timer_cv_.wait(lock, [this] { return timer_stop_ || book_.leased() > 0; });
      if (timer_cv_.wait_for(lock, std::chrono::milliseconds(kSweepEveryMs),
                             [this] { return timer_stop_; })) {
        return;
      }
      timer_sweeps_.fetch_add(1, std::memory_order_relaxed);
      (void)window_worker_.Post([this] { book_.Sweep(); });
    }
  });
  runtime::NameThread(lease_timer_, "lease-timer");
}

TelemetryService::~TelemetryService() {
  Stop();
}

void TelemetryService::Stop() {
  {
    std::lock_guard lock(timer_mu_);
    timer_stop_ = true;
  }
  timer_cv_.notify_all();
  if (lease_timer_.joinable()) lease_timer_.join();
  worker_.Stop();
  window_worker_.Stop();
}

int64_t TelemetryService::Now() const {
  return sampler_ ? sampler_->TimelineNs() : clock_.RealtimeNs();
}

runtime::Principal TelemetryService::Who(const grpc::CallbackServerContext* ctx) const {
  return runtime::PrincipalOf(&peers_, ctx->peer());
}

int64_t TelemetryService::frame_period_ns() const {
  return summaries_->frame_period_ns();  // the sampler's, or options_.frame_period_ns without one
}

grpc::ServerUnaryReactor* TelemetryService::Defer(grpc::CallbackServerContext* ctx,
                                                  std::function<Status()> job, Worker* on) {
  auto* r = ctx->DefaultReactor();
  if (!(on ? *on : worker_).Post([r, job = std::move(job)] { FinishWith(r, job()); }, Who(ctx))) {
    FinishWith(r, Busy());
  }
  return r;
}

grpc::ServerUnaryReactor* TelemetryService::GetDeviceInfo(grpc::CallbackServerContext* ctx,
                                                          const v1::GetDeviceInfoRequest*,
                                                          v1::DeviceInfo* resp) {
  Snapshot s = hub_.Latest();
  if (!s.inventory) return Done(ctx, Status::Unavailable("no frame sampled yet"));
  ToProto(*s.inventory, s.frame.get(), resp->mutable_board());
  for (const auto& c : s.inventory->channels) wire::ToProto(c, resp->add_channels());
  resp->set_generation(s.generation);
  resp->set_daemon_version(options_.daemon_version);
  resp->set_interval_ms(static_cast<uint32_t>(frame_period_ns() / kNsPerMs));
  resp->set_energy_rate_hz(options_.energy_rate_hz);
  resp->set_api_version(1);
  resp->set_now_ns(Now());
  if (options_.push_status) options_.push_status(resp->mutable_push());
  return Done(ctx, Status::Ok());
}

grpc::ServerUnaryReactor* TelemetryService::GetLatest(grpc::CallbackServerContext* ctx,
                                                      const v1::GetLatestRequest* req,
                                                      v1::Frame* resp) {
  Snapshot s = hub_.Latest();
  if (!s.frame) return Done(ctx, Status::Unavailable("no frame sampled yet"));
  if (static_cast<size_t>(req->channels_size()) > options_.max_channels_per_request) {
    return Done(ctx, Invalid("channels: more than " +
                             std::to_string(options_.max_channels_per_request) + " entries"));
  }
  auto subset = SelectChannelsOrAll(
      *s.inventory, std::vector<std::string>(req->channels().begin(), req->channels().end()));
  if (!subset.ok())
    return Done(ctx, Invalid("channels: " + TerminalSafe(subset.status().message())));
  wire::ToProto(*s.frame, *subset, s.generation, resp);
  if (!req->last_rises()) return Done(ctx, Status::Ok());
  // When the selected event counters last rose: a read of the store's last
  // day (a minute step, then one minute of frames a counter that rose), a
  // job on the worker like every store read.
  std::vector<std::pair<std::string, ChannelId>> counters;  // an empty subset: every channel
  for (const Channel& c : s.inventory->channels) {
    if (c.kind != Kind::kEvent || !c.Has(kFlagCounter)) continue;
    if (subset->empty() || std::find(subset->begin(), subset->end(), c.id) != subset->end()) {
      counters.emplace_back(c.Key(), c.id);
    }
  }
  if (counters.empty()) return Done(ctx, Status::Ok());
  const int64_t at = s.frame->realtime_ns;
  return Defer(ctx, [this, counters = std::move(counters), at, resp] {
    std::vector<std::string> keys;
    for (const auto& [key, id] : counters) keys.push_back(key);
    for (const auto& [key, t] : summary::LastRises(store_, keys, at)) {
      auto it = std::find_if(counters.begin(), counters.end(),
                             [&key = key](const auto& c) { return c.first == key; });
      v1::LastRise* r = resp->add_last_rises();
      r->set_id(it->second);
      r->set_realtime_ns(t);
    }
    return Status::Ok();
  });
}

Result<WatchPlan> TelemetryService::PlanWatch(const v1::WatchRequest& req,
                                              const runtime::Principal& who) {
  if (req.interval_ms() > kMaxIntervalMs ||
      (req.interval_ms() != 0 && req.interval_ms() < kMinIntervalMs)) {
    return Invalid("interval_ms: must be 0 (every frame) or " + std::to_string(kMinIntervalMs) +
                   " to " + std::to_string(kMaxIntervalMs) + ", got " +
                   std::to_string(req.interval_ms()));
  }
  if (static_cast<size_t>(req.channels_size()) > options_.max_channels_per_request) {
    return Invalid("channels: more than " + std::to_string(options_.max_channels_per_request) +
                   " entries");
  }
  WatchPlan plan;
  if (req.channels_size() > 0) {
    Snapshot s = hub_.Latest();
    if (!s.inventory) return Status::Unavailable("no frame sampled yet");
    auto selected = SelectChannelsOrAll(
        *s.inventory, std::vector<std::string>(req.channels().begin(), req.channels().end()));
    // A pattern's bytes are the caller's: its control bytes go back escaped.
    if (!selected.ok()) return Invalid("channels: " + TerminalSafe(selected.status().message()));
    plan.subset = std::move(selected).value();
  }
  if (Status slot = hub_.AcquireStream(who); !slot.ok()) return slot;
  plan.who = who;
  plan.interval_ns = static_cast<int64_t>(req.interval_ms()) * kNsPerMs;
  if (sampler_ != nullptr && plan.interval_ns > 0 &&
      plan.interval_ns < sampler_->frame_period_ns()) {
    // Faster than frames: a live-rate lease for as long as the stream lasts.
    // (No lease over the caller's quota or when the table is full: the watch
    // then gets stored frames.)
    if (auto id = sampler_->Lease(0, LeaseKind::kLive, plan.interval_ns, Sampler::kNoExpiry, who);
        id.ok()) {
      plan.release = [sampler = sampler_, id = *id, who] { sampler->Release(id, who); };
    }
  }
  return plan;
}

grpc::ServerWriteReactor<v1::Frame>* TelemetryService::Watch(grpc::CallbackServerContext* ctx,
                                                             const v1::WatchRequest* req) {
  auto plan = PlanWatch(*req, Who(ctx));
  if (!plan.ok()) return new RefusedStream<v1::Frame>(plan.status());
  return hub_.StartWatch(plan->interval_ns, std::move(plan->subset), std::move(plan->release),
                         std::move(plan->who));
}

grpc::ServerWriteReactor<v1::QueryChunk>* TelemetryService::Query(grpc::CallbackServerContext* ctx,
                                                                  const v1::QueryRequest* req) {
  using Refused = RefusedStream<v1::QueryChunk>;
  if (req->from_ns() >= req->to_ns()) {
    return new Refused(Invalid("from_ns must be before to_ns (got " +
                               std::to_string(req->from_ns()) +
                               " >= " + std::to_string(req->to_ns()) + ")"));
  }
  if (req->step_ns() < 0 || (req->step_ns() > 0 && req->step_ns() < kNsPerMs)) {
    return new Refused(Invalid("step_ns: must be 0 (raw frames) or at least 1000000 (1 ms), got " +
                               std::to_string(req->step_ns())));
  }
  if (req->step_ns() > 0) {
    // The store's own count (exact in uint64: to - from may exceed int64).
    const uint64_t steps = BucketCount(req->from_ns(), req->to_ns(), req->step_ns());
    if (steps > store::kMaxDownsampleSteps) {
      return new Refused(Invalid("step_ns: " + std::to_string(req->step_ns()) + " ns steps over " +
                                 "this range make " + std::to_string(steps) + " steps, more than " +
                                 std::to_string(store::kMaxDownsampleSteps) +
                                 "; use a larger step or a shorter range"));
    }
  }
  if (req->limit() > options_.max_rows) {
    return new Refused(Invalid("limit: at most " + std::to_string(options_.max_rows) +
                               " rows, got " + std::to_string(req->limit())));
  }
  if (static_cast<size_t>(req->channels_size()) > options_.max_channels_per_request) {
    return new Refused(Invalid("channels: more than " +
                               std::to_string(options_.max_channels_per_request) + " entries"));
  }
  Snapshot s = hub_.Latest();
  if (!s.inventory) return new Refused(Status::Unavailable("no frame sampled yet"));
  auto selected = SelectChannelsOrAll(
      *s.inventory, std::vector<std::string>(req->channels().begin(), req->channels().end()));
  if (!selected.ok())
    return new Refused(Invalid("channels: " + TerminalSafe(selected.status().message())));
  std::vector<ChannelId> subset = std::move(selected).value();
  if (subset.empty()) {
    for (const auto& c : s.inventory->channels) subset.push_back(c.id);
  }
  // Keys the store knows (a channel discovered moments ago may not be stored yet).
  auto stored = store_.Channels();
  if (!stored.ok()) return new Refused(StoreFailure(store_, "query: " + stored.status().message()));
  std::unordered_map<std::string, bool> known;
  for (const auto& sc : *stored) known[sc.key] = true;
  std::vector<std::string> keys;
  std::unordered_map<std::string, ChannelId> ids;
  for (ChannelId id : subset) {
    std::string key = s.inventory->channels[id].Key();
    if (!known.count(key)) continue;
    ids[key] = id;
    keys.push_back(std::move(key));
  }
  runtime::Principal who = Who(ctx);
  if (Status slot = hub_.AcquireStream(who); !slot.ok()) return new Refused(slot);
  uint32_t limit = req->limit() == 0 ? options_.default_rows : req->limit();
  return new QueryReactor(*this, *req, std::move(keys), std::move(ids), limit, std::move(who));
}

grpc::ServerUnaryReactor* TelemetryService::BeginWindow(grpc::CallbackServerContext* ctx,
                                                        const v1::BeginWindowRequest* req,
                                                        v1::Window* resp) {
  const int64_t arrived = Now();  // on arrival, not when the worker gets to it
  const int64_t arrived_boottime = clock_.BoottimeNs();  // before the reply, so before any
                                                         // stamp taken after it
  const runtime::Principal who = Who(ctx);
  if (req->has_renew_id()) {
    const int64_t id = req->renew_id();
    return Defer(
        ctx,
        [this, id, arrived, resp, who] {
          auto w = book_.Renew(id, arrived, who);
          if (!w.ok()) return w.status();
          wire::ToProto(*w, resp);
          return Status::Ok();
        },
        &window_worker_);
  }
  if (req->label().size() > kMaxLabel) {
    return Done(ctx, Invalid("label: at most " + std::to_string(kMaxLabel) + " bytes"));
  }
  std::optional<int64_t> lease;
  if (req->has_lease_ms()) {
    if (req->lease_ms() == 0 || req->lease_ms() > kMaxLeaseMs) {
      return Done(ctx, Invalid("lease_ms: 1 to " + std::to_string(kMaxLeaseMs)));
    }
    lease = int64_t{req->lease_ms()} * kNsPerMs;
  }
  std::string label = req->label();
  windows::Stamp start{arrived, arrived_boottime};
  if (req->has_caller_boottime_ns()) {
    if (Status s = StampedEdge(sampler_, clock_, req->caller_boottime_ns(), &start.timeline_ns);
        !s.ok()) {
      return Done(ctx, s);
    }
    start.boottime_ns = req->caller_boottime_ns();
  }
  LiveCounters(start.timeline_ns, resp->mutable_start_energy_mj());
  return Defer(
      ctx,
      [this, label, start, lease, resp, who] {
        auto w = book_.Begin(label, start, lease, who);
        if (!w.ok()) return w.status();
        wire::ToProto(*w, resp);
        return Status::Ok();
      },
      &window_worker_);
}

grpc::ServerUnaryReactor* TelemetryService::EndWindow(grpc::CallbackServerContext* ctx,
                                                      const v1::EndWindowRequest* req,
                                                      v1::Window* resp) {
  int64_t id = req->id();
  // The work's start (as old as the work; held to the window's edges below),
  // put on the timeline before the arrival is read, which it never follows.
  // Each stamp keeps its CLOCK_BOOTTIME reading beside its place on the
  // timeline: the book keeps stamps read in order in that order
  // (windows::Stamp).
  std::optional<windows::Stamp> start_stamped;
  if (req->has_caller_start_boottime_ns()) {
    windows::Stamp t{0, req->caller_start_boottime_ns()};
    if (Status s = StampedEdge(sampler_, clock_, req->caller_start_boottime_ns(), &t.timeline_ns,
                               "caller_start_boottime_ns", std::numeric_limits<int64_t>::max());
        !s.ok()) {
      return Done(ctx, s);
    }
    start_stamped = t;
  }
  const int64_t arrived = Now();  // on arrival, not when the worker gets to it
  std::optional<windows::Stamp> stamped;
  if (req->has_caller_boottime_ns()) {
    windows::Stamp t{0, req->caller_boottime_ns()};
    if (Status s = StampedEdge(sampler_, clock_, req->caller_boottime_ns(), &t.timeline_ns);
        !s.ok()) {
      return Done(ctx, s);
    }
    stamped = t;
  }
  WindowResult sent;
  if (req->has_items()) {
    if (!std::isfinite(req->items()) || req->items() < 0) {
      return Done(ctx, Invalid("items: a finite count, at least 0"));
    }
    sent.items = req->items();
  }
  if (req->has_exit_status()) {
    if (req->exit_status() < 0 || req->exit_status() > 255) {
      return Done(ctx, Invalid("exit_status: 0 to 255 (128 + N for signal N)"));
    }
    sent.exit_status = req->exit_status();
  }
  const runtime::Principal who = Who(ctx);
  return Defer(
      ctx,
      [this, id, arrived, stamped, start_stamped, resp, who, sent] {
        auto done =
            book_.End(id, arrived, stamped, start_stamped, who,
                      [&](int64_t start, int64_t end) { return RunResult(start, end, sent); });
        if (!done.ok()) return done.status();
        wire::ToProto(*done, resp);
        LiveCounters(done->start_ns, resp->mutable_start_energy_mj());
        LiveCounters(*done->end_ns, resp->mutable_end_energy_mj());
        return Status::Ok();
      },
      &window_worker_);
}

grpc::ServerUnaryReactor* TelemetryService::ListWindows(grpc::CallbackServerContext* ctx,
                                                        const v1::ListWindowsRequest* req,
                                                        v1::ListWindowsResponse* resp) {
  int64_t from = req->from_ns();
  int64_t to = req->to_ns() == 0 ? std::numeric_limits<int64_t>::max() : req->to_ns();
  if (from >= to) {
    return Done(ctx, Invalid("from_ns must be before to_ns (to_ns 0 = no end)"));
  }
  const uint32_t page =
      req->page_size() == 0 ? kMaxWindowPage : std::min(req->page_size(), kMaxWindowPage);
  std::optional<std::pair<int64_t, int64_t>> after;
  if (!req->page_token().empty()) {
    after = ParseWindowToken(req->page_token());
    if (!after) return Done(ctx, Invalid("page_token: not a next_page_token from ListWindows"));
  }
  return Defer(ctx, [this, from, to, page, after, resp] {
    auto ws = store_.ListWindows(from, to, size_t{page} + 1, after);
    if (!ws.ok()) return StoreFailure(store_, "list windows: " + ws.status().message());
    const bool more = ws->size() > page;
    if (more) ws->resize(page);
    for (const auto& w : *ws) wire::ToProto(w, resp->add_windows());
    if (more) resp->set_next_page_token(WindowToken(ws->back()));
    return Status::Ok();
  });
}

grpc::ServerUnaryReactor* TelemetryService::Summarize(grpc::CallbackServerContext* ctx,
                                                      const v1::SummarizeRequest* req,
                                                      v1::Summary* resp) {
  if (req->range_case() == v1::SummarizeRequest::kTime) {
    int64_t from = req->time().from_ns(), to = req->time().to_ns();
    if (from >= to) return Done(ctx, Invalid("time: from_ns must be before to_ns"));
    const int64_t now = Now();
    if (from > now) {
      return Done(ctx, Invalid("time: the range starts " + SecondsText(from, now) +
                               " s in the future (the daemon's clock reads " + std::to_string(now) +
                               " ns)"));
    }
    auto* r = ctx->DefaultReactor();
    if (!worker_.Post([this, r, from, to, resp] { RunSummarize(r, from, to, resp); }, Who(ctx))) {
      FinishWith(r, Busy());
    }
    return r;
  }
  if (req->range_case() != v1::SummarizeRequest::kWindowId) {
    return Done(ctx, Invalid("set window_id or time"));
  }
  int64_t id = req->window_id();
  auto* r = ctx->DefaultReactor();
  bool posted = worker_.Post(
      [this, r, id, resp] {
        auto w = store_.GetWindow(id);
        if (!w.ok())
          return FinishWith(r, StoreFailure(store_, "summarize: " + w.status().message()));
        if (!*w) return FinishWith(r, Status::NotFound("no window with id " + std::to_string(id)));
        // An open window is measured up to now.
        auto [from, to] = summary::Summaries::WindowRange(**w, Now());
        RunSummarize(r, from, to, resp);
      },
      Who(ctx));
  if (!posted) FinishWith(r, Busy());
  return r;
}

void TelemetryService::LiveCounters(int64_t t_ns,
                                    google::protobuf::Map<std::string, double>* out) const {
  if (!options_.live_energy) return;
  for (const auto& key : options_.live_energy->keys()) {
    if (auto v = options_.live_energy->CounterAt(key, t_ns)) (*out)[key] = *v;
  }
}

WindowResult TelemetryService::RunResult(int64_t start, int64_t end, WindowResult sent) const {
  Snapshot s = hub_.Latest();
  if (!s.inventory) return sent;
  const auto& channels = s.inventory->channels;
  auto input = std::find_if(channels.begin(), channels.end(), [](const Channel& c) {
    return c.kind == Kind::kRail && c.Has(kFlagInputRail);
  });
  if (input == channels.end()) return sent;
  sent.input_rail = input->name;
  auto energy = std::find_if(channels.begin(), channels.end(), [&](const Channel& c) {
    return c.kind == Kind::kRail && c.field == Field::kEnergy && c.name == input->name;
  });
  if (energy == channels.end()) return sent;
  const std::string key = energy->Key();
  auto a = summaries_->CounterAt(key, start), b = summaries_->CounterAt(key, end);
  if (a && b && *b >= *a) sent.input_energy_mj = *b - *a;
  return sent;
}

void TelemetryService::RunSummarize(grpc::ServerUnaryReactor* r, int64_t from, int64_t to,
                                    v1::Summary* out) {
  auto run = summaries_->Start(from, to, Now());
  if (!run.ok()) return FinishWith(r, run.status());
  NextSummaryPage(r, std::make_shared<summary::Summarizer>(std::move(run).value()), out);
}

void TelemetryService::NextSummaryPage(grpc::ServerUnaryReactor* r,
                                       const std::shared_ptr<summary::Summarizer>& run,
                                       v1::Summary* out) {
  if (auto read = run->ReadPage(); !read.ok()) return FinishWith(r, read);
  if (run->done()) {
    wire::ToProto(run->summary(), out);
    return FinishWith(r, Status::Ok());
  }
  // Yield: the next page is a job of its own, behind what arrived meanwhile.
  if (!worker_.Post([this, r, run, out] { NextSummaryPage(r, run, out); })) {
    FinishWith(r, Status::Unavailable("edgemond is shutting down"));
  }
}

grpc::ServerUnaryReactor* TelemetryService::Boost(grpc::CallbackServerContext* ctx,
                                                  const v1::BoostRequest* req,
                                                  v1::BoostResponse* resp) {
  if (!sampler_) return Done(ctx, Status::Unimplemented("no sampler"));
  const uint32_t rate = req->rate_hz();
  if (rate == 0 || rate > kMaxBoostHz) {
    return Done(ctx, Invalid("rate_hz: must be 1 to 1000, got " + std::to_string(rate)));
  }
  const uint32_t dur_ms = req->duration_ms();
  if (dur_ms == 0 || dur_ms > kMaxIntervalMs) {
    return Done(ctx, Invalid("duration_ms: must be 1 to 3600000, got " + std::to_string(dur_ms)));
  }
  const int64_t dur_ns = static_cast<int64_t>(dur_ms) * kNsPerMs;
  auto leased = sampler_->Lease(req->lease_id(), LeaseKind::kEnergy, 1'000'000'000 / rate,
                                AddSaturating(clock_.MonotonicNs(), dur_ns), Who(ctx));
  if (!leased.ok()) {
    return Done(ctx, leased.status());
  }
  const uint64_t id = *leased;
  // Effective now: the fastest of every live lease and the configured rate.
  const int64_t period = sampler_->energy_period_ns();
  resp->set_rate_hz(period > 0
                        ? static_cast<uint32_t>(std::llround(1e9 / static_cast<double>(period)))
                        : std::max(rate, options_.energy_rate_hz));
  resp->set_until_ns(AddSaturating(Now(), dur_ns));
  resp->set_lease_id(id);
  return Done(ctx, Status::Ok());
}

grpc::ServerUnaryReactor* TelemetryService::ListProcesses(grpc::CallbackServerContext* ctx,
                                                          const v1::ListProcessesRequest* req,
                                                          v1::ListProcessesResponse* resp) {
  if (!processes_) return Done(ctx, Status::Unimplemented("no process source"));
  const std::string& sort = req->sort();
  if (!sort.empty() && sort != "cpu" && sort != "mem" && sort != "gpu" && sort != "pid" &&
      sort != "name") {
    return Done(ctx, Invalid("sort: must be cpu, mem, gpu, pid or name, got \"" + sort + "\""));
  }
  if (req->limit() > 10'000) return Done(ctx, Invalid("limit: at most 10000"));
  v1::ListProcessesRequest copy = *req;
  return Defer(ctx, [this, copy, resp] { return DoListProcesses(copy, resp); });
}

Status TelemetryService::DoListProcesses(const v1::ListProcessesRequest& req,
                                         v1::ListProcessesResponse* out) {
  std::vector<ProcessInfo> infos = processes_->Read();
  std::shared_ptr<const GpuProcessMemory> gpu = gpu_processes_->Read();
  std::vector<v1::Process> procs;
  procs.reserve(infos.size());
  for (ProcessInfo& info : infos) {
    v1::Process p;
    p.set_pid(info.pid);
    p.set_name(std::move(info.name));
    p.set_user(std::move(info.user));
    p.set_command(std::move(info.command));
    if (info.cpu_permille) p.set_cpu_permille(*info.cpu_permille);
    if (info.rss_kib) p.set_rss_kib(*info.rss_kib);
    if (gpu->available) {
      // Every process using the GPU is in the table: one not in it uses none.
      auto g = gpu->kib.find(p.pid());
      p.set_gpu_mem_kib(g != gpu->kib.end() ? g->second : 0);
      p.set_has_gpu_mem(true);
    }
    procs.push_back(std::move(p));
  }
  const std::string sort = req.sort().empty() ? "cpu" : req.sort();
  std::stable_sort(procs.begin(), procs.end(), [&](const v1::Process& a, const v1::Process& b) {
    if (sort == "mem") return a.rss_kib() > b.rss_kib();
    if (sort == "gpu") return a.gpu_mem_kib() > b.gpu_mem_kib();
    if (sort == "pid") return a.pid() < b.pid();
    if (sort == "name") return a.name() < b.name();
    if (a.cpu_permille() != b.cpu_permille()) return a.cpu_permille() > b.cpu_permille();
    return a.pid() < b.pid();
  });
  size_t limit = req.limit() == 0 ? 50 : req.limit();
  for (size_t i = 0; i < procs.size() && i < limit; ++i) *out->add_processes() = procs[i];
  out->set_realtime_ns(Now());
  out->set_gpu_mem_unavailable(gpu->unavailable);
  return Status::Ok();
}

}  // namespace edgemon::service
