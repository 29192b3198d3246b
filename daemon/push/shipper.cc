#include "daemon/push/shipper.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "daemon/runtime/thread_name.h"

#ifdef EDGEMON_PUSH_OTLP
#include "daemon/push/otlp.h"
#endif

namespace edgemon::push {
namespace {

constexpr int64_t kNsPerMs = 1'000'000;

}  // namespace

Verdict Classify(int status) {
  if (status >= 200 && status < 300) return Verdict::kAcknowledged;
  // The batch itself is malformed: sending it again cannot help.
  if (status == 400 || status == 413 || status == 415 || status == 422) return Verdict::kRefused;
  if (status >= 300 && status < 400) return Verdict::kRedirected;
  if (status == 408 || status == 429) return Verdict::kRetry;
  // Any other 4xx: the destination (URL, token, proxy), not the batch.
  if (status >= 400 && status < 500) return Verdict::kMisconfigured;
  return Verdict::kRetry;  // no answer, 5xx, anything else
}

int64_t RateLimitWait(int64_t& pace_ns, int64_t now_ns, size_t samples, double rate) {
  if (rate <= 0) return 0;
  constexpr int64_t kBurstNs = 1'000'000'000;  // credit an idle shipper may have
  pace_ns = std::max(pace_ns, now_ns - kBurstNs) +
            static_cast<int64_t>(static_cast<double>(samples) * 1e9 / rate);
  return std::max<int64_t>(0, pace_ns - now_ns);
}

std::string CursorName(const ShipperOptions& o) {
  return std::string(o.protocol == Protocol::kOtlp ? "otlp " : "remote-write ") + o.url.display;
}

Shipper::Shipper(store::RingStore& store, ShipperOptions options)
    : store_(store),
      options_(std::move(options)),
      name_(CursorName(options_)),
      clock_(options_.clock != nullptr ? *options_.clock : system_clock_),
      http_(options_.url, options_.http),
      external_(ExternalLabels(options_.identity)),
      rng_(std::random_device{}()) {
  health_.destination = options_.url.display;
  health_.protocol = options_.protocol == Protocol::kOtlp ? "otlp" : "remote-write";
}

Shipper::~Shipper() {
  Stop();
}

void Shipper::Start() {
  thread_ = std::thread([this] { Run(); });
  runtime::NameThread(thread_, "push");
}

void Shipper::RequestStop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  http_.Abort();  // the request in flight ends now: the store keeps its batch
}

void Shipper::Stop() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
}

metrics::PushHealth Shipper::Health() const {
  metrics::PushHealth h;
  {
    std::lock_guard lk(mu_);
    h = health_;
  }
  const int64_t now = clock_.RealtimeNs();
  h.stalled = h.failing_since_ns && now - *h.failing_since_ns >= kStalledAfterNs;
  if (!options_.frames) return h;
  // The backlog as the store holds it now: the frames after the committed
  // cursor, and the age of the oldest of them (or of the span after the
  // cursor that only the rollup tier still covers).
  auto cursor = store_.GetPushCursor(name_);
  auto stats = store_.Stats();
  if (!cursor.ok() || !stats.ok()) return h;  // unknown: left out
  const std::optional<store::PushCursor>& c = *cursor;
  const uint64_t acked = c ? c->seq : 0;
  if (!stats->last_seq || *stats->last_seq <= acked) {
    h.backlog_frames = 0;
    h.backlog_age_ns = 0;
    return h;
  }
  const uint64_t first = stats->first_seq.value_or(1);
  h.backlog_frames = static_cast<int64_t>(*stats->last_seq - std::max(acked, first - 1));
  if (c && c->seq + 1 < first) {
    h.backlog_age_ns = std::max<int64_t>(0, now - c->realtime_ns);
  } else if (auto next = store_.FramesAfter(acked, 1); next.ok() && !next->frames.empty()) {
    h.backlog_age_ns = std::max<int64_t>(0, now - next->frames.front().realtime_ns);
  }
  return h;
}

