#include "daemon/service/feed.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "daemon/runtime/thread_name.h"
#include "proto/convert.h"
#include "proto/grpc_status.h"

namespace edgemon::service {

std::string FeedPath(const std::string& unix_path) {
  return unix_path + ".feed";
}

class LocalFeed::Connection final : public WatchHub::Subscriber {
 public:
  Connection(LocalFeed& feed, int fd, runtime::PeerCred cred)
      : feed_(feed), fd_(fd), cred_(cred), deadline_ms_(feed.NowMs() + feed.request_timeout_ms_) {}
  ~Connection() override { ::close(fd_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void Offer(const Snapshot& s) override {
    std::lock_guard lock(mu_);
    if (dead_ || !s.frame || !spacing_.Due(s.frame->seq, s.scheduled_ns)) return;
    wire::ToProto(*s.frame, subset_, s.generation, msg_.mutable_frame());
    msg_.SerializeToString(&out_);
    if (::send(fd_, out_.data(), out_.size(), MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
      spacing_.Sent(s.frame->seq, s.scheduled_ns);
      return;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // Not read: this frame is lost, the next one is due (latest-wins).
      feed_.dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (errno == EMSGSIZE) {
      EndLocked(Status::ResourceExhausted("a frame of " + std::to_string(out_.size()) +
                                          " bytes does not fit the feed's socket; use Watch"));
      return;
    }
    dead_ = true;  // the client is gone
    feed_.Wake();
  }

  void HubStopping() override {
    std::lock_guard lock(mu_);
    EndLocked(Status::Unavailable("edgemond is stopping"));
  }

  // The feed's end: one error message (best effort: a full socket loses
  // it), then the feed's thread closes the connection.
  void End(const Status& why) {
    std::lock_guard lock(mu_);
    EndLocked(why);
  }

  bool dead() {
    std::lock_guard lock(mu_);
    return dead_;
  }

  // Takes the request's plan (before Subscribe: nothing is offered yet).
  void Plan(WatchPlan plan) {
    std::lock_guard lock(mu_);
    spacing_ = WatchSpacing(plan.interval_ns);
    subset_ = std::move(plan.subset);
    release_ = std::move(plan.release);
  }

  // Ends the lease of the plan, once.
  void ReleasePlan() {
    std::function<void()> release;
    {
      std::lock_guard lock(mu_);
      release = std::move(release_);
      release_ = nullptr;
    }
    if (release) release();
  }

  int fd() const { return fd_; }
  const runtime::PeerCred& cred() const { return cred_; }
  int64_t deadline_ms() const { return deadline_ms_; }
  bool subscribed = false;  // the feed's thread only
  bool holds_slot = false;  // the feed's thread only

 private:
  void EndLocked(const Status& why) {
    if (dead_) return;
    dead_ = true;
    v1::FeedMessage m;
    const grpc::Status g = wire::ToGrpc(why);
    m.mutable_error()->set_code(static_cast<int32_t>(g.error_code()));
    m.mutable_error()->set_message(g.error_message());
    const std::string bytes = m.SerializeAsString();
    (void)::send(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    feed_.Wake();
  }

  LocalFeed& feed_;
  const int fd_;
  const runtime::PeerCred cred_;
  const int64_t deadline_ms_;  // the request's, on the monotonic clock (NowMs)
  std::mutex mu_;
  bool dead_ = false;              // guarded by mu_
  WatchSpacing spacing_{0};        // guarded by mu_
  std::vector<ChannelId> subset_;  // guarded by mu_
  std::function<void()> release_;  // guarded by mu_
  v1::FeedMessage msg_;            // guarded by mu_
  std::string out_;                // guarded by mu_
};

LocalFeed::~LocalFeed() {
  Stop();
}

Status LocalFeed::Start(const std::string& path, std::optional<gid_t> gid) {
  auto fd = runtime::ListenUnix(path, gid, SOCK_SEQPACKET);
  if (!fd.ok()) return fd.status();
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  // Non-blocking: Accept takes connections until none is left.
  if (wake_fd_ < 0 || ::fcntl(*fd, F_SETFL, ::fcntl(*fd, F_GETFL) | O_NONBLOCK) != 0) {
    Status failed = Status::Internal(std::string("feed socket: ") + std::strerror(errno));
    if (wake_fd_ >= 0) ::close(wake_fd_);
    wake_fd_ = -1;
    ::close(*fd);
    ::unlink(path.c_str());
    return failed;
  }
  listen_fd_ = *fd;
  path_ = path;
  stop_.store(false);
  thread_ = std::thread([this] { Run(); });
  runtime::NameThread(thread_, "feed");
  return Status::Ok();
}

void LocalFeed::Stop() {
  if (thread_.joinable()) {
    stop_.store(true);
    Wake();
    thread_.join();
  }
  for (int* fd : {&listen_fd_, &wake_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  if (!path_.empty()) ::unlink(path_.c_str());
  path_.clear();
}

void LocalFeed::Wake() {
  const uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof one) < 0) {
    // The counter cannot overflow in practice; a failed wake is retried by
    // the next one.
  }
}

void LocalFeed::Accept(std::vector<std::unique_ptr<Connection>>& conns) {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors or memory leaves the connection pending: do not spin.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      return;
    }
    auto cred = runtime::PeerCredOf(fd);
    if (!cred) {
      ::close(fd);
      continue;
    }
    auto c = std::make_unique<Connection>(*this, fd, *cred);
    size_t waiting = 0, theirs = 0;
    for (const auto& o : conns) {
      if (o->holds_slot || o->dead()) continue;
      ++waiting;
      if (o->cred().uid == cred->uid) ++theirs;
    }
    if (theirs >= kMaxPendingPerUid) {
      c->End(Status::ResourceExhausted(
          "feed: " + std::to_string(theirs) +
          " connections of this uid are waiting for their request; send it, or close them"));
    } else if (waiting >= kMaxPending) {
      c->End(Status::ResourceExhausted("feed: too many connections waiting for their request"));
    } else {
      conns.push_back(std::move(c));
      clients_.store(conns.size());
    }
  }
}

void LocalFeed::Run() {
  WatchHub& hub = service_.hub();
  std::vector<std::unique_ptr<Connection>> conns;
  std::vector<pollfd> fds;
  std::vector<char> request(kMaxRequestBytes);

  auto close_conn = [&](Connection& c) {
    if (c.subscribed) hub.Unsubscribe(&c);  // no Offer runs on it after this
    c.subscribed = false;
    c.ReleasePlan();
    if (c.holds_slot) hub.ReleaseStream(runtime::PrincipalOf(c.cred()));
    c.holds_slot = false;
  };
  // The first packet: a WatchRequest, planned as Watch plans it.
  auto start_feed = [&](Connection& c, size_t n) {
    if (n > kMaxRequestBytes) {
      c.End(Status::InvalidArgument("feed request: larger than " +
                                    std::to_string(kMaxRequestBytes) + " bytes"));
      return;
    }
    v1::WatchRequest req;
    if (!req.ParseFromArray(request.data(), static_cast<int>(n))) {
      c.End(Status::InvalidArgument("feed request: the first packet must be a WatchRequest"));
      return;
    }
    auto plan = service_.PlanWatch(req, runtime::PrincipalOf(c.cred()));
    if (!plan.ok()) {
      c.End(plan.status());
      return;
    }
    c.holds_slot = true;
    c.Plan(std::move(plan).value());
    c.subscribed = hub.Subscribe(&c);
    if (!c.subscribed) c.End(Status::Unavailable("edgemond is stopping"));
  };

  while (!stop_.load()) {
    int64_t first_deadline = -1;
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    for (const auto& c : conns) {
      fds.push_back({c->fd(), POLLIN | POLLRDHUP, 0});
      if (!c->subscribed && !c->dead()) {
        if (first_deadline < 0 || c->deadline_ms() < first_deadline) {
          first_deadline = c->deadline_ms();
        }
      }
    }
    fds.push_back({listen_fd_, POLLIN, 0});
    int timeout = -1;
    if (first_deadline >= 0) {
      timeout = static_cast<int>(std::max<int64_t>(0, first_deadline - NowMs()) + 1);
    }
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (stop_.load()) break;
    if (fds[0].revents != 0) {
      uint64_t count = 0;
      (void)!::read(wake_fd_, &count, sizeof count);
    }
    const int64_t now = NowMs();
    for (size_t i = 0; i < conns.size(); ++i) {
      Connection& c = *conns[i];
      const short ev = fds[i + 1].revents;
      if (ev != 0 && !c.dead()) {
        const ssize_t n = ::recv(c.fd(), request.data(), request.size(), MSG_DONTWAIT | MSG_TRUNC);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          c.End(Status::Unavailable("feed: receive failed"));
        } else if ((n == 0 && (ev & POLLRDHUP) != 0) || (ev & (POLLHUP | POLLERR)) != 0) {
          // (A 0-byte packet from a client still connected is the empty
          // WatchRequest: every frame, every channel.)
          c.End(Status::Cancelled("feed: the client closed it"));
        } else if (n >= 0 && !c.subscribed && !c.holds_slot) {
          start_feed(c, static_cast<size_t>(n));
        } else if (n >= 0) {
          c.End(Status::InvalidArgument(
              "feed: one request per connection; connect again to change it"));
        }
      } else if (!c.subscribed && !c.holds_slot && !c.dead() && now >= c.deadline_ms()) {
        c.End(Status::DeadlineExceeded("feed: no WatchRequest within " +
                                       std::to_string(request_timeout_ms_) + " ms"));
      }
    }
    for (auto it = conns.begin(); it != conns.end();) {
      if ((*it)->dead()) {
        close_conn(**it);
        it = conns.erase(it);
        clients_.store(conns.size());
      } else {
        ++it;
      }
    }
    if ((fds.back().revents & POLLIN) != 0) Accept(conns);
  }
  for (auto& c : conns) {
    c->End(Status::Unavailable("edgemond is stopping"));
    close_conn(*c);
  }
  conns.clear();
  clients_.store(0);
}

}  // namespace edgemon::service
