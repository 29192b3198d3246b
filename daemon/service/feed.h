// LocalFeed: the Watch stream without HTTP/2, for clients on the board
// itself (the jtop drop-in samples through it: a frame costs a recv and a
// protobuf parse, and the client keeps no gRPC channel, hence no gRPC timer
// threads, open while it samples).
//
// DESIGN NOTE
// ===========
//
// Protocol (proto/edgemon/v1/edgemon.proto, FeedMessage): beside the unix
// listener at PATH, an AF_UNIX SOCK_SEQPACKET socket at PATH.feed with the
// same owner, group and mode (ListenUnix). A client sends one packet, a
// WatchRequest, within kRequestTimeoutMs (5 s) of connecting; the request goes
// through TelemetryService::PlanWatch (the Watch RPC's limits, the same
// stream slots, the same live-rate lease, held for the peer's uid). Every
// packet back is one FeedMessage: frames, exactly as Watch encodes them, or
// one `error` (the status code and message) just before the daemon closes
// the connection. A second packet from the client, a request that is not a
// WatchRequest or is larger than kMaxRequestBytes, or no request in time,
// ends the feed with an error.
//
// Delivery is the hub's (watch_hub.h): a Connection is a WatchHub
// Subscriber whose Offer, on the hub's dispatcher thread, encodes a due
// frame and sends it with MSG_DONTWAIT. A full socket (a client not
// reading: its queue is bounded by the socket buffer) drops that frame and
// leaves the next one due, so a slow client gets fewer, fresh frames; the
// dispatcher never waits. A send failing otherwise (the client gone) marks
// the connection dead and wakes the feed's thread.
//
// The feed's thread owns the listening socket and every connection: it
// accepts every connection at once (so none waits in the listen backlog
// behind a flood), reads requests, reaps dead or closed connections and
// ends requests that are late. Connections waiting for their request are
// bounded per uid (kMaxPendingPerUid) and in all (kMaxPending): one over a
// bound is ended at once with RESOURCE_EXHAUSTED, so a silent flood from
// one uid never locks another out. Fed connections are bounded by the
// stream slots. A connection is unsubscribed from the hub
// (after which Offer is never called on it) before its fd is closed and it
// is freed; its stream slot and lease are released then.
//
// Stop: every connection gets UNAVAILABLE "edgemond is stopping" (unless
// the hub's Shutdown told it already), is closed, and PATH.feed is removed.
// An error message is sent without waiting, as frames are: a client whose
// socket is full of unread frames sees the close alone (as a daemon gone).
//
// Thread safety: Start and Stop from one thread; clients() from any.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon/runtime/peers.h"
#include "daemon/service/service.h"
#include "daemon/service/watch_hub.h"
#include "edgemon/clock.h"
#include "edgemon/status.h"

namespace edgemon::service {

// The feed's socket beside the API socket at `unix_path`.
std::string FeedPath(const std::string& unix_path);

class LocalFeed {
 public:
  static constexpr int kRequestTimeoutMs = 5000;
  static constexpr size_t kMaxRequestBytes = 64 << 10;
  static constexpr size_t kMaxPending = 64;
  static constexpr size_t kMaxPendingPerUid = 4;

  explicit LocalFeed(TelemetryService& service, int request_timeout_ms = kRequestTimeoutMs)
      : service_(service), request_timeout_ms_(request_timeout_ms) {}
  ~LocalFeed();
  LocalFeed(const LocalFeed&) = delete;
  LocalFeed& operator=(const LocalFeed&) = delete;

  // Listens on `path` (SOCK_SEQPACKET, group `gid` when set) and starts the
  // feed's thread. OK, else one line.
  Status Start(const std::string& path, std::optional<gid_t> gid);
  // Ends every feed and removes the socket. Idempotent.
  void Stop();

  // Connections open (waiting for a request or fed).
  size_t clients() const { return clients_.load(); }
  // Frames dropped because a client's socket was full.
  uint64_t dropped() const { return dropped_.load(); }

  class Connection;

 private:
  void Run();
  void Wake();
  // The monotonic clock in ms. Real time, never a test's clock: request
  // deadlines are waited for in poll().
  int64_t NowMs() { return clock_.MonotonicNs() / 1'000'000; }
  // Accepts every connection waiting; each one over the limits of those
  // waiting for their request is ended at once.
  void Accept(std::vector<std::unique_ptr<Connection>>& conns);

  TelemetryService& service_;
  const int request_timeout_ms_;
  SystemClock clock_;
  std::string path_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: Stop, or a connection found dead by a send
  std::atomic<bool> stop_{false};
  std::atomic<size_t> clients_{0};
  std::atomic<uint64_t> dropped_{0};
  std::thread thread_;
  friend class Connection;
};

}  // namespace edgemon::service
