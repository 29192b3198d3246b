// URLs of the destinations the daemon talks to (push receivers): parsed once
// by the configuration and by the shipper, without pulling in an HTTP client.
#pragma once

#include <string>

#include "edgemon/status.h"

namespace edgemon::runtime {

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

}  // namespace edgemon::runtime
