// The shipper's HTTP client: one POST at a time to one destination, over
// Debian's cpp-httplib (HTTPS through its OpenSSL build), with timeouts, a
// CA file, configured headers and a bearer token.
//
// Thread safety: one thread per HttpPoster.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "edgemon/status.h"

namespace httplib {
class Client;
}

namespace edgemon::push {

struct Url {
  std::string scheme;  // http | https
  std::string host;    // without brackets
  int port = 0;
  std::string path;  // starts with '/', query included
  // scheme://host:port/path, without user info: safe to log and to label.
  std::string display;
};
// http[s]://host[:port][/path]; user info is refused (credentials belong in
// a token file), and so are other schemes.
Result<Url> ParseUrl(const std::string& url);

struct HttpOptions {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string bearer_token;  // "" = none
  std::string tls_ca;        // PEM file; "" = the system's CAs
  int64_t timeout_ms = 30'000;
  std::string user_agent;
};

struct HttpAnswer {
  int status = 0;     // 0: no answer (the error says why)
  std::string error;  // network or TLS error
  std::string body;   // the receiver's message, cut to 512 bytes
  std::optional<int64_t> retry_after_ms;
};

class HttpPoster {
 public:
  HttpPoster(Url url, HttpOptions options);
  ~HttpPoster();
  HttpPoster(const HttpPoster&) = delete;
  HttpPoster& operator=(const HttpPoster&) = delete;

  HttpAnswer Post(const std::string& body, const std::string& content_type,
                  const std::vector<std::pair<std::string, std::string>>& headers);

 private:
  Url url_;
  HttpOptions options_;
  std::unique_ptr<httplib::Client> client_;
};

// A Retry-After header: delay-seconds or an HTTP date (relative to
// `now_realtime_ns`); nullopt when it is neither.
std::optional<int64_t> ParseRetryAfterMs(const std::string& value, int64_t now_realtime_ns);

}  // namespace edgemon::push