void Shipper::Log(int level, const std::string& message) {
  if (options_.log) options_.log(level, "push " + options_.url.display + ": " + message);
}

void Shipper::Run() {
  int64_t pace_from = clock_.MonotonicNs();
  for (;;) {
    StepResult r = ShipOnce();
    int64_t wait = 0;
    const int64_t now = clock_.MonotonicNs();
    switch (r.step) {
      case Step::kSent:
      case Step::kRefused:
        wait = RateLimitWait(pace_from, now, r.samples, options_.rate_limit);
        break;
      case Step::kIdle:
        wait = options_.interval_ns;
        break;
      case Step::kRetry:
      case Step::kStoreError:
        wait = r.wait_ns;
        break;
    }
    std::unique_lock lk(mu_);
    if (stop_) return;
    if (wait > 0) {
      const int64_t deadline = now + wait;
      while (!stop_ && clock_.MonotonicNs() < deadline) clock_.WaitUntil(deadline, lk, cv_);
      if (stop_) return;
    }
  }
}

Status Shipper::LoadCursor() {
  if (cursor_loaded_) return Status::Ok();
  auto c = store_.GetPushCursor(name_);
  if (!c.ok()) return c.status();
  cursor_ = *c;
  cursor_loaded_ = true;
  return Status::Ok();
}

int64_t Shipper::Backoff(std::optional<int64_t> retry_after_ms) {
  int64_t d = options_.min_backoff_ns;
  for (int i = 0; i < attempt_ && d < options_.max_backoff_ns; ++i) d *= 2;
  d = std::min(d, options_.max_backoff_ns);
  ++attempt_;
  std::uniform_int_distribution<int64_t> jitter(d / 2, std::max(d / 2, d));
  d = jitter(rng_);
  // Honoured up to kRetryAfterCapMs (ParseRetryAfterMs caps it).
  if (retry_after_ms) d = std::max(d, std::min(*retry_after_ms, kRetryAfterCapMs) * kNsPerMs);
  return d;
}

const SeriesLabels& Shipper::PlanFor(const std::vector<store::StoredChannel>& channels) {
  bool same = plan_ && channels.size() == plan_channels_.size();
  for (size_t i = 0; same && i < channels.size(); ++i)
    same = channels[i].key == plan_channels_[i].key;
  if (!same) {
    plan_channels_ = channels;
    plan_inventory_ = Inventory{};
    plan_inventory_.board.model = options_.identity.board_model;
    plan_inventory_.board.soc = options_.identity.soc;
    plan_inventory_.board.l4t = options_.identity.l4t;
    plan_inventory_.board.hostname = options_.identity.host_name;
    for (const auto& c : channels) plan_inventory_.channels.push_back(c.channel);  // id: column
    plan_.emplace(plan_inventory_, external_);
  }
  return *plan_;
}

Status Shipper::LoadPlan() {
  auto channels = store_.Channels();
  if (!channels.ok()) return channels.status();
  for (size_t i = 0; i < channels->size(); ++i) {
    (*channels)[i].channel.id = static_cast<ChannelId>(i);  // as a read's columns
  }
  PlanFor(*channels);
  return Status::Ok();
}

Shipper::StepResult Shipper::ShipOnce() {
  StepResult r;
  if (Status s = LoadCursor(); !s.ok()) {
    Log(2, "reading the cursor: " + s.message());
    return {Step::kStoreError, 0, options_.max_backoff_ns / 10};
  }
  if (options_.frames) {
    auto stats = store_.Stats();
    if (!stats.ok()) {
      Log(2, "reading the store: " + stats.status().message());
      return {Step::kStoreError, 0, options_.max_backoff_ns / 10};
    }
    if (cursor_ && stats->first_seq && cursor_->seq + 1 < *stats->first_seq) {
      return ShipGap(*stats);
    }
    r = ShipFrames();
    if (r.step != Step::kIdle) return r;
  }
  if (options_.windows && options_.window_energy) return ShipWindows();
  return r;
}

