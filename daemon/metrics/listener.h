// MetricsListener: edgemond's HTTP endpoint, on cpp-httplib: /metrics for
// Prometheus, and the routes other parts mount beside it (the live page,
// daemon/web/live_site.h).
//
//   GET|HEAD /metrics  the exposition (OpenMetrics when the Accept header asks
//                      for application/openmetrics-text, else text 0.0.4)
//   other methods on /metrics  405 with "Allow: GET, HEAD"
//   mounted routes     as their owner serves them
//   any other path     404
//
// Token: with a `bearer_token`, every request on every route must carry it,
// as "Authorization: Bearer TOKEN" (Prometheus' authorization setting) or as
// the password of "Authorization: Basic" (any user name: what a browser
// sends after asking); others get 401 and WWW-Authenticate, and no handler
// runs. The comparison takes the same time wherever the tokens differ.
//
// Bounds: up to `threads` workers serve connections, started as connections
// need them (a keep-alive connection holds its worker until it goes idle for
// `keep_alive_s`); at most `max_queued` accepted connections wait for a
// worker, after which the accept thread stops accepting (new connections
// wait in the kernel's backlog); a worker idle for `idle_worker_ms` exits, so
// a burst of connections leaves no threads behind. Every read and write has a timeout
// (`timeout_ms`), and each request must arrive whole within
// `request_timeout_ms` of the connection becoming readable, so a silent
// client or one trickling bytes (slowloris) frees its worker within that
// time; with many workers a handful of such clients cannot starve scrapes.
// Request lines and header lines
// are capped by cpp-httplib (8 KiB each); more than `max_headers` headers is
// refused (431). Bodies: cpp-httplib reads one only for the methods that
// carry one (POST, PUT, ...: at most 1 KiB, then answered 405); a GET or
// HEAD whose head announces a body (Content-Length, Transfer-Encoding) gets
// 413 and the connection ends after the reply (what follows is drained,
// never parsed as the next request). A query parameter given twice is a 400
// naming it.

//
// A scrape calls `render` on a worker thread; the render function must not
// block on the sampler (MetricsSource copies under a pointer-swap lock).
//
// Thread safety: Start and Stop from one thread; counters from any.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon/metrics/exposition.h"
#include "edgemon/status.h"

namespace httplib {
class Server;
}

namespace edgemon::metrics {

struct ListenerOptions {
  std::string host = "127.0.0.1";  // an IP literal or localhost, without brackets
  int port = 0;                    // 0: any free port (see port())
  size_t threads = 64;             // at most; started on demand
  size_t max_queued = 16;
  int timeout_ms = 2000;          // each read or write
  int request_timeout_ms = 3000;  // a whole request, from its first byte
  int keep_alive_s = 2;
  size_t keep_alive_max_requests = 100;
  size_t max_headers = 64;
  int idle_worker_ms = 30'000;    // a worker idle this long exits (a burst's threads go)
  std::string bearer_token = "";  // "" = no token asked
};

// Routes of another part of the daemon, served beside /metrics under the same
// address, bounds and token.
struct Routes {
  // Registers handlers on the server (called once, in Start).
  std::function<void(httplib::Server&)> mount;
  // Called first in Stop(), before the workers are joined: ends long
  // responses (streams) at once.
  std::function<void()> stop;
};

class MetricsListener {
 public:
  using RenderFn = std::function<std::string(Format)>;

  explicit MetricsListener(RenderFn render);
  ~MetricsListener();  // Stop()
  MetricsListener(const MetricsListener&) = delete;
  MetricsListener& operator=(const MetricsListener&) = delete;

  // Adds routes to serve (before Start).
  void AddRoutes(Routes routes);

  // Binds and starts serving on a thread of its own. OK, else UNAVAILABLE in
  // one line saying why (address in use, not available, ...).
  Status Start(const ListenerOptions& options);
  // Stops accepting, finishes the requests in progress, joins. Idempotent.
  void Stop();

  // Called by a handler on its worker: the response it sets is a stream
  // (server-sent events), so its writes are bounded by the write timeout
  // alone, not by request_timeout_ms. No effect off a worker.
  static void StreamResponse();

  int port() const { return port_; }
  uint64_t scrapes() const { return scrapes_.load(); }
  uint64_t refused() const { return refused_.load(); }  // 401, 404, 405, 413, 431

  class Pool;
  struct PoolState;
  class Server;

 private:
  RenderFn render_;
  std::vector<Routes> routes_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<PoolState> state_;  // shared with the pool (owned by server_)
  std::thread thread_;
  int port_ = 0;
  std::atomic<uint64_t> scrapes_{0};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace edgemon::metrics
