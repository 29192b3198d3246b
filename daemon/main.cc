// edgemond: the edgemon daemon. The composition root: it parses the typed
// config, builds the SysFs seam, the collectors, the ring store and the
// sampler, and passes references down. Signals are handled with a signalfd on
// this (the main) thread; no work happens in a signal handler.
//
// The API server (daemon/service) starts after the store and the first frame;
// READY=1 is sent only once it listens.
//
//   SIGTERM/SIGINT  STOPPING=1, stop the API server (live streams finish with
//                   UNAVAILABLE), stop sampling, flush the store, exit 0
//                   (3 when the store was found damaged while running)
//
// Exit statuses: 0 clean stop; 1 runtime failure; 2 bad configuration or
// flag (one line naming it); 3 bad store: the database is not a usable
// edgemon store (not SQLite, corrupt, foreign, from a newer edgemon) at
// start, or was found damaged while running. The systemd unit does not
// restart after 2 or 3 (RestartPreventExitStatus).
//   SIGHUP          re-read the config file; apply what can change live
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <future>
#include <iostream>
#include <mutex>
#include <thread>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "daemon/flight_recorder.h"
#include "daemon/metrics/listener.h"
#include "daemon/metrics/source.h"
#include "daemon/push/identity.h"
#include "daemon/push/shipper.h"
#include "daemon/runtime/config.h"
#include "daemon/runtime/heap_trim.h"
#include "daemon/runtime/logging.h"
#include "daemon/runtime/notify.h"
#include "daemon/runtime/owner_lock.h"
#include "daemon/runtime/signals.h"
#include "daemon/runtime/thread_name.h"
#include "daemon/runtime/thread_priority.h"
#include "daemon/sampler.h"
#include "daemon/service/server.h"
#include "daemon/service/service.h"
#include "daemon/service/watch_hub.h"
#include "daemon/store/ring_store.h"
#include "daemon/store_sink.h"
#include "daemon/summary/summaries.h"
#include "daemon/web/live_site.h"
#include "edgemon/clock.h"
#include "edgemon/render.h"
#include "edgemon/secret_file.h"

namespace edgemon {
namespace {

constexpr int64_t kNsPerMs = 1'000'000;
constexpr int kExitConfig = 2;
constexpr int kExitBadStore = 3;
// Frames per store transaction at most: with a flight recorder (the automatic
// interval, 10 minutes) a commit every 8.5 minutes at 1 Hz; the recorder keeps
// four.
constexpr size_t kBatchFrames = 512;

// Where the store's damage (found on any thread) reaches the API's health
// service; the server is attached once it listens and detached before it stops.
struct StoreHealthLink {
  std::mutex mu;
  service::ApiServer* server = nullptr;  // guarded by mu

