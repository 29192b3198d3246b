#include "daemon/runtime/url.h"

#include <charconv>

namespace edgemon::runtime {

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

}  // namespace edgemon::runtime
