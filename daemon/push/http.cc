#include "daemon/push/http.h"

#include <httplib.h>

#include <charconv>
#include <ctime>

#include "edgemon/text.h"

namespace edgemon::push {

Result<Url> ParseUrl(const std::string& text) {
  Url u;
  size_t sep = text.find("://");
  if (sep == std::string::npos) return Status::InvalidArgument("expected http://host[:port]/path");
  u.scheme = text.substr(0, sep);
  if (u.scheme != "http" && u.scheme != "https") {
    return Status::InvalidArgument("the scheme must be http or https");
  }
  std::string rest = text.substr(sep + 3);
  size_t slash = rest.find_first_of("/?#");
  std::string authority = rest.substr(0, slash);
  u.path = slash == std::string::npos ? "/" : rest.substr(slash);
  if (size_t hash = u.path.find('#'); hash != std::string::npos) u.path.resize(hash);
  if (u.path.empty() || u.path.front() != '/') u.path.insert(u.path.begin(), '/');
  if (authority.find('@') != std::string::npos) {
    return Status::InvalidArgument(
        "credentials in the URL are not accepted (use bearer_token_file or headers)");
  }
  std::string port;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string::npos) return Status::InvalidArgument("unclosed [ in the host");
    u.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return Status::InvalidArgument("expected :port after ]");
      port = authority.substr(close + 2);
    }
  } else {
    size_t colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) return Status::InvalidArgument("the URL has no host");
  u.port = u.scheme == "https" ? 443 : 80;
  if (!port.empty()) {
    int n = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (ec != std::errc() || p != port.data() + port.size() || n < 1 || n > 65535) {
      return Status::InvalidArgument("the port must be between 1 and 65535");
    }
    u.port = n;
  }
  std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  u.display = u.scheme + "://" + host + ":" + std::to_string(u.port);
  // The query may carry a tenant or a key: left out of what is displayed.
  u.display += u.path.substr(0, u.path.find('?'));
  return u;
}

HttpPoster::HttpPoster(Url url, HttpOptions options)
    : url_(std::move(url)), options_(std::move(options)) {
  std::string host = url_.host.find(':') != std::string::npos ? "[" + url_.host + "]" : url_.host;
  client_ = std::make_unique<httplib::Client>(url_.scheme + "://" + host + ":" +
                                              std::to_string(url_.port));
  const time_t sec = static_cast<time_t>(options_.timeout_ms / 1000);
  const time_t usec = static_cast<time_t>(options_.timeout_ms % 1000 * 1000);
  client_->set_connection_timeout(sec, usec);
  client_->set_read_timeout(sec, usec);
  client_->set_write_timeout(sec, usec);
  client_->set_keep_alive(true);
  // A request is written in pieces: without TCP_NODELAY each waits for the
  // receiver's delayed ACK (~40 ms).
  client_->set_tcp_nodelay(true);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  if (url_.scheme == "https") {
    client_->enable_server_certificate_verification(true);
    if (!options_.tls_ca.empty()) client_->set_ca_cert_path(options_.tls_ca);
  }
#endif
}

HttpPoster::~HttpPoster() = default;

HttpAnswer HttpPoster::Post(const std::string& body, const std::string& content_type,
                            const std::vector<std::pair<std::string, std::string>>& headers) {
  httplib::Headers h;
  for (const auto& [k, v] : headers) h.emplace(k, v);
  for (const auto& [k, v] : options_.headers) h.emplace(k, v);
  if (!options_.bearer_token.empty()) h.emplace("Authorization", "Bearer " + options_.bearer_token);
  if (!options_.user_agent.empty()) h.emplace("User-Agent", options_.user_agent);
  HttpAnswer a;
  auto res = client_->Post(url_.path, h, body, content_type);
  if (!res) {
    a.error = "no answer (" + httplib::to_string(res.error()) + ")";
    return a;
  }
  a.status = res->status;
  a.body = TerminalSafe(res->body.substr(0, 512));
  if (res->has_header("Retry-After")) {
    a.retry_after_ms = ParseRetryAfterMs(res->get_header_value("Retry-After"),
                                         static_cast<int64_t>(std::time(nullptr)) * 1'000'000'000);
  }
  return a;
}

std::optional<int64_t> ParseRetryAfterMs(const std::string& value, int64_t now_realtime_ns) {
  std::string_view v = text::Trim(value);
  int64_t seconds = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
  if (!v.empty() && ec == std::errc() && p == v.data() + v.size()) {
    if (seconds < 0) return std::nullopt;
    return std::min<int64_t>(seconds, 86400) * 1000;
  }
  std::tm tm{};  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
  std::string s(v);
  const char* end = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const int64_t at_s = static_cast<int64_t>(timegm(&tm));
  return std::clamp<int64_t>(at_s * 1000 - now_realtime_ns / 1'000'000, 0, 86'400'000);
}

}  // namespace edgemon::push