  void Attach(service::ApiServer* s, bool serving) {
    std::lock_guard lk(mu);
    server = s;
    if (server) server->SetStoreServing(serving);
  }
  void Damaged() {
    std::lock_guard lk(mu);
    if (server) server->SetStoreServing(false);
  }
};

struct Flags {
  std::string config_path;
  std::optional<std::string> root, db, listen, log_level;
  std::optional<int64_t> interval_ms, energy_rate_hz;
  bool print = false;
  bool recreate_bad_db = false;
  std::optional<std::string> metrics_listen;
  std::vector<std::string> push;  // --push URL (remote-write), after the config's [[push]]
};

// Reads the config file (when given) and applies flags over it.
Status LoadConfig(const Flags& flags, runtime::Config& c) {
  c = runtime::Config{};
  if (!flags.config_path.empty()) {
    auto text = runtime::ReadConfigFile(flags.config_path);
    if (!text.ok()) return text.status();
    if (Status s = runtime::ApplyToml(*text, flags.config_path, c); !s.ok()) return s;
  }
  if (flags.root && flags.root->empty())
    return Status::InvalidArgument("flag --root: must not be empty");
  if (flags.db && flags.db->empty()) return Status::InvalidArgument("flag --db: must not be empty");
  // Relative paths on the command line are relative to the working directory.
  std::error_code ec;
  if (flags.root) {
    c.root = std::filesystem::absolute(*flags.root, ec).lexically_normal().string();
    if (ec) return Status::InvalidArgument("flag --root: " + ec.message());
    if (Status s = runtime::CheckRootDirectory(c.root, "--root"); !s.ok()) return s;
  }
  if (flags.db) {
    c.db_path = std::filesystem::absolute(*flags.db, ec).string();
    if (ec) return Status::InvalidArgument("flag --db: " + ec.message());
  }
  if (flags.listen) c.listen = *flags.listen;
  if (flags.metrics_listen) c.metrics_listen = *flags.metrics_listen;
  if (flags.log_level) c.log_level = *flags.log_level;
  if (flags.interval_ms) c.interval_ms = *flags.interval_ms;
  if (flags.energy_rate_hz) c.energy_rate_hz = *flags.energy_rate_hz;
  for (const std::string& url : flags.push) {
    runtime::PushConfig p;
    p.url = url;
    c.push.push_back(std::move(p));
  }
  return runtime::Validate(c);
}

// edgemon-control's state file (its leases and its count of changes), under
// the monitored root as the helper puts it there.
std::string ControlStatePath(const runtime::Config& c) {
  std::filesystem::path dir(c.control_state_dir);
  if (c.root != "/") dir = std::filesystem::path(c.root) / dir.relative_path();
  return (dir / "state.json").string();
}

int64_t EnergyPeriodNs(const runtime::Config& c) {
  return c.energy_rate_hz > 0 ? 1'000'000'000 / c.energy_rate_hz : 0;
}

store::RingStoreOptions StoreOptions(const runtime::Config& c, bool recreate_bad,
                                     std::shared_ptr<spdlog::logger> log,
                                     std::shared_ptr<StoreHealthLink> health) {
  store::RingStoreOptions o;
  o.raw_retention_ns = c.retention_s * 1'000'000'000;
  // Expired frames go once an hour with short commits (each deletion
  // rewrites the head of the frames table: flash writes), and with every
  // commit whose rows fill a few pages (the store's own rule, I5).
  o.expire_step_ns = std::min<int64_t>(3600'000'000'000, o.raw_retention_ns / 8);
  o.rollup_period_ns = c.rollup_period_s * 1'000'000'000;
  o.rollup_retention_ns = c.rollup_retention_s * 1'000'000'000;
  o.max_bytes = c.max_db_bytes;
  // Automatic: the short interval until a flight recorder is open (main).
  o.commit_interval_ms = c.commit_interval_ms == runtime::kCommitIntervalAuto
                             ? runtime::kCommitIntervalBareMs
                             : c.commit_interval_ms;
  o.rollup_write_frames = static_cast<size_t>(c.rollup_write_frames);
  o.batch_frames = kBatchFrames;
  o.recreate_bad = recreate_bad;
  // A small resident set: queries are short and few, so a modest page cache
  // and no memory-mapped reads (mapped pages count as resident).
  o.cache_kib = 512;
  o.reader_mmap_bytes = 0;
  o.max_idle_readers = 2;
  o.on_event = [log, health](const store::StoreEvent& e) {
    switch (e.kind) {
      case store::StoreEvent::Kind::kWriteFailed:
        log->error("store: {} ({} batches dropped so far; sampling and live data continue)",
                   e.message, e.dropped_batches);
        break;
      case store::StoreEvent::Kind::kResumed:
        log->warn("store: writing again: {}", e.message);
        break;
      case store::StoreEvent::Kind::kRecreated:
        log->warn("store: {}", e.message);
        break;
      case store::StoreEvent::Kind::kClockJump:  // the sampler logged the step
        log->debug("store: {}", e.message);
        break;
      case store::StoreEvent::Kind::kDamaged:
        log->error(
            "store: {}; history is no longer written (sampling, live streams and /metrics go on "
            "from memory); stop the daemon and restart it with --recreate-bad-db to move the "
            "file aside",
            e.message);
        health->Damaged();
        break;
    }
  };
  return o;
}

// One shipper per [[push]] destination (daemon/push), not yet started.
Result<std::vector<std::unique_ptr<push::Shipper>>> MakeShippers(
    const runtime::Config& c, store::RingStore& st, const summary::Summaries& summaries, SysFs& fs,
    const BoardInfo& board, Clock& clock, std::shared_ptr<spdlog::logger> log) {
  std::vector<std::unique_ptr<push::Shipper>> out;
  for (const runtime::PushConfig& p : c.push) {
    push::ShipperOptions o;
    o.url = *runtime::ParseUrl(p.url);  // Validate() accepted it
    o.protocol = p.protocol == "otlp" ? push::Protocol::kOtlp : push::Protocol::kRemoteWrite;
    if (o.protocol == push::Protocol::kOtlp && o.url.path == "/") {
      o.url.path = "/v1/metrics";  // OTLP/HTTP's path for metrics
      o.url.display += "v1/metrics";
    }
    o.http.headers = p.headers;
    if (!p.bearer_token_file.empty()) {
      auto token = ReadTokenFile(p.bearer_token_file, 16);
      if (!token.ok())
        return token.status().Context("push " + o.url.display + " bearer_token_file");
      o.http.bearer_token = std::move(token).value();
    }
    o.http.tls_ca = p.tls_ca;
    o.http.timeout_ms = p.timeout_ms;
    o.http.user_agent = std::string("edgemon/") + EDGEMON_VERSION;
    o.batch_samples = static_cast<size_t>(p.batch_size);
    o.rate_limit = static_cast<double>(p.rate_limit);
    o.frames = p.frames;
    o.windows = p.windows;
    o.interval_ns = p.interval_ms * kNsPerMs;
    o.min_backoff_ns = p.min_backoff_ms * kNsPerMs;
    o.max_backoff_ns = p.max_backoff_ms * kNsPerMs;
    o.identity = push::ReadIdentity(fs, board, p.labels);
    o.window_energy = [&summaries, &clock](const Window& w) -> Result<push::WindowEnergy> {
      auto sum = summaries.OfWindow(w, clock.RealtimeNs());
      if (!sum.ok()) return sum.status();
      return push::WindowEnergy{w, std::move(sum->rails)};
    };
    o.log = [log](int level, const std::string& m) {
      if (level >= 2) {
        log->error("{}", m);
      } else if (level == 1) {
        log->warn("{}", m);
      } else {
        log->info("{}", m);
      }
    };
    o.clock = &clock;
    out.push_back(std::make_unique<push::Shipper>(st, std::move(o)));
  }
  return out;
}

// Prints one line per frame (edgemond --print), for a terminal.
class PrintSink final : public FrameSink {
 public:
  void OnFrame(const Inventory& inv, uint64_t, const Frame& frame) override {
    std::string line = RenderLine(inv, frame);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  }
};

std::string StatusLine(const runtime::Config& c, const Sampler& sampler,
                       const Collection& collection, store::RingStore& st) {
  char buf[256];
  auto stats = st.Stats();
  double mib = stats.ok() ? static_cast<double>(stats->db_bytes) / (1 << 20) : 0;
  int64_t energy = sampler.energy_period_ns();
  std::snprintf(
      buf, sizeof buf,
      "%.3g Hz, energy %s, %zu channels, %llu frames (%llu missed deadlines), store "
      "%.1f of %.0f MiB",
      1e9 / static_cast<double>(sampler.frame_period_ns()),
      energy > 0 ? (std::to_string(1'000'000'000 / energy) + " Hz").c_str() : "with frames",
      collection.inventory().channels.size(), static_cast<unsigned long long>(sampler.frames()),
      static_cast<unsigned long long>(sampler.deadline_misses()), mib,
      static_cast<double>(c.max_db_bytes) / (1 << 20));
  return st.damaged() ? std::string(buf) + ", store DAMAGED" : std::string(buf);
}

// The flight recorder beside the API socket ("<socket>.flight", on the
// runtime directory's tmpfs): first the frames a crashed predecessor sampled
// but never committed go into the store, then the ring records this run.
// Without a unix socket there is no runtime directory to put it in.
std::unique_ptr<FlightRecorder> OpenFlightRecorder(const runtime::Config& c,
                                                   const Collection& collection,
                                                   store::RingStore& st, uint64_t store_key,
                                                   spdlog::logger& log) {
  if (c.listen.rfind("unix:", 0) != 0) return nullptr;
  const std::string socket = c.listen.substr(5), path = socket + ".flight";
  if (Status s = runtime::MakeSocketDirectory(socket); !s.ok()) {
    log.warn("{}: frames not yet committed are lost if the daemon is killed", s.message());
    return nullptr;
  }
  const Inventory& inv = collection.inventory();
  // Room for four store batches of this inventory.
  auto opened = FlightRecorder::Open(path, FlightRingBytes(inv.channels.size(), 4 * kBatchFrames));
  if (!opened.ok()) {
    log.warn("{}: frames not yet committed are lost if the daemon is killed",
             opened.status().message());
    return nullptr;
  }
  std::unique_ptr<FlightRecorder> flight = std::move(opened).value();
  if (!flight->InMemory()) {
    log.warn(
        "flight recorder: {} is not on tmpfs: every frame is written to the disk under it; "
        "give the socket a directory on tmpfs (/run, as the systemd unit does)",
        path);
  }
  flight->TieToStore(store_key);
  size_t other = 0;
  auto frames = flight->Recover(flight->RecordKey(inv), st.next_seq(), &other);
  if (!frames.empty()) {
    st.SetInventory(inv);
    for (auto& f : frames) st.Append(std::move(f));
    if (auto s = st.Flush(); !s.ok()) {
      log.error("flight recorder: replaying {} frames: {}", frames.size(), s.message());
    } else {
      log.warn("flight recorder: stored {} frames the previous run sampled but did not commit",
               frames.size());
    }
  }
  if (other > 0) {
    log.warn("flight recorder: dropped {} frames recorded under another inventory or store", other);
  }
  flight->Reset();
  // Records the store has committed need no memory (flight_recorder.h).
  flight->FollowCommits([&st] { return st.committed_next_seq(); });
  return flight;
}

int Run(const Flags& flags) {
  // Everything the daemon creates (the store, its lock, the socket before its
  // chmod to 0660) is private to its user unless it widens a mode itself.
  ::umask(0077);
  runtime::Config config;
  if (Status s = LoadConfig(flags, config); !s.ok()) {
    std::fprintf(stderr, "edgemond: %s\n", s.message().c_str());
    return kExitConfig;
  }
  auto log = runtime::MakeLogger("edgemond", config.log_level);

  // Signals are taken from a signalfd on this thread; block them before any
  // other thread starts so every thread inherits the mask.
  auto signal_fd = runtime::OpenSignalFd({SIGTERM, SIGINT, SIGHUP});
  if (!signal_fd.ok()) {
    log->critical("{}", signal_fd.status().message());
    return 1;
  }
  const int sfd = *signal_fd;

  // Ownership first, before anything is read, replayed or bound: the
  // socket path (with the flight recorder beside it), then the store, each
  // by the file's identity (owner_lock.h).
  runtime::OwnerLock socket_owner;
  if (config.listen.rfind("unix:", 0) == 0) {
    const std::string socket = config.listen.substr(5);
    Status s = runtime::MakeSocketDirectory(socket);
    if (s.ok()) s = socket_owner.Acquire(socket + ".lock", "the socket " + socket);
    if (!s.ok()) {
      log->critical("{}", s.message());
      return kExitConfig;
    }
  }
  runtime::OwnerLock owner;
  if (Status locked = owner.Acquire(config.db_path, "the store " + config.db_path); !locked.ok()) {
    log->critical("{}; one daemon per database", locked.message());
    return kExitConfig;
  }

  SystemClock clock;
  runtime::Notifier notifier;
  RootedSysFs fs(config.root);
  CollectOptions collect;
  collect.nvml = config.nvml == "on" || (config.nvml == "auto" && fs.root().empty());
  Collection collection(fs, MakeDefaultCollectors(collect), collect,
                        [log](const std::string& m) { log->warn("{}", m); });
  collection.Discover();
  collection.set_max_energy_gap_ns(3 * config.interval_ms * kNsPerMs);

  auto health = std::make_shared<StoreHealthLink>();
  store::RingStoreOptions store_options = StoreOptions(config, flags.recreate_bad_db, log, health);
  store_options.clock = &clock;
  auto opened = store::RingStore::Open(config.db_path, std::move(store_options));
  if (!opened.ok()) {
    if (opened.status().code() == edgemon::StatusCode::kDataLoss) {
      // One line: the path, what is wrong, and what to do (never done silently).
      log->critical("bad store: {}; {}", opened.status().message(),
                    flags.recreate_bad_db
                        ? "--recreate-bad-db never moves a store written by a newer edgemon"
                        : "start once with --recreate-bad-db to move it aside as " +
                              config.db_path + ".bad-<time> and begin a new store");
      return kExitBadStore;
    }
    log->critical("cannot open the store: {}", opened.status().message());
    return 1;
  }
  std::unique_ptr<store::RingStore> st = std::move(opened.value());
  if (!owner.Names(config.db_path)) {
    // --recreate-bad-db moved the file aside: the new file is the store now.
    if (Status locked = owner.Acquire(config.db_path, "the store " + config.db_path);
        !locked.ok()) {
      log->critical("{}", locked.message());
      (void)st->Close();
      return kExitConfig;
    }
  }
  std::unique_ptr<FlightRecorder> flight =
      OpenFlightRecorder(config, collection, *st, owner.Identity(), *log);
  // With the recorder keeping what is not committed yet, a crash costs no
  // frames whatever the interval: commit less often (flash writes).
  if (flight && config.commit_interval_ms == runtime::kCommitIntervalAuto) {
    st->SetCommitInterval(runtime::kCommitIntervalFlightMs);
  }
  if (auto counters = st->LastCounters(); counters.ok()) collection.SeedEnergy(*counters);

  SamplerOptions so;
  so.frame_period_ns = config.interval_ms * kNsPerMs;
  so.energy_period_ns = EnergyPeriodNs(config);
  so.topology_check_ns = config.topology_check_s * 1'000'000'000;
  so.first_seq = st->next_seq();
  so.on_clock_step = [log](int64_t boottime_ns, int64_t step_ns) {
    log->warn(
        "wall clock stepped by {} ms at boottime {} ns; stored time stays monotonic and "
        "retention follows boottime",
        step_ns / 1'000'000, boottime_ns);
  };
  Sampler sampler(collection, clock, so);
  // The one summary entry: the API, the live page and the push shippers
  // summarize a window or a range through it, with the same options.
  const summary::Summaries summaries(
      *st, {.sampler = &sampler,
            .energy_rate_hz = static_cast<uint32_t>(config.energy_rate_hz),
            .live_energy = &collection.live_energy()});
  // Stored time never goes back (ring_store.h, I11): live frames, windows
  // and leases continue the store's timeline, whatever the wall clock says.
  if (auto newest = st->Latest(); newest.ok() && !newest->frames.empty()) {
    sampler.SeedTimeline(newest->frames.back().realtime_ns, newest->frames.back().boottime_ns);
  }
  StoreSink store_sink(*st);
  PrintSink print_sink;
  service::WatchHub hub(static_cast<size_t>(config.max_streams));
  sampler.AddSink(&store_sink);
  // Rail samples at a boosted rate, kept beside the frames (never blocks).
  sampler.set_rail_sink([&st](store::RailChunk chunk) { st->AppendRailChunk(std::move(chunk)); });
  if (flight) sampler.AddSink(flight.get());
  sampler.AddSink(&hub);
  if (flags.print) sampler.AddSink(&print_sink);
  // Prometheus /metrics: scrapes read the latest frame from memory, never sysfs.
  // GPU memory per process (nvmap's debugfs table, NVML): for ListProcesses
  // and the top processes in /metrics, read on request.
  GpuProcessReader gpu_processes(fs, collect.nvml);
  auto made = MakeShippers(config, *st, summaries, fs, collection.inventory().board, clock, log);
  if (!made.ok()) {
    log->critical("{}", made.status().message());
    (void)st->Close();
    return kExitConfig;
  }
  std::vector<std::unique_ptr<push::Shipper>> shippers = std::move(made).value();
  std::function<std::vector<metrics::PushHealth>()> push_health;
  if (!shippers.empty()) {
    push_health = [&shippers] {
      std::vector<metrics::PushHealth> h;
      for (const auto& s : shippers) h.push_back(s->Health());
      return h;
    };
  }
  metrics::MetricsSource metrics_source(collection, &sampler, st.get(),
                                        {.version = EDGEMON_VERSION,
                                         .control_state_path = ControlStatePath(config),
                                         .gpu_processes = &gpu_processes,
                                         .push_health = push_health,
                                         .clock = &clock});
  if (!config.metrics_listen.empty()) sampler.AddSink(&metrics_source);
  sampler.set_on_frame([&](const Frame&) { notifier.Watchdog(clock.MonotonicNs()); });
  notifier.FitWatchdogTo(so.frame_period_ns);

  const BoardInfo& b = collection.inventory().board;
  log->info("monitoring {} ({}{}) under {}: {} channels, {} ms frames, energy {} Hz, store {}",
            b.model.empty() ? b.hostname : b.model, b.kernel, b.l4t.empty() ? "" : ", L4T " + b.l4t,
            config.root, collection.inventory().channels.size(), config.interval_ms,
            config.energy_rate_hz, config.db_path);

  // READY=1 only once the first frame is stored and the API listens.
  sampler.TickOnce();
  if (auto s = st->Flush(); !s.ok()) log->error("first frame not stored: {}", s.message());
  // The live page beside /metrics (daemon/web/live_site.h), fed by the hub; it outlives the
  // listener that serves it (declared first, destroyed last).
  web::LiveSite live_site(*st, {.latest =
                                    [&hub] {
                                      service::Snapshot s = hub.Latest();
                                      return web::Latest{s.inventory, s.generation, s.frame};
                                    },
                                .sampler = &sampler,
                                .summaries = &summaries});
  metrics::MetricsListener metrics_listener(
      [&metrics_source](metrics::Format f) { return metrics_source.Render(f); });
  if (!config.metrics_listen.empty()) {
    sampler.AddSink(&live_site);
    metrics_listener.AddRoutes(live_site.Routes());
    auto addr = runtime::ParseHostPort(config.metrics_listen);  // Validate() accepted it
    metrics::ListenerOptions mo;
    mo.host = addr->host;
    mo.port = addr->port;
    if (!config.metrics_token_file.empty()) {
      auto token = ReadTokenFile(config.metrics_token_file, 16);
      if (!token.ok()) {
        log->critical("key daemon.metrics_token_file: {}", token.status().message());
        (void)st->Close();
        return 2;
      }
      mo.bearer_token = std::move(token).value();
    }
    if (Status s = metrics_listener.Start(mo); !s.ok()) {
      log->critical("key daemon.metrics_listen: {}", s.message());
      (void)st->Close();
      return 1;
    }
    // The URL as a browser takes it: the host (a bare port binds 127.0.0.1),
    // an IPv6 address in brackets, then the port.
    const std::string url =
        "http://" +
        (addr->host.find(':') != std::string::npos ? "[" + addr->host + "]" : addr->host) + ":" +
        std::to_string(addr->port) + "/";
    if (addr->loopback) {
      log->info("metrics: {}metrics, live page: {}", url, url);
    } else {
      log->warn(
          "metrics: {}metrics is not a loopback address: anyone who can reach it can read this "
          "board's telemetry",
          url);
    }
  }
  service::ServiceOptions svc_opts;
  svc_opts.daemon_version = EDGEMON_VERSION;
  svc_opts.energy_rate_hz = static_cast<uint32_t>(config.energy_rate_hz);
  svc_opts.live_energy = &collection.live_energy();
  svc_opts.summaries = &summaries;
  svc_opts.gpu_processes = &gpu_processes;
  if (push_health) {
    svc_opts.push_status = [&push_health](google::protobuf::RepeatedPtrField<v1::PushStatus>* out) {
      for (const metrics::PushHealth& h : push_health()) {
        v1::PushStatus* p = out->Add();
        p->set_destination(h.destination);
        p->set_protocol(h.protocol);
        if (h.last_success_ns) p->set_last_success_ns(*h.last_success_ns);
        if (h.last_error_ns) p->set_last_error_ns(*h.last_error_ns);
        p->set_last_error(h.last_error);
        if (h.backlog_frames) p->set_backlog_frames(*h.backlog_frames);
        if (h.backlog_age_ns) p->set_backlog_age_ns(*h.backlog_age_ns);
        p->set_samples_sent(h.samples_sent);
        p->set_samples_retried(h.samples_retried);
        p->set_samples_failed(h.samples_failed);
        if (h.failing_since_ns) p->set_failing_since_ns(*h.failing_since_ns);
        p->set_stalled(h.stalled);
      }
    };
  }
  service::TelemetryService api(hub, *st, clock, &sampler, &fs, svc_opts);
  service::ApiServer server(api);
  service::ServerOptions server_opts;
  server_opts.warn = [log](const std::string& m) { log->warn("API: {}", m); };
  if (config.listen.rfind("unix:", 0) == 0) {
    server_opts.unix_path = config.listen.substr(5);
    server_opts.tcp_listen = config.tcp_listen;
  } else {
    server_opts.tcp_listen = config.listen;
  }
  server_opts.tls_cert = config.tls_cert;
  server_opts.tls_key = config.tls_key;
  if (!config.tcp_token_file.empty()) {
    auto token = ReadTokenFile(config.tcp_token_file, 16);
    if (!token.ok()) {
      log->critical("key daemon.tcp_token_file: {}", token.status().message());
      (void)st->Close();
      return 2;
    }
    server_opts.bearer_token = std::move(token).value();
  }
  if (Status s = server.Start(server_opts); !s.ok()) {
    log->critical("API: {}", s.message());
    (void)st->Close();
    return 1;
  }
  health->Attach(&server, !st->damaged());
  log->info("API listening on {}{}", config.listen,
            config.tcp_listen.empty() ? "" : " and " + config.tcp_listen);
  notifier.Ready(StatusLine(config, sampler, collection, *st));

  // The priority the sampler got, for the decision below.
  std::promise<runtime::SamplerPriority> sampler_priority;
  std::thread sampling([&] {
    // Above the daemon's own priority where allowed (daemon/runtime/thread_priority.h).
    const runtime::SamplerPriority got =
        runtime::RaiseSampler(runtime::kRequestThreadNiceSteps, config.realtime);
    sampler_priority.set_value(got);
    switch (got) {
      case runtime::SamplerPriority::kRealtime:
        log->info("sampler: real-time priority (SCHED_FIFO 1)");
        break;
      case runtime::SamplerPriority::kNice:
        log->info("sampler: {} nice levels above the daemon{}", runtime::kRequestThreadNiceSteps,
                  config.realtime ? " (daemon.realtime: real-time refused)" : "");
        break;
      case runtime::SamplerPriority::kUnchanged:
        log->info("sampler: at the daemon's priority ({})",
                  config.realtime ? "neither real-time nor a lower nice allowed"
                                  : "a lower nice not allowed");
        break;
    }
    sampler.Run();
  });
  runtime::NameThread(sampling, "sampler");
  for (auto& shipper : shippers) shipper->Start();
  // The sampler comes first. Real-time or lifted 10 nice levels, it runs
  // ahead of them anyway, and the request threads keep the daemon's
  // priority: lowered, one of them holding a lock the C library's allocator
  // shares with the sampler (its arenas' locks know no priority
  // inheritance) waited behind every busy process of the machine while the
  // sampler waited on it, and frames were lost under a flood of requests.
  // Only where the sampler could not be lifted at all does every thread that
  // serves a request (gRPC's, the HTTP listener's, the feed's, the workers')
  // and every thread they start later run below the sampler and the store's
  // writer.
  if (sampler_priority.get_future().get() == runtime::SamplerPriority::kUnchanged) {
    (void)runtime::LowerOtherThreads(runtime::kRequestThreadNiceSteps, {"sampler", "store-writer"});
  }
  for (const runtime::PushConfig& p : config.push) {
    log->info("push: {} to {} ({})",
              p.frames && p.windows ? "frames and windows"
              : p.frames            ? "frames"
                                    : "windows",
              runtime::ParseUrl(p.url)->display, p.protocol);
  }
  // Heap freed after a burst of queries or streams goes back to the kernel
  // on the next tick (daemon/heap_trim.h).
  runtime::HeapTrimmer heap_trimmer;
  // Two minutes in, start-up is long over: the pages of the program's file
  // that only start-up touched go back, once (daemon/heap_trim.h).
  const int64_t page_out_at_ns = clock.MonotonicNs() + 120'000 * kNsPerMs;
  bool paged_out = false;
  int exit_code = 0;
  for (;;) {
    pollfd p{sfd, POLLIN, 0};
    int n = ::poll(&p, 1, 10'000);
    if (n == 0) {
      if (auto t = heap_trimmer.Tick(); t.trimmed) {
        log->debug("memory: freed heap returned to the system (RSS {} -> {} KiB)", t.rss_before_kib,
                   t.rss_after_kib);
      }
      if (!paged_out && clock.MonotonicNs() >= page_out_at_ns) {
        paged_out = true;
        if (auto t = runtime::PageOutProgramText(); t.ok()) {
          log->info("memory: the program's start-up pages returned (RSS {} -> {} KiB)",
                    t->rss_before_kib, t->rss_after_kib);
        } else {
          log->debug("memory: start-up pages kept: {}", t.status().message());
        }
      }
      notifier.Status(StatusLine(config, sampler, collection, *st));
      if (push_health) {
        auto all = push_health();
        server.SetPushServing(std::none_of(all.begin(), all.end(),
                                           [](const metrics::PushHealth& h) { return h.stalled; }));
      }
      continue;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      log->critical("poll: {}", std::strerror(errno));
      exit_code = 1;
      break;
    }
    signalfd_siginfo si{};
    if (::read(sfd, &si, sizeof si) != sizeof si) continue;
    if (si.ssi_signo == SIGHUP) {
      notifier.Reloading(clock.MonotonicNs());
      runtime::Config next;
      if (Status s = LoadConfig(flags, next); !s.ok()) {
        log->error("reload: {}; keeping the running configuration", s.message());
      } else {
        notifier.FitWatchdogTo(next.interval_ms * kNsPerMs);
        sampler.Reconfigure(next.interval_ms * kNsPerMs, EnergyPeriodNs(next));
        collection.set_max_energy_gap_ns(3 * next.interval_ms * kNsPerMs);
        log->set_level(spdlog::level::from_str(next.log_level));
        if (next.root != config.root || next.db_path != config.db_path ||
            next.listen != config.listen || next.tcp_listen != config.tcp_listen ||
            next.tls_cert != config.tls_cert || next.tls_key != config.tls_key ||
            next.tcp_token_file != config.tcp_token_file ||
            next.metrics_listen != config.metrics_listen ||
            next.metrics_token_file != config.metrics_token_file ||
            next.max_streams != config.max_streams || next.max_db_bytes != config.max_db_bytes ||
            next.retention_s != config.retention_s || next.realtime != config.realtime) {
          log->warn(
              "reload: root, store, listen and realtime settings take effect at the next restart");
        }
        if (next.push != config.push) {
          log->warn("reload: [[push]] destinations take effect at the next restart");
        }
        config.interval_ms = next.interval_ms;
        config.energy_rate_hz = next.energy_rate_hz;
        config.log_level = next.log_level;
        log->info("reloaded: {} ms frames, energy {} Hz", next.interval_ms, next.energy_rate_hz);
      }
      notifier.Ready(StatusLine(config, sampler, collection, *st));
      continue;
    }
    log->info("{} received: stopping", strsignal(static_cast<int>(si.ssi_signo)));
    break;
  }
  notifier.Stopping();
  // Requests in flight end now (their batches stay in the store), while the
  // API shuts down: a receiver never holds the shutdown up.
  for (auto& shipper : shippers) shipper->RequestStop();
  health->Attach(nullptr, true);
  server.Shutdown();
  metrics_listener.Stop();
  sampler.Stop();
  sampling.join();
  for (auto& shipper : shippers) shipper->Stop();
  if (auto s = st->Close(); s.code() == edgemon::StatusCode::kDataLoss || st->damaged()) {
    log->error(
        "stopped after {} frames with a damaged store: {}; frames since the damage were not "
        "stored; restart with --recreate-bad-db to move the file aside",
        sampler.frames(), st->damage());
    exit_code = kExitBadStore;
  } else if (!s.ok()) {
    log->error("closing the store: {}", s.message());
    exit_code = 1;
  } else if (flight) {
    // Every frame is committed: nothing in the ring is left to replay.
    flight->Reset();
  }
  if (exit_code == 0) log->info("stopped after {} frames", sampler.frames());
  ::close(sfd);
  return exit_code;
}

}  // namespace
}  // namespace edgemon

int main(int argc, char** argv) {
  edgemon::runtime::TuneHeap();  // before any thread has an arena
  CLI::App app{"edgemond: the edgemon telemetry daemon"};
  edgemon::Flags flags;
  app.set_version_flag("--version", std::string("edgemond ") + EDGEMON_VERSION);
  app.add_option("--config", flags.config_path, "TOML config file (flags override it)");
  app.add_option("--root", flags.root,
                 "Root of the monitored system (prefixes /sys, /proc, /etc, /var/lib)");
  app.add_option("--db", flags.db, "SQLite store path");
  app.add_option("--interval-ms", flags.interval_ms, "Frame period in milliseconds");
  app.add_option("--energy-rate-hz", flags.energy_rate_hz,
                 "Rail sampling rate for energy integration (0: with frames only)");
  app.add_option("--listen", flags.listen, "API address: unix:/path or host:port");
  app.add_option("--metrics-listen", flags.metrics_listen,
                 "Serve Prometheus /metrics on host:port (a port alone: 127.0.0.1); off by "
                 "default");
  app.add_option("--push", flags.push,
                 "Push the history to a Prometheus remote-write URL (repeatable; [[push]] in the "
                 "config for more settings)");
  app.add_option("--log-level", flags.log_level, "trace, debug, info, warn or error");
  app.add_flag("--print", flags.print, "Also print one line per frame on stdout");
  app.add_flag("--recreate-bad-db", flags.recreate_bad_db,
               "Rename a corrupt or foreign store aside and start a new one");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : edgemon::kExitConfig;
  }
  return edgemon::Run(flags);
}
