#include "daemon/web/live_site.h"

#include <httplib.h>

#include <chrono>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "daemon/summary/summarize.h"
#include "daemon/web/live_html.h"
#include "daemon/web/live_js.h"
#include "daemon/web/live_json.h"
#include "edgemon/clock.h"
#include "edgemon/model.h"
#include "edgemon/timespec.h"

namespace edgemon::web {

using nlohmann::json;

namespace {

// The page may talk to its own origin only, and run no inline script.
constexpr const char* kPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

// A compiled-in asset (cpp-httplib compresses it for a client that accepts
// gzip or brotli, where it was built with them, as Debian's is).
httplib::Server::Handler Asset(const unsigned char* bytes, size_t size, const char* type) {
  return [=](const httplib::Request&, httplib::Response& res) {
    res.set_content(reinterpret_cast<const char*>(bytes), size, type);
    res.set_header("Cache-Control", "no-cache");
    res.set_header("Content-Security-Policy", kPolicy);
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Referrer-Policy", "no-referrer");
  };
}

std::string Encode(const json& body) {
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

void ReplyText(httplib::Response& res, int status, std::string body) {
  res.status = status;
  res.body = std::move(body);
  res.set_header("Content-Type", "application/json");
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Content-Type-Options", "nosniff");
}

void Reply(httplib::Response& res, int status, const json& body) {
  ReplyText(res, status, Encode(body));
}

void Fail(httplib::Response& res, int status, const std::string& message) {
  Reply(res, status, {{"error", message}});
}

ParamFn Params(const httplib::Request& req) {
  return [&req](const std::string& name) -> std::optional<std::string> {
    if (!req.has_param(name.c_str())) return std::nullopt;
    return req.get_param_value(name.c_str());
  };
}

// One live stream's progress (one worker writes it).
struct Stream {
  bool started = false;
  uint64_t seen = 0;  // LiveSite::published_ when last woken
  bool hello_sent = false;
  uint64_t generation = 0;
  uint64_t last_seq = 0;
  bool frame_sent = false;
};

}  // namespace

class LiveSite::Handlers {
 public:
  explicit Handlers(LiveSite& site) : s_(site) {}

  void Live(const httplib::Request&, httplib::Response& res) {
    {
      std::lock_guard lk(s_.mu_);
      if (s_.stopping_) return Fail(res, 503, "edgemond is stopping");
    }
    if (s_.streams_.fetch_add(1) >= s_.options_.max_streams) {
      s_.streams_.fetch_sub(1);
      s_.refused_.fetch_add(1);
      return Fail(res, 503,
                  "too many live streams (limit " + std::to_string(s_.options_.max_streams) +
                      "); close a page and retry");
    }
    metrics::MetricsListener::StreamResponse();
    res.set_header("Cache-Control", "no-store");
    res.set_header("X-Content-Type-Options", "nosniff");
    auto stream = std::make_shared<Stream>();
    LiveSite* site = &s_;
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, stream](size_t, httplib::DataSink& sink) { return Next(*stream, sink); },
        [site](bool) { site->streams_.fetch_sub(1); });
  }

  void History(const httplib::Request& req, httplib::Response& res) {
    Latest latest = s_.options_.latest();
    if (!latest.inventory) return Fail(res, 503, "no frame sampled yet");
    const int64_t now = s_.Now();
    auto h = ParseHistory(Params(req), now, s_.PeriodNs(), *latest.inventory);
    if (!h.ok()) return Fail(res, 400, h.status().message());
    ReadTurn turn(s_);
    if (!turn.ok()) return Busy(res);
    const auto deadline = ReadDeadline();
    store::RingStore& store = s_.store_;
    auto stored = store.Channels();
    if (!stored.ok()) return Fail(res, 500, "history: " + stored.status().message());
    std::set<std::string> known;
    for (const auto& sc : *stored) known.insert(sc.key);
    // Encoded one series at a time: the answer's text and one series are
    // all it holds.
    std::string series;
    for (const auto& key : h->keys) {
      if (!known.count(key)) continue;  // discovered moments ago, not stored yet
      if (std::chrono::steady_clock::now() > deadline) return OverBudget(res, "history");
      // The frames still queued for the batched writer from its memory: a
      // page refreshing its history makes the store write nothing.
      auto buckets = store.DownsampleWithQueued(key, h->range.from_ns, h->range.to_ns, h->step_ns);
      if (!buckets.ok())
        return Fail(res, 500, "history " + key + ": " + buckets.status().message());
      json t = json::array(), lo = json::array(), avg = json::array(), hi = json::array();
      for (const auto& b : *buckets) {
        t.push_back(b.t_ns / kNsPerMillisecond);
        lo.push_back(b.min);
        avg.push_back(b.avg);
        hi.push_back(b.max);
      }
      buckets->clear();
      buckets->shrink_to_fit();
      series += series.empty() ? "" : ",";
      series += Encode({{"key", key}, {"t", t}, {"min", lo}, {"avg", avg}, {"max", hi}});
    }
    constexpr size_t kMaxWindows = 500;
    auto windows = store.ListWindows(h->range.from_ns, h->range.to_ns, kMaxWindows + 1);
    if (!windows.ok()) return Fail(res, 500, "history: windows: " + windows.status().message());
    json ws = json::array();
    for (size_t i = 0; i < windows->size() && i < kMaxWindows; ++i) {
      ws.push_back(WindowJson((*windows)[i]));
    }
    json head = {{"from", h->range.from_ns / kNsPerMillisecond},
                 {"to", h->range.to_ns / kNsPerMillisecond},
                 {"now", now / kNsPerMillisecond},
                 {"step", h->step_ns / kNsPerMillisecond},
                 {"windows", std::move(ws)},
                 {"truncated_windows", windows->size() > kMaxWindows}};
    // The head's object, its closing brace replaced by the series.
    std::string body = Encode(head);
    body.pop_back();
    body += ",\"series\":[" + series + "]}";
    series.clear();
    series.shrink_to_fit();
    ReplyText(res, 200, std::move(body));
  }

