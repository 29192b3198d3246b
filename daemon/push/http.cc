#include "daemon/push/http.h"

#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <ctime>

#include "edgemon/text.h"

namespace edgemon::push {

HttpPoster::HttpPoster(runtime::Url url, HttpOptions options)
    : url_(std::move(url)), options_(std::move(options)) {
  std::string host = url_.host.find(':') != std::string::npos ? "[" + url_.host + "]" : url_.host;
  client_ = std::make_unique<httplib::Client>(url_.scheme + "://" + host + ":" +
                                              std::to_string(url_.port));
  auto split = [](int64_t ms) {
    return std::pair{static_cast<time_t>(ms / 1000), static_cast<time_t>(ms % 1000 * 1000)};
  };
  const auto [sec, usec] = split(options_.timeout_ms);
  const auto [csec, cusec] = split(std::min(options_.timeout_ms, kConnectCapMs));
  client_->set_connection_timeout(csec, cusec);
  client_->set_read_timeout(sec, usec);
  client_->set_write_timeout(sec, usec);
  client_->set_keep_alive(true);
  // A receiver picks the reply's size: its body is read raw, never inflated.
  client_->set_decompress(false);
  client_->set_follow_location(false);
  // A request is written in pieces: without TCP_NODELAY each waits for the
  // receiver's delayed ACK (~40 ms).
  client_->set_tcp_nodelay(true);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  if (url_.scheme == "https") {
    client_->enable_server_certificate_verification(true);
    if (!options_.tls_ca.empty()) client_->set_ca_cert_path(options_.tls_ca);
  }
#endif
  watchdog_ = std::thread([this] { Watch(); });
}

HttpPoster::~HttpPoster() {
  {
    std::lock_guard lk(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  watchdog_.join();
}

void HttpPoster::Abort() {
  {
    std::lock_guard lk(mu_);
    aborted_ = true;
  }
  cv_.notify_all();
}

void HttpPoster::Watch() {
  std::unique_lock lk(mu_);
  while (!quit_) {
    if (!deadline_) {
      cv_.wait(lk);
      continue;
    }
    if (!aborted_ && std::chrono::steady_clock::now() < *deadline_) {
      cv_.wait_until(lk, *deadline_);
      continue;
    }
    // Past the deadline (or stopping) with a request in flight: shut its
    // socket down, and again until the request ends (the socket may not have
    // been connected yet at the first try).
    lk.unlock();
    client_->stop();
    lk.lock();
    cv_.wait_for(lk, std::chrono::milliseconds(50));
  }
}

HttpAnswer HttpPoster::Post(const std::string& body, const std::string& content_type,
                            const std::vector<std::pair<std::string, std::string>>& headers) {
  HttpAnswer a;
  {
    std::lock_guard lk(mu_);
    if (aborted_) {
      a.aborted = true;
      a.error = "stopping";
      return a;
    }
    deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  }
  cv_.notify_all();
  httplib::Request req;
  req.method = "POST";
  req.path = url_.path;
  for (const auto& [k, v] : headers) req.headers.emplace(k, v);
  for (const auto& [k, v] : options_.headers) req.headers.emplace(k, v);
  if (!options_.bearer_token.empty()) {
    req.headers.emplace("Authorization", "Bearer " + options_.bearer_token);
  }
  if (!options_.user_agent.empty()) req.headers.emplace("User-Agent", options_.user_agent);
  req.headers.emplace("Content-Type", content_type);
  req.body = body;
  // The reply body: the first kReplyKeepBytes kept, the rest up to
  // kReplyReadBytes discarded, then the connection closed.
  std::string kept;
  size_t read = 0;
  bool cut = false;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (kept.size() < kReplyKeepBytes)
      kept.append(data, std::min(n, kReplyKeepBytes - kept.size()));
    read += n;
    if (read > kReplyReadBytes) {
      cut = true;
      return false;
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool answered = client_->send(req, res, err);
  bool expired = false;
  {
    std::lock_guard lk(mu_);
    expired = std::chrono::steady_clock::now() >= *deadline_;
    deadline_.reset();
    a.aborted = aborted_;
  }
  if (!answered && !cut) {
    if (a.aborted) {
      a.error = "stopping";
    } else if (expired) {
      a.error =
          "no whole answer within the timeout (" + std::to_string(options_.timeout_ms) + " ms)";
    } else if (res.status > 0) {
      a.error = "the answer (HTTP " + std::to_string(res.status) + ") was cut short (" +
                httplib::to_string(err) + ")";
    } else {
      a.error = "no answer (" + httplib::to_string(err) + ")";
    }
    return a;
  }
  a.status = res.status;
  a.body = TerminalSafe(kept.substr(0, 512));
  if (res.has_header("Retry-After")) {
    a.retry_after_ms = ParseRetryAfterMs(res.get_header_value("Retry-After"),
                                         static_cast<int64_t>(std::time(nullptr)) * 1'000'000'000);
  }
  if (res.has_header("Location")) {
    a.location = TerminalSafe(res.get_header_value("Location").substr(0, 512));
  }
  return a;
}

std::optional<int64_t> ParseRetryAfterMs(const std::string& value, int64_t now_realtime_ns) {
  std::string_view v = text::Trim(value);
  int64_t seconds = 0;
  if (!v.empty() && v.find_first_not_of("0123456789") == std::string_view::npos) {
    // delay-seconds: any number of digits; beyond the cap (or beyond int64)
    // waits the cap.
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
    if (ec != std::errc() || p != v.data() + v.size() || seconds > kRetryAfterCapMs / 1000) {
      return kRetryAfterCapMs;
    }
    return seconds * 1000;
  }
  std::tm tm{};  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
  std::string s(v);
  const char* end = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const int64_t at_s = static_cast<int64_t>(timegm(&tm));
  return std::clamp<int64_t>(at_s * 1000 - now_realtime_ns / 1'000'000, 0, kRetryAfterCapMs);
}

}  // namespace edgemon::push