Shipper::StepResult Shipper::ShipGap(const store::StoreStats& stats) {
  const int64_t period = store_.rollup_period_ns();
  const int64_t oldest = stats.oldest_ns.value_or(cursor_->realtime_ns);
  if (!in_gap_) {
    in_gap_ = true;
    {
      std::lock_guard lk(mu_);
      ++health_.rollup_gaps;
    }
    Log(1, "frames " + std::to_string(cursor_->seq + 1) + " to " +
               std::to_string(*stats.first_seq - 1) +
               " were deleted before they were sent; sending the rollup tier for that span");
  }
  if (!LoadPlan().ok()) return {Step::kStoreError, 0, options_.max_backoff_ns / 10};
  const SeriesLabels& plan = *plan_;
  // Whole periods starting after the last frame sent, before the oldest held.
  int64_t from = cursor_->realtime_ns + 1;
  from = from % period == 0 ? from : (from / period + (from > 0 ? 1 : 0)) * period;
  const int64_t per_batch =
      std::max<int64_t>(1, static_cast<int64_t>(options_.batch_samples) /
                               std::max<int64_t>(1, static_cast<int64_t>(plan.entries().size())));
  const int64_t to = std::min(oldest, from + per_batch * period);
  // Remote-write: a series per channel. OTLP: each period as a frame at its
  // start, encoded as the raw frames are.
  const bool otlp = options_.protocol == Protocol::kOtlp;
  std::vector<Series> series;
  std::map<int64_t, Frame> periods;
  size_t n = 0;
  if (from < to) {
    for (const auto& e : plan.entries()) {
      const store::StoredChannel& sc = plan_channels_[e.id];
      auto buckets = store_.Downsample(sc.key, from, to, period, store::Tier::kRollup);
      if (!buckets.ok()) continue;
      Series s;
      s.labels = e.labels;
      const bool counter = sc.channel.Has(kFlagCounter) || sc.channel.field == Field::kEnergy;
      for (const Bucket& b : *buckets) {
        if (b.count == 0) continue;
        const double raw = counter ? static_cast<double>(b.max) : b.avg;
        ++n;
        if (otlp) {
          Frame& f = periods[b.t_ns];
          f.realtime_ns = b.t_ns;
          if (f.values.size() <= e.id) f.values.resize(plan_channels_.size());
          f.values[e.id] = static_cast<int64_t>(std::llround(raw));
        } else {
          s.samples.emplace_back(b.t_ns / kNsPerMs, metrics::ScaledValue(e.scale, raw));
        }
      }
      if (!s.samples.empty()) series.push_back(std::move(s));
    }
  }
  store::PushCursor next = *cursor_;
  next.realtime_ns = std::max(cursor_->realtime_ns, to - 1);
  if (to >= oldest) {
    next.seq = *stats.first_seq - 1;  // the raw frames follow
  }
  if (n == 0) {
    // Nothing in the rollup tier there: move on without a request.
    if (Status s = store_.SetPushCursor(name_, next); !s.ok()) {
      return {Step::kStoreError, 0, options_.max_backoff_ns / 10};
    }
    cursor_ = next;
    if (next.seq + 1 >= *stats.first_seq) in_gap_ = false;
    return {Step::kSent, 0, 0};
  }
  std::string request;
  if (otlp) {
#ifdef EDGEMON_PUSH_OTLP
    std::vector<Frame> frames;
    frames.reserve(periods.size());
    for (auto& [t, f] : periods) frames.push_back(std::move(f));
    request = EncodeOtlpFrames(plan_inventory_, frames, options_.identity);
#else
    Log(2, "this edgemond was built without the OTLP encoder");
    return {Step::kStoreError, 0, options_.max_backoff_ns};
#endif
  } else {
    request = EncodeWriteRequest(series);
  }
  StepResult r = Deliver(request, n, next, "rollup");
  if (cursor_ && cursor_->seq + 1 >= *stats.first_seq) in_gap_ = false;
  return r;
}

