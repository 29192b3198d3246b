#include "daemon/metrics/listener.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <iterator>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/runtime/thread_name.h"
#include "edgemon/secret_file.h"
#include "edgemon/text.h"

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

// Up to `max_threads` workers, started as connections need them, and a
// bounded queue. enqueue() runs on httplib's accept thread: a connection goes
// to an idle worker, else to a new one while fewer than `max_threads` run,
// else it waits in the queue; when the queue is full enqueue() waits for
// space, so the accept loop stops accepting (back-pressure) rather than
// queueing without bound. Jobs own an accepted socket and must run to close
// it, so none is dropped.
class MetricsListener::Pool final : public httplib::TaskQueue {
 public:
  Pool(size_t max_threads, size_t max_queued, std::chrono::milliseconds idle_life,
       std::shared_ptr<PoolState> state)
      : max_threads_(max_threads),
        max_queued_(max_queued),
        idle_life_(idle_life),
        state_(std::move(state)) {}
  ~Pool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock lk(state_->mu);
    state_->space.wait(lk, [&] {
      return state_->jobs.size() < max_queued_ || state_->stopping || state_->shutdown;
    });
    state_->jobs.push_back(std::move(fn));
    if (idle_ < state_->jobs.size() && threads_.size() < max_threads_) {
      ++idle_;  // counted idle until it takes a job
      // The copy of the state keeps its mutex alive until a worker that
      // retired itself (detached) has returned.
      threads_.emplace_back([this, keep = state_] { Work(); });
      runtime::NameThread(threads_.back(), "metrics-worker");
    }
    state_->work.notify_one();
  }

  void shutdown() override {
    std::vector<std::thread> threads;
    {
      std::lock_guard lk(state_->mu);
      state_->shutdown = true;
      threads.swap(threads_);
    }
    state_->work.notify_all();
    state_->space.notify_all();
    for (auto& t : threads) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lk(state_->mu);
        const bool woken = state_->work.wait_for(
            lk, idle_life_, [&] { return !state_->jobs.empty() || state_->shutdown; });
        if (!woken) {
          // Idle this long after a burst (50 slow connections start 50
          // workers): retire, so that their stacks and buffers go back.
          RetireLocked();
          return;
        }
        if (state_->jobs.empty()) return;  // shut down and drained
        fn = std::move(state_->jobs.front());
        state_->jobs.pop_front();
        --idle_;
      }
      state_->space.notify_one();
      fn();
      std::lock_guard lk(state_->mu);
      ++idle_;
    }
  }

  // Removes the calling worker from threads_ (detached: it returns at once
  // and touches the pool no more). Under state_->mu.
  void RetireLocked() {
    --idle_;
    const auto self = std::this_thread::get_id();
    for (auto it = threads_.begin(); it != threads_.end(); ++it) {
      if (it->get_id() == self) {
        it->detach();
        threads_.erase(it);
        return;
      }
    }
  }

  const size_t max_threads_;
  const size_t max_queued_;
  const std::chrono::milliseconds idle_life_;
  std::shared_ptr<PoolState> state_;
  std::vector<std::thread> threads_;  // guarded by state_->mu
  size_t idle_ = 0;                   // guarded by state_->mu
};

namespace {

// A connection's socket as httplib reads it, with a deadline for the whole
// request on top of the per-operation timeout: a client that trickles one
// byte at a time (slowloris) loses its worker when the request's time is up,
// not after kilobytes of bytes each arriving just inside the timeout.
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(int fd, int op_timeout_ms) : fd_(fd), op_timeout_ms_(op_timeout_ms) {}

  // A deadline that never comes (a stream's writes have the operation timeout alone).
  static constexpr std::chrono::steady_clock::time_point kNoDeadline =
      std::chrono::steady_clock::time_point::max();

  void set_deadline(std::chrono::steady_clock::time_point d) { deadline_ = d; }

  bool is_readable() const override { return pos_ < len_ || Wait(POLLIN); }
  bool is_writable() const override { return Wait(POLLOUT); }