  void Energy(const httplib::Request& req, httplib::Response& res) {
    const int64_t now = s_.Now();
    std::optional<int64_t> window_id;
    int64_t from = 0, to = 0;
    if (req.has_param("window")) {
      const std::string text = req.get_param_value("window");
      int64_t id = 0;
      size_t used = 0;
      try {
        id = std::stoll(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != text.size() || id <= 0) {
        return Fail(res, 400, "window: a window id (a positive number), got \"" + text + "\"");
      }
      auto w = s_.store_.GetWindow(id);
      if (!w.ok()) return Fail(res, 500, "energy: " + w.status().message());
      if (!*w) return Fail(res, 404, "no window " + std::to_string(id));
      window_id = id;
      std::tie(from, to) = summary::Summaries::WindowRange(**w, now);
    } else {
      auto r = ParseRange(Params(req), now);
      if (!r.ok()) return Fail(res, 400, r.status().message());
      from = r->from_ns;
      to = r->to_ns;
    }
    if (from > now) return Fail(res, 400, "the range starts after now");
    ReadTurn turn(s_);
    if (!turn.ok()) return Busy(res);
    const auto deadline = ReadDeadline();
    auto run = s_.summaries_->Start(from, to, now);
    if (!run.ok()) return Fail(res, 500, "energy: " + run.status().message());
    while (!run->done()) {
      if (std::chrono::steady_clock::now() > deadline) return OverBudget(res, "energy");
      if (Status page = run->ReadPage(); !page.ok()) {
        return Fail(res, 500, "energy: " + page.message());
      }
    }
    Reply(res, 200, EnergyJson(run->summary(), window_id));
  }

 private:
  // A turn to read the store (LiveSite's budget): waits up to wait_ms
  // behind the reads running; none when max_waiting already wait.
  class ReadTurn {
   public:
    explicit ReadTurn(LiveSite& s) : s_(s) {
      std::unique_lock lk(s_.mu_);
      if (s_.reads_running_ >= s_.options_.max_reads) {
        if (s_.reads_waiting_ >= s_.options_.max_waiting) return;
        ++s_.reads_waiting_;
        s_.read_turn_.wait_for(lk, std::chrono::milliseconds(s_.options_.wait_ms), [&] {
          return s_.stopping_ || s_.reads_running_ < s_.options_.max_reads;
        });
        --s_.reads_waiting_;
        if (s_.stopping_ || s_.reads_running_ >= s_.options_.max_reads) return;
      }
      ++s_.reads_running_;
      ok_ = true;
    }
    ~ReadTurn() {
      if (!ok_) return;
      {
        std::lock_guard lk(s_.mu_);
        --s_.reads_running_;
      }
      s_.read_turn_.notify_one();
    }
    ReadTurn(const ReadTurn&) = delete;
    ReadTurn& operator=(const ReadTurn&) = delete;
    bool ok() const { return ok_; }

   private:
    LiveSite& s_;
    bool ok_ = false;
  };

  std::chrono::steady_clock::time_point ReadDeadline() const {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(s_.options_.read_budget_ms);
  }

  void Busy(httplib::Response& res) {
    s_.reads_refused_.fetch_add(1);
    res.set_header("Retry-After", "1");
    Fail(res, 503,
         "busy: " + std::to_string(s_.options_.max_reads) + " history or energy reads run and " +
             std::to_string(s_.options_.max_waiting) + " wait (the limit); retry");
  }

  void OverBudget(httplib::Response& res, const char* what) {
    s_.reads_refused_.fetch_add(1);
    res.set_header("Retry-After", "1");
    Fail(res, 503,
         std::string(what) + ": stopped after " + std::to_string(s_.options_.read_budget_ms) +
             " ms (each read's budget); ask a shorter range or fewer channels");
  }

  // One step of a live stream: waits for the next frame (or the keep-alive
  // time, or Stop) and writes it. False ends the stream (the page left).
  bool Next(Stream& st, httplib::DataSink& sink) {
    std::unique_lock lk(s_.mu_);
    if (!st.started) {
      st.started = true;
      st.seen = s_.published_;
      lk.unlock();
      const std::string retry = "retry: 3000\n\n";
      return sink.write(retry.data(), retry.size()) && Write(st, sink);
    }
    const bool woken = s_.cv_.wait_for(lk, std::chrono::milliseconds(s_.options_.keep_alive_ms),
                                       [&] { return s_.stopping_ || s_.published_ != st.seen; });
    if (s_.stopping_) {
      lk.unlock();
      sink.done();
      return true;
    }
    if (!woken) {
      lk.unlock();
      const std::string ping = ": keep-alive\n\n";
      return sink.write(ping.data(), ping.size());
    }
    st.seen = s_.published_;
    lk.unlock();
    return Write(st, sink);
  }

  // The newest frame, after a hello when the inventory is new to the stream.
  bool Write(Stream& st, httplib::DataSink& sink) {
    Latest latest = s_.options_.latest();
    if (!latest.inventory || !latest.frame) return true;
    std::string out;
    if (!st.hello_sent || latest.generation != st.generation) {
      out += SseEvent(
          "hello", HelloJson(*latest.inventory, *latest.frame, latest.generation, s_.PeriodNs()));
      st.hello_sent = true;
      st.generation = latest.generation;
      st.frame_sent = false;
    }
    if (!st.frame_sent || latest.frame->seq != st.last_seq) {
      out += SseEvent("frame", FrameJson(*latest.frame));
      st.frame_sent = true;
      st.last_seq = latest.frame->seq;
      s_.frames_sent_.fetch_add(1);
    }
    return out.empty() || sink.write(out.data(), out.size());
  }

  LiveSite& s_;
};

LiveSite::LiveSite(store::RingStore& store, Options options)
    : store_(store), options_(std::move(options)) {
  summaries_ = options_.summaries;
  if (summaries_ == nullptr) {
    own_summaries_ = std::make_unique<summary::Summaries>(
        store_, summary::Summaries::Options{options_.sampler, options_.default_period_ns});
    summaries_ = own_summaries_.get();
  }
}

LiveSite::~LiveSite() {
  Stop();
}

void LiveSite::OnFrame(const Inventory&, uint64_t, const Frame&) {
  // Nobody watching: nothing to do, not even a lock.
  if (streams_.load(std::memory_order_relaxed) == 0) return;
  {
    std::lock_guard lk(mu_);
    ++published_;
  }
  cv_.notify_all();
}

void LiveSite::Stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  read_turn_.notify_all();
}

int64_t LiveSite::Now() const {
  return options_.sampler ? options_.sampler->TimelineNs() : SystemClock().RealtimeNs();
}

int64_t LiveSite::PeriodNs() const {
  return summaries_->frame_period_ns();  // the sampler's, or default_period_ns without one
}

metrics::Routes LiveSite::Routes() {
  auto handlers = std::make_shared<Handlers>(*this);
  metrics::Routes r;
  r.mount = [handlers](httplib::Server& server) {
    server.Get("/", Asset(asset::kLiveHtml, asset::kLiveHtmlSize, "text/html; charset=utf-8"));
    server.Get("/live.js",
               Asset(asset::kLiveJs, asset::kLiveJsSize, "text/javascript; charset=utf-8"));
    server.Get("/api/live", [handlers](const httplib::Request& req, httplib::Response& res) {
      handlers->Live(req, res);
    });
    server.Get("/api/history", [handlers](const httplib::Request& req, httplib::Response& res) {
      handlers->History(req, res);
    });
    server.Get("/api/energy", [handlers](const httplib::Request& req, httplib::Response& res) {
      handlers->Energy(req, res);
    });
  };
  r.stop = [this] { Stop(); };
  return r;
}

}  // namespace edgemon::web