Shipper::StepResult Shipper::ShipFrames() {
  // The batch's frame count follows from the series per frame.
  if (!plan_ && !LoadPlan().ok()) return {Step::kStoreError, 0, options_.max_backoff_ns / 10};
  const size_t limit =
      std::max<size_t>(1, options_.batch_samples / std::max<size_t>(1, plan_->entries().size()));
  auto set = store_.FramesAfter(cursor_ ? cursor_->seq : 0, limit);
  const int64_t now = clock_.MonotonicNs();
  if (set.ok() && set->frames.empty() &&
      (!flushed_at_ns_ || now - *flushed_at_ns_ >= options_.interval_ns)) {
    // Caught up with what is committed: the frames still queued for the
    // batched writer (up to store.commit_interval_ms of them) go out now,
    // read from its memory, not a commit interval later; nothing is
    // committed for it, and the cursor goes into the file with them (I16).
    flushed_at_ns_ = now;
    set = store_.FramesAfterWithQueued(cursor_ ? cursor_->seq : 0, limit);
  }
  if (!set.ok()) {
    Log(2, "reading frames: " + set.status().message());
    return {Step::kStoreError, 0, options_.max_backoff_ns / 10};
  }
  if (set->frames.empty()) return {};
  const SeriesLabels& plan = PlanFor(set->channels);
  store::PushCursor next = cursor_.value_or(store::PushCursor{});
  next.seq = set->frames.back().seq;
  next.realtime_ns = set->frames.back().realtime_ns;
  if (options_.protocol == Protocol::kOtlp) {
#ifdef EDGEMON_PUSH_OTLP
    size_t n = 0;
    for (const Frame& f : set->frames) {
      for (const auto& e : plan.entries()) n += f.Get(e.id) ? 1 : 0;
    }
    return Deliver(EncodeOtlpFrames(plan_inventory_, set->frames, options_.identity), n, next,
                   "frames");
#else
    Log(2, "this edgemond was built without the OTLP encoder");
    return {Step::kStoreError, 0, options_.max_backoff_ns};
#endif
  }
  std::vector<Series> series = FrameSeries(plan, set->frames);
  const size_t n = SampleCount(series);
  return Deliver(EncodeWriteRequest(series), n, next, "frames");
}

Shipper::StepResult Shipper::ShipWindows() {
  const store::PushCursor at = cursor_.value_or(store::PushCursor{});
  auto windows = store_.ClosedWindowsAfter(at.window_end_ns, at.window_id, 16);
  if (!windows.ok()) return {Step::kStoreError, 0, options_.max_backoff_ns / 10};
  std::vector<WindowEnergy> energy;
  store::PushCursor next = at;
  for (const Window& w : *windows) {
    // A window is sent once the frames covering it were (their cursor is past its end).
    if (options_.frames && (!cursor_ || cursor_->realtime_ns < *w.end_ns)) break;
    auto e = options_.window_energy(w);
    if (e.ok()) {
      energy.push_back(std::move(*e));
    } else {
      Log(1, "window " + std::to_string(w.id) + " not sent: " + e.status().message());
    }
    next.window_end_ns = *w.end_ns;
    next.window_id = w.id;
  }
  if (next == at) return {};
  if (!plan_ && !LoadPlan().ok()) return {Step::kStoreError, 0, options_.max_backoff_ns / 10};
  if (options_.protocol == Protocol::kOtlp) {
#ifdef EDGEMON_PUSH_OTLP
    size_t n = 0;
    for (const auto& w : energy) {
      for (const RailSummary& r : w.rails) n += r.energy_mj ? 1 : 0;
    }
    return Deliver(EncodeOtlpWindows(plan_inventory_, energy, options_.identity), n, next,
                   "windows");
#else
    return {Step::kStoreError, 0, options_.max_backoff_ns};
#endif
  }
  std::vector<Series> series = WindowSeries(*plan_, energy);
  if (series.empty()) {
    if (Status s = store_.SetPushCursor(name_, next); !s.ok()) {
      return {Step::kStoreError, 0, options_.max_backoff_ns / 10};
    }
    cursor_ = next;
    return {Step::kSent, 0, 0};
  }
  return Deliver(EncodeWriteRequest(series), SampleCount(series), next, "windows");
}