  // True once a read found nothing within its time: the connection is done.
  bool read_timed_out() const { return read_timed_out_; }
  // A request was refused for what it carried (a body on a GET): the
  // connection ends after the reply, and what the client sent after the
  // request's head is read and dropped, never served as a request.
  void refuse_rest() { refuse_rest_ = true; }
  bool rest_refused() const { return refuse_rest_; }
  // Bytes of a pipelined next request already read from the socket.
  bool buffered() const { return pos_ < len_; }
  // httplib reads request lines a byte at a time: serve those from a buffer
  // filled by one recv.
  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == len_) {
      if (!is_readable()) {
        read_timed_out_ = true;
        return -1;
      }
      ssize_t n;
      do {
        n = ::recv(fd_, buf_, sizeof buf_, 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      pos_ = 0;
      len_ = static_cast<size_t>(n);
    }
    size_t n = std::min(size, len_ - pos_);
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) Describe(ss, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) Describe(ss, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  bool Wait(short events) const {
    int64_t left = op_timeout_ms_;
    if (deadline_ != kNoDeadline) {
      left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ -
                                                                   std::chrono::steady_clock::now())
                 .count();
    }
    int timeout = static_cast<int>(std::min<int64_t>(left, op_timeout_ms_));
    if (timeout <= 0) return false;
    pollfd p{fd_, events, 0};
    int n;
    do {
      n = ::poll(&p, 1, timeout);
    } while (n < 0 && errno == EINTR);
    return n > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }

  static void Describe(const sockaddr_storage& ss, std::string& ip, int& port) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (ss.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
      ::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
      port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
      ::inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
      port = ntohs(a->sin6_port);
    }
    ip = buf;
  }

  int fd_;
  int op_timeout_ms_;
  std::chrono::steady_clock::time_point deadline_{};
  bool read_timed_out_ = false;
  bool refuse_rest_ = false;
  char buf_[4096];
  size_t pos_ = 0, len_ = 0;
};

// The connection the calling worker serves (StreamResponse).
thread_local DeadlineStream* current_stream = nullptr;

// The bytes of standard base64 `in` (padding optional); nullopt if malformed.
std::optional<std::string> DecodeBase64(std::string_view in) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : in) {
    int v;
    if (ch >= 'A' && ch <= 'Z') {
      v = ch - 'A';
    } else if (ch >= 'a' && ch <= 'z') {
      v = ch - 'a' + 26;
    } else if (ch >= '0' && ch <= '9') {
      v = ch - '0' + 52;
    } else if (ch == '+') {
      v = 62;
    } else if (ch == '/') {
      v = 63;
    } else {
      return std::nullopt;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// Whether an Authorization header carries `token`: "Bearer TOKEN", or
// "Basic base64(user:TOKEN)" with any user.
bool Authorized(std::string_view header, const std::string& token) {
  auto scheme = [&](std::string_view name) {
    if (header.size() <= name.size() || header[name.size()] != ' ') return false;
    for (size_t i = 0; i < name.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(header[i])) != name[i]) return false;
    }
    header.remove_prefix(name.size() + 1);
    while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
    return true;
  };
  if (scheme("bearer")) return SecretEqual(header, token);
  if (scheme("basic")) {
    auto plain = DecodeBase64(header);
    if (!plain) return false;
    const size_t colon = plain->find(':');
    return colon != std::string::npos &&
           SecretEqual(std::string_view(*plain).substr(colon + 1), token);
  }
  return false;
}

// Whether httplib reads a body for `method` (its expect_content): others'
// bodies are left on the connection.
bool MethodHasBody(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE" ||
         method == "PRI";
}

// Whether the request's head announces a body: a Content-Length other than
// 0, or any Transfer-Encoding.
bool DeclaresBody(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return true;
  for (auto [it, end] = req.headers.equal_range("Content-Length"); it != end; ++it) {
    if (text::Trim(it->second) != "0") return true;
  }
  return false;
}

// The names of query parameters given more than once, comma-separated
// (escaped for the reply); empty when none is.
std::string RepeatedParams(const httplib::Request& req) {
  std::string out;
  for (auto it = req.params.begin(); it != req.params.end();) {
    auto next = req.params.upper_bound(it->first);
    if (std::distance(it, next) > 1) {
      if (!out.empty()) out += ", ";
      out += TerminalSafe(it->first.substr(0, 64));
    }
    it = next;
  }
  return out;
}

}  // namespace

void MetricsListener::StreamResponse() {
  if (current_stream != nullptr) current_stream->set_deadline(DeadlineStream::kNoDeadline);
}

// httplib's server with its connection loop replaced: the same keep-alive
// rules, each request bounded by `request_ms` from its first byte.
class MetricsListener::Server final : public httplib::Server {
 public:
  Server(int op_timeout_ms, int request_ms, int keep_alive_s, size_t keep_alive_max)
      : op_timeout_ms_(op_timeout_ms),
        request_ms_(request_ms),
        keep_alive_ms_(keep_alive_s * 1000),
        keep_alive_max_(keep_alive_max) {}

 private:
  bool process_and_close_socket(socket_t sock) override {
    DeadlineStream strm(sock, op_timeout_ms_);
    current_stream = &strm;
    bool ok = true;
    // The first request must start within one operation's timeout; later
    // ones on a kept-alive connection within the keep-alive time.
    int wait_ms = op_timeout_ms_;
    for (size_t left = keep_alive_max_;
         left > 0 && (strm.buffered() || WaitForRequest(sock, wait_ms)); --left) {
      wait_ms = keep_alive_ms_;
      strm.set_deadline(std::chrono::steady_clock::now() + std::chrono::milliseconds(request_ms_));
      bool closed = false;
      ok = process_request(strm, left == 1, closed, [](httplib::Request&) {});
      if (!ok || closed || strm.read_timed_out() || strm.rest_refused()) break;
    }
    current_stream = nullptr;
    if (strm.rest_refused()) DrainAfterReply(sock);
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
  }

