// The shipper's HTTP client: one POST at a time to one destination, over
// Debian's cpp-httplib (HTTPS through its OpenSSL build), with a CA file,
// configured headers and a bearer token.
//
// Limits, whatever the receiver does:
//   - a total deadline per request (`timeout_ms`: connect, send and the whole
//     reply), enforced by a watchdog thread that shuts the socket down when
//     it passes, so a receiver trickling its reply a byte at a time cannot
//     hold a request open; connecting alone is capped at kConnectCapMs;
//   - a bounded reply: at most kReplyReadBytes of the body are read (the
//     first kReplyKeepBytes kept for the log), then the connection is closed;
//     the answer's status stands (a 200 with a huge body is a 200); bodies
//     are not decompressed;
//   - redirects are not followed (the answer is the 3xx and its Location);
//   - Abort() ends the request in flight at once and refuses later ones
//     (shutdown never waits on a receiver).
//
// Thread safety: Post from one thread at a time; Abort from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "daemon/runtime/url.h"
#include "edgemon/status.h"

namespace httplib {
class Client;
}

namespace edgemon::push {

struct HttpOptions {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string bearer_token;  // "" = none
  std::string tls_ca;        // PEM file; "" = the system's CAs
  int64_t timeout_ms = 30'000;
  std::string user_agent;
};

// At most this much of a reply body is read; the connection is closed beyond.
inline constexpr size_t kReplyReadBytes = 64 * 1024;
// The part of it kept as the receiver's message.
inline constexpr size_t kReplyKeepBytes = 4096;
// Connecting (TCP) takes at most this long, whatever timeout_ms says.
inline constexpr int64_t kConnectCapMs = 3000;
// Retry-After is honoured up to this long (a longer or unrepresentable
// delay-seconds value waits this long).
inline constexpr int64_t kRetryAfterCapMs = 3'600'000;

struct HttpAnswer {
  int status = 0;                         // 0: no (whole) answer (the error says why)
  std::string error;                      // network, TLS, deadline or cut-short error
  std::string body;                       // the receiver's message, cut to 512 bytes
  std::optional<int64_t> retry_after_ms;  // capped at kRetryAfterCapMs
  std::string location;                   // a 3xx's Location, cut to 512 bytes
  bool aborted = false;                   // Abort() ended it
};

class HttpPoster {
 public:
  HttpPoster(runtime::Url url, HttpOptions options);
  ~HttpPoster();
  HttpPoster(const HttpPoster&) = delete;
  HttpPoster& operator=(const HttpPoster&) = delete;

  HttpAnswer Post(const std::string& body, const std::string& content_type,
                  const std::vector<std::pair<std::string, std::string>>& headers);
  // Ends the request in flight (within milliseconds) and answers every later
  // Post at once with `aborted`. Any thread.
  void Abort();

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  void Watch();

  runtime::Url url_;
  HttpOptions options_;
  std::unique_ptr<httplib::Client> client_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<SteadyTime> deadline_;  // guarded by mu_: set while a request is in flight
  bool aborted_ = false;                // guarded by mu_
  bool quit_ = false;                   // guarded by mu_
  std::thread watchdog_;
};

// A Retry-After header: delay-seconds or an HTTP date (relative to
// `now_realtime_ns`), at most kRetryAfterCapMs (delay-seconds too large for
// any integer type wait that long too); nullopt when it is neither.
std::optional<int64_t> ParseRetryAfterMs(const std::string& value, int64_t now_realtime_ns);

}  // namespace edgemon::push