Shipper::StepResult Shipper::Deliver(const std::string& request, size_t samples,
                                     const store::PushCursor& next, const char* what) {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string type = "application/x-protobuf";
  if (options_.protocol == Protocol::kRemoteWrite) {
    body = SnappyCompress(request);
    headers = {{"Content-Encoding", "snappy"}, {"X-Prometheus-Remote-Write-Version", "0.1.0"}};
  } else {
    body = request;
  }
  HttpAnswer a = http_.Post(body, type, headers);
  // Stopping: the batch stays in the store, unsent and uncounted.
  if (a.aborted) return {Step::kRetry, 0, 0};
  const int64_t now = clock_.RealtimeNs();
  const Verdict verdict = a.status == 0 ? Verdict::kRetry : Classify(a.status);
  const bool ok = verdict == Verdict::kAcknowledged;
  if (verdict != Verdict::kAcknowledged && verdict != Verdict::kRefused) {
    const bool misconfigured = verdict == Verdict::kMisconfigured;
    const int64_t wait = misconfigured ? options_.max_backoff_ns : Backoff(a.retry_after_ms);
    std::string why = a.status == 0 ? a.error : "HTTP " + std::to_string(a.status);
    if (verdict == Verdict::kRedirected) {
      why += ": redirect to " + (a.location.empty() ? std::string("(no Location)") : a.location) +
             " not followed (point the url at it)";
    } else if (a.status != 0) {
      why += ": " + a.body;
    }
    if (a.retry_after_ms) why += " (Retry-After " + std::to_string(*a.retry_after_ms) + " ms)";
    bool stalled_now = false;
    int64_t since = now;
    {
      std::lock_guard lk(mu_);
      health_.samples_retried += samples;
      health_.last_error_ns = now;
      health_.last_error = why;
      if (!health_.failing_since_ns) health_.failing_since_ns = now;
      since = *health_.failing_since_ns;
      stalled_now = !stalled_logged_ && now - since >= kStalledAfterNs;
      stalled_logged_ = stalled_logged_ || stalled_now;
    }
    Log(attempt_ <= 1 || misconfigured || verdict == Verdict::kRedirected ? 1 : 0,
        std::string(what) + ": " + why + "; retrying in " + std::to_string(wait / kNsPerMs) +
            " ms");
    if (stalled_now) {
      Log(2, "failing since " + std::to_string((now - since) / 60'000'000'000) +
                 " min ago: nothing acknowledged since (the store keeps the backlog; flagged "
                 "stalled in DeviceInfo.push and the edgemon.push health service)");
    }
    return {Step::kRetry, samples, wait};
  }
  attempt_ = 0;
  if (!ok) {
    Log(2, std::string(what) + " refused for good (HTTP " + std::to_string(a.status) +
               "), moving past " + std::to_string(samples) + " samples: " + a.body);
  }
  if (Status s = store_.SetPushCursor(name_, next); !s.ok()) {
    Log(2, "committing the cursor: " + s.message());
    // The batch will be sent again: at least once.
    return {Step::kStoreError, samples, options_.max_backoff_ns / 10};
  }
  cursor_ = next;
  std::lock_guard lk(mu_);
  if (ok) {
    health_.samples_sent += samples;
    health_.last_success_ns = now;
    health_.failing_since_ns.reset();
    stalled_logged_ = false;
    return {Step::kSent, samples, 0};
  }
  health_.samples_failed += samples;
  ++health_.batches_failed;
  health_.last_error_ns = now;
  health_.last_error = "HTTP " + std::to_string(a.status) + " (refused for good): " + a.body;
  return {Step::kRefused, samples, 0};
}

}  // namespace edgemon::push
