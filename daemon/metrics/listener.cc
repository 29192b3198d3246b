#include "listener.h"

#include <httplib.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

namespace edgemon::metrics {

// Shared by the listener (which may stop it) and the pool (owned by
// httplib::Server for the duration of listen_after_bind).
struct MetricsListener::PoolState {
  std::mutex mu;
  std::condition_variable work;
  std::condition_variable space;
  std::deque<std::function<void()>> jobs;  // guarded by mu
  bool stopping = false;                   // guarded by mu: let enqueue through
  bool shutdown = false;                   // guarded by mu: workers drain and exit
};

// A fixed set of workers and a bounded queue. enqueue() runs on httplib's
// accept thread: when the queue is full it waits for space, so the accept
// loop stops accepting (back-pressure) rather than queueing without bound.
// Jobs own an accepted socket and must run to close it, so none is dropped.
class MetricsListener::Pool final : public httplib::TaskQueue {
 public:
  Pool(size_t threads, size_t max_queued, std::shared_ptr<PoolState> state)
      : max_queued_(max_queued), state_(std::move(state)) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~Pool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock lk(state_->mu);
    state_->space.wait(lk, [&] {
      return state_->jobs.size() < max_queued_ || state_->stopping || state_->shutdown;
    });
    state_->jobs.push_back(std::move(fn));
    state_->work.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard lk(state_->mu);
      state_->shutdown = true;
    }
    state_->work.notify_all();
    state_->space.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lk(state_->mu);
        state_->work.wait(lk, [&] { return !state_->jobs.empty() || state_->shutdown; });
        if (state_->jobs.empty()) return;  // shut down and drained
        fn = std::move(state_->jobs.front());
        state_->jobs.pop_front();
      }
      state_->space.notify_one();
      fn();
    }
  }

  const size_t max_queued_;
  std::shared_ptr<PoolState> state_;
  std::vector<std::thread> threads_;
};

MetricsListener::MetricsListener(RenderFn render) : render_(std::move(render)) {}

MetricsListener::~MetricsListener() {
  Stop();
}

std::string MetricsListener::Start(const ListenerOptions& o) {
  if (server_) return "already started";
  auto server = std::make_unique<httplib::Server>();
  auto state = std::make_shared<PoolState>();
  state_ = state;
  size_t threads = o.threads > 0 ? o.threads : 1;
  size_t queued = o.max_queued > 0 ? o.max_queued : 1;
  server->new_task_queue = [threads, queued, state] { return new Pool(threads, queued, state); };
  time_t sec = o.timeout_ms / 1000;
  time_t usec = static_cast<time_t>(o.timeout_ms % 1000) * 1000;
  server->set_read_timeout(sec, usec);
  server->set_write_timeout(sec, usec);
  server->set_keep_alive_timeout(o.keep_alive_s);
  server->set_keep_alive_max_count(o.keep_alive_max_requests);
  server->set_payload_max_length(1024);
  server->set_tcp_nodelay(true);
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which would
  // let a second daemon bind the same port silently and steal scrapes.
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });

  const size_t max_headers = o.max_headers;
  server->set_pre_routing_handler(
      [max_headers](const httplib::Request& req, httplib::Response& res) {
        if (req.headers.size() > max_headers) {
          res.status = 431;
          res.set_content("too many header fields\n", "text/plain");
          return httplib::Server::HandlerResponse::Handled;
        }
        if (!req.body.empty()) {
          res.status = 413;
          res.set_content("a scrape has no body\n", "text/plain");
          return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
      });
  server->Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    Format f = NegotiateFormat(req.get_header_value("Accept"));
    res.body = render_(f);
    res.set_header("Content-Type", std::string(ContentType(f)));
    scrapes_.fetch_add(1);
  });
  auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content("method not allowed: /metrics answers GET and HEAD\n", "text/plain");
  };
  server->Post("/metrics", not_allowed);
  server->Put("/metrics", not_allowed);
  server->Patch("/metrics", not_allowed);
  server->Delete("/metrics", not_allowed);
  server->Options("/metrics", not_allowed);
  server->set_error_handler([this](const httplib::Request&, httplib::Response& res) {
    refused_.fetch_add(1);
    if (res.body.empty()) {
      res.set_content(res.status == 404 ? "not found: only /metrics is served here\n"
                                        : "error " + std::to_string(res.status) + "\n",
                      "text/plain");
    }
  });

  errno = 0;
  int port = o.port;
  if (port == 0) {
    port = server->bind_to_any_port(o.host);
    if (port < 0) port = 0;
  } else if (!server->bind_to_port(o.host, port)) {
    port = 0;
  }
  if (port == 0) {
    int e = errno;
    std::string host = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
    return "cannot listen on " + host + ":" + std::to_string(o.port) +
           (e != 0 ? std::string(": ") + std::strerror(e) : std::string());
  }
  port_ = port;
  server_ = std::move(server);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // Stop() only works once the loop runs; wait for it (microseconds).
  for (int i = 0; i < 5000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return {};
}

void MetricsListener::Stop() {
  if (!server_) return;
  {
    std::lock_guard lk(state_->mu);
    state_->stopping = true;
  }
  state_->space.notify_all();
  server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace edgemon::metrics