  // A lingering close: the reply is sent, the write side shut, and what the
  // client still sends (a refused body) is read and dropped for a moment, so
  // that the close does not reset the connection before the client has read
  // the reply.
  void DrainAfterReply(int sock) const {
    ::shutdown(sock, SHUT_WR);
    char sink[4096];
    size_t drained = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kDrainMs);
    while (drained < kMaxDrainBytes) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            until - std::chrono::steady_clock::now())
                            .count();
      pollfd p{sock, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return;
      const ssize_t n = ::recv(sock, sink, sizeof sink, 0);
      if (n <= 0) return;
      drained += static_cast<size_t>(n);
    }
  }

  // Waits for the next request on a kept-alive connection, in short steps so
  // a stopping server does not wait out the idle time.
  bool WaitForRequest(int sock, int limit_ms) const {
    for (int waited = 0; waited < limit_ms && svr_sock_ != INVALID_SOCKET; waited += kStepMs) {
      pollfd p{sock, POLLIN, 0};
      int n = ::poll(&p, 1, std::min(kStepMs, limit_ms - waited));
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return false;
    }
    return false;
  }

  static constexpr int kStepMs = 100;
  static constexpr int kDrainMs = 500;
  static constexpr size_t kMaxDrainBytes = 1 << 20;
  const int op_timeout_ms_;
  const int request_ms_;
  const int keep_alive_ms_;
  const size_t keep_alive_max_;
};

MetricsListener::MetricsListener(RenderFn render) : render_(std::move(render)) {}

MetricsListener::~MetricsListener() {
  Stop();
}

void MetricsListener::AddRoutes(Routes routes) {
  routes_.push_back(std::move(routes));
}

Status MetricsListener::Start(const ListenerOptions& o) {
  if (server_) return Status::FailedPrecondition("already started");
  auto server = std::make_unique<Server>(o.timeout_ms, o.request_timeout_ms, o.keep_alive_s,
                                         o.keep_alive_max_requests);
  auto state = std::make_shared<PoolState>();
  state_ = state;
  size_t threads = o.threads > 0 ? o.threads : 1;
  size_t queued = o.max_queued > 0 ? o.max_queued : 1;
  const std::chrono::milliseconds idle_life(std::max(1, o.idle_worker_ms));
  server->new_task_queue = [threads, queued, idle_life, state] {
    return new Pool(threads, queued, idle_life, state);
  };
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
      [max_headers, token = o.bearer_token](const httplib::Request& req, httplib::Response& res) {
        if (!token.empty() && !Authorized(req.get_header_value("Authorization"), token)) {
          res.status = 401;
          res.headers.emplace("WWW-Authenticate", "Bearer realm=\"edgemond\"");
          res.headers.emplace("WWW-Authenticate", "Basic realm=\"edgemond\", charset=\"UTF-8\"");
          res.set_content("this listener needs its token (Authorization: Bearer TOKEN)\n",
                          "text/plain");
          return httplib::Server::HandlerResponse::Handled;
        }
        if (req.headers.size() > max_headers) {
          res.status = 431;
          res.set_content("too many header fields\n", "text/plain");
          return httplib::Server::HandlerResponse::Handled;
        }
        if (!req.body.empty() || (!MethodHasBody(req.method) && DeclaresBody(req))) {
          // httplib reads a body only for methods that carry one; a GET's
          // would be parsed as the next request on the connection: refused,
          // and the connection ends after the reply.
          if (current_stream != nullptr) current_stream->refuse_rest();
          res.status = 413;
          res.set_header("Connection", "close");
          res.set_content(req.method + " requests here have no body\n", "text/plain");
          return httplib::Server::HandlerResponse::Handled;
        }
        if (auto twice = RepeatedParams(req); !twice.empty()) {
          res.status = 400;
          res.set_content("parameter given more than once: " + twice + "\n", "text/plain");
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
  for (const auto& r : routes_) {
    if (r.mount) r.mount(*server);
  }
  server->set_error_handler([this](const httplib::Request&, httplib::Response& res) {
    refused_.fetch_add(1);
    if (res.body.empty()) {
      res.set_content(
          res.status == 404 ? "not found\n" : "error " + std::to_string(res.status) + "\n",
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
    return Status::Unavailable("cannot listen on " + host + ":" + std::to_string(o.port) +
                               (e != 0 ? std::string(": ") + std::strerror(e) : std::string()));
  }
  port_ = port;
  server_ = std::move(server);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  runtime::NameThread(thread_, "metrics-listen");
  // Stop() only works once the loop runs; wait for it (microseconds).
  for (int i = 0; i < 5000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return Status::Ok();
}

void MetricsListener::Stop() {
  if (!server_) return;
  for (const auto& r : routes_) {
    if (r.stop) r.stop();
  }
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
