#include "daemon/runtime/config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "daemon/runtime/url.h"
#include "edgemon/secret_file.h"
#include "edgemon/text.h"
#include "edgemon/timespec.h"

namespace edgemon::runtime {
namespace {

std::optional<int64_t> ScaledNumber(const std::string& s,
                                    std::initializer_list<std::pair<const char*, int64_t>> units) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0) return std::nullopt;
  int64_t n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + i, n);
  if (ec != std::errc() || p != s.data() + i) return std::nullopt;
  std::string unit = s.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  for (const auto& [name, mul] : units) {
    if (unit == name) {
      int64_t out;
      if (__builtin_mul_overflow(n, mul, &out)) return std::nullopt;
      return out;
    }
  }
  return std::nullopt;
}

struct Key {
  const char* table;
  const char* name;
  enum Type { kString, kInt, kDuration, kBytes, kBool } type;
  void* target;
};

}  // namespace

std::optional<int64_t> ParseBytes(const std::string& s) {
  return ScaledNumber(s, {{"", 1},
                          {"B", 1},
                          {"KiB", 1LL << 10},
                          {"MiB", 1LL << 20},
                          {"GiB", 1LL << 30},
                          {"TiB", 1LL << 40},
                          {"KB", 1000},
                          {"MB", 1'000'000},
                          {"GB", 1'000'000'000},
                          {"TB", 1'000'000'000'000}});
}

Status CheckRootDirectory(const std::string& root, std::string_view what) {
  std::error_code ec;
  const auto st = std::filesystem::status(root, ec);
  if (std::filesystem::is_directory(st)) return Status::Ok();
  return Status::InvalidArgument(
      std::string(what) + " " + TerminalSafe(root) +
      (std::filesystem::exists(st) ? ": not a directory" : ": no such directory"));
}

Result<HostPort> ParseHostPort(const std::string& s) {
  HostPort hp;
  std::string port = s;
  if (size_t colon = s.rfind(':'); colon != std::string::npos) {
    hp.host = s.substr(0, colon);
    port = s.substr(colon + 1);
    if (!hp.host.empty() && hp.host.front() == '[') {
      if (hp.host.size() < 3 || hp.host.back() != ']') {
        return Status::InvalidArgument("expected [IPv6 address]:port");
      }
      hp.host = hp.host.substr(1, hp.host.size() - 2);
    } else if (hp.host.find(':') != std::string::npos) {
      return Status::InvalidArgument("an IPv6 address needs brackets: [addr]:port");
    }
  }
  int n = 0;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
  if (port.empty() || ec != std::errc() || p != port.data() + port.size() || n < 1 || n > 65535) {
    return Status::InvalidArgument("expected host:port with a port between 1 and 65535");
  }
  hp.port = n;
  if (hp.host.empty()) hp.host = "127.0.0.1";
  if (hp.host == "localhost") {
    hp.loopback = true;
    return hp;
  }
  unsigned char addr[sizeof(in6_addr)];
  if (inet_pton(AF_INET, hp.host.c_str(), addr) == 1) {
    hp.loopback = addr[0] == 127;
  } else if (inet_pton(AF_INET6, hp.host.c_str(), addr) == 1) {
    in6_addr a6;
    std::memcpy(&a6, addr, sizeof a6);
    hp.loopback = IN6_IS_ADDR_LOOPBACK(&a6);
  } else {
    return Status::InvalidArgument("the host must be an IP address or localhost");
  }
  return hp;
}

Result<std::string> ReadConfigFile(const std::string& path) {
  int err = 0;
  auto bytes = ReadRegularFile(path, kMaxConfigBytes, &err);
  if (bytes) return std::move(*bytes);
  if (err == EINVAL)
    return Status::InvalidArgument("config file " + path + " is not a regular file");
  if (err == EFBIG) {
    return Status::InvalidArgument("config file " + path + " is larger than " +
                                   std::to_string(kMaxConfigBytes) + " bytes");
  }
  return Status::Error(err == ENOENT ? StatusCode::kNotFound : StatusCode::kFailedPrecondition,
                       "cannot read config file " + path + ": " + std::strerror(err));
}

namespace {
Status ApplyTomlLines(const std::string& text, const std::string& source, Config& c);
Status ApplyPushTables(const toml::node& node, const std::string& source, Config& c);
Status ValidateLines(const Config& c);

// Errors quote the file's own bytes (a key, a value, the parser's view of a
// token): keep them one printable line, newlines shown as "\n" and other
// control bytes escaped by TerminalSafe.
std::string OneLine(const std::string& s) {
  std::string lines;
  lines.reserve(s.size());
  for (char ch : s) {
    if (ch == '\n') {
      lines += "\\n";
    } else {
      lines += ch;
    }
  }
  return TerminalSafe(lines);
}
Status OneLine(const Status& s) {
  return s.ok() ? s : Status(s.code(), OneLine(s.message()));
}
}  // namespace

// The TOML parser recurses per nesting level (arrays, inline tables) and the
// parsed tree is freed recursively (dotted keys and [a.b.c] headers): a few
// bytes per level can exhaust the stack. Our keys are two levels deep, so a
// document is refused before parsing when, outside strings and comments,
// brackets and braces nest, or a key has dotted parts, deeper than
// kMaxConfigDepth. Returns "" or the first offending line.
Status CheckTomlShape(const std::string& text, const std::string& source) {
  int depth = 0, dots = 0, line = 1;
  bool in_value = false;  // after '=' on this line, where dots may be numbers
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == '"' || ch == '\'') {
      bool multi = text.compare(i, 3, std::string(3, ch)) == 0;
      std::string close = multi ? std::string(3, ch) : std::string(1, ch);
      size_t j = i + close.size();
      while (j < text.size() && text.compare(j, close.size(), close) != 0) {
        if (text[j] == '\n') {
          if (!multi) break;
          ++line;
        }
        if (ch == '"' && text[j] == '\\') ++j;
        ++j;
      }
      i = std::min(text.size(), j + close.size()) - 1;
      continue;
    }
    if (ch == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (ch == '\n') {
      ++line;
      dots = 0;
      if (depth == 0) in_value = false;
      continue;
    }
    if (ch == '=') in_value = true;
    if (ch == '[' || ch == '{') ++depth;
    if ((ch == ']' || ch == '}') && depth > 0) --depth;
    if (ch == ',' && depth > 0) dots = 0;
    if (ch == '.' && !(in_value && depth == 0 && i > 0 &&
                       std::isdigit(static_cast<unsigned char>(text[i - 1])))) {
      ++dots;
    }
    if (depth > kMaxConfigDepth || dots >= kMaxConfigDepth) {
      return Status::InvalidArgument(source + ":" + std::to_string(line) + ": nested deeper than " +
                                     std::to_string(kMaxConfigDepth) + " levels");
    }
  }
  return Status::Ok();
}

Status ApplyToml(const std::string& text, const std::string& source, Config& c) {
  if (static_cast<int64_t>(text.size()) > kMaxConfigBytes) {
    return Status::InvalidArgument(source + ": larger than " + std::to_string(kMaxConfigBytes) +
                                   " bytes");
  }
  if (Status s = CheckTomlShape(text, source); !s.ok()) return OneLine(s);
  return OneLine(ApplyTomlLines(text, source, c));
}

Status Validate(const Config& c) {
  return OneLine(ValidateLines(c));
}

namespace {
Status ApplyTomlLines(const std::string& text, const std::string& source, Config& c) {
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(source + ":" + std::to_string(e.source().begin.line) + ": " +
                                   std::string(e.description()));
  }
  int64_t retention_ms = c.retention_s * 1000, rollup_ms = c.rollup_period_s * 1000,
          rollup_retention_ms = c.rollup_retention_s * 1000,
          topology_ms = c.topology_check_s * 1000;
  const Key keys[] = {
      {"daemon", "root", Key::kString, &c.root},
      {"daemon", "interval_ms", Key::kInt, &c.interval_ms},
      {"daemon", "energy_rate_hz", Key::kInt, &c.energy_rate_hz},
      {"daemon", "topology_check", Key::kDuration, &topology_ms},
      {"daemon", "listen", Key::kString, &c.listen},
      {"daemon", "tcp_listen", Key::kString, &c.tcp_listen},
      {"daemon", "tls_cert", Key::kString, &c.tls_cert},
      {"daemon", "tls_key", Key::kString, &c.tls_key},
      {"daemon", "tcp_token_file", Key::kString, &c.tcp_token_file},
      {"daemon", "metrics_listen", Key::kString, &c.metrics_listen},
      {"daemon", "metrics_token_file", Key::kString, &c.metrics_token_file},
      {"daemon", "max_streams", Key::kInt, &c.max_streams},
      {"daemon", "realtime", Key::kBool, &c.realtime},
      {"daemon", "nvml", Key::kString, &c.nvml},
      {"daemon", "log_level", Key::kString, &c.log_level},
      {"store", "path", Key::kString, &c.db_path},
      {"store", "retention", Key::kDuration, &retention_ms},
      {"store", "max_size", Key::kBytes, &c.max_db_bytes},
      {"store", "rollup_period", Key::kDuration, &rollup_ms},
      {"store", "rollup_retention", Key::kDuration, &rollup_retention_ms},
      {"store", "commit_interval_ms", Key::kInt, &c.commit_interval_ms},
      {"store", "rollup_write_frames", Key::kInt, &c.rollup_write_frames},
      {"control", "enable", Key::kBool, &c.control_enable},
      {"control", "listen", Key::kString, &c.control_listen},
      {"control", "group", Key::kString, &c.control_group},
      {"control", "state_dir", Key::kString, &c.control_state_dir},
  };
  for (auto&& [table_name, table_node] : doc) {
    const toml::table* table = table_node.as_table();
    std::string tname(table_name.str());
    if (tname == "push") {
      if (Status s = ApplyPushTables(table_node, source, c); !s.ok()) return s;
      continue;
    }
    if (table == nullptr)
      return Status::InvalidArgument(source + ": key " + tname + ": expected a [table]");
    for (auto&& [key_name, node] : *table) {
      std::string kname(key_name.str());
      std::string where = source + ": key " + tname + "." + kname;
      const Key* key = nullptr;
      for (const auto& k : keys) {
        if (tname == k.table && kname == k.name) key = &k;
      }
      if (key == nullptr) return Status::InvalidArgument(where + ": unknown key");
      switch (key->type) {
        case Key::kString: {
          auto v = node.value<std::string>();
          if (!v) return Status::InvalidArgument(where + ": expected a string");
          *static_cast<std::string*>(key->target) = *v;
          break;
        }
        case Key::kBool: {
          auto v = node.value<bool>();
          if (!v || !node.is_boolean())
            return Status::InvalidArgument(where + ": expected true or false");
          *static_cast<bool*>(key->target) = *v;
          break;
        }
        case Key::kInt: {
          auto v = node.value<int64_t>();
          if (!v || !node.is_integer())
            return Status::InvalidArgument(where + ": expected an integer");
          *static_cast<int64_t*>(key->target) = *v;
          break;
        }
        case Key::kDuration:
        case Key::kBytes: {
          std::optional<int64_t> v;
          std::string why;
          if (node.is_integer()) {
            v = node.value<int64_t>();
            int64_t ms = 0;
            if (v && key->type == Key::kDuration) {
              v = __builtin_mul_overflow(*v, 1000, &ms) ? std::nullopt : std::optional(ms);
            }
          } else if (auto s = node.value<std::string>()) {
            if (key->type != Key::kDuration) {
              v = ParseBytes(*s);
            } else if (auto d = ParseDurationMs(*s); d.ok()) {
              v = *d;
            } else {
              why = d.status().message();
            }
          }
          if (!v || *v < 0) {
            if (!why.empty()) return Status::InvalidArgument(where + ": " + why);
            return Status::InvalidArgument(
                where + (key->type == Key::kDuration
                             ? std::string(": expected ") + kDurationSyntax
                             : std::string(": expected a size such as \"512MiB\"")));
          }
          *static_cast<int64_t*>(key->target) = *v;
          break;
        }
      }
    }
  }
  c.retention_s = retention_ms / 1000;
  c.rollup_period_s = rollup_ms / 1000;
  c.rollup_retention_s = rollup_retention_ms / 1000;
  c.topology_check_s = topology_ms / 1000;
  return Status::Ok();
}

bool IsLabelName(std::string_view n) {
  if (n.empty() || n.rfind("__", 0) == 0) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    char ch = n[i];
    bool ok = ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (i > 0 && ch >= '0' && ch <= '9');
    if (!ok) return false;
  }
  return true;
}

bool IsHeaderName(std::string_view n) {
  if (n.empty()) return false;
  for (char ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) &&
        std::string_view("!#$%&'*+-.^_`|~").find(ch) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// One [[push]] entry: " key <name>: <why>" (the caller prefixes push[i]).
Status ValidatePush(const PushConfig& p) {
  if (p.url.empty()) return Status::InvalidArgument(" key url: missing");
  if (auto u = ParseUrl(p.url); !u.ok()) {
    return Status::InvalidArgument(" key url: " + u.status().message() + ", got \"" + p.url + "\"");
  }
  if (p.protocol != "remote-write" && p.protocol != "otlp") {
    return Status::InvalidArgument(" key protocol: must be remote-write or otlp");
  }
  for (const auto& [k, v] : p.headers) {
    if (!IsHeaderName(k))
      return Status::InvalidArgument(" key headers: \"" + k + "\" is no header name");
    if (v.find_first_of("\r\n") != std::string::npos) {
      return Status::InvalidArgument(" key headers." + k + ": a value must be one line");
    }
  }
  for (const auto& [k, v] : p.labels) {
    if (!IsLabelName(k)) {
      return Status::InvalidArgument(" key labels: \"" + k +
                                     "\" is no label name ([a-zA-Z_][a-zA-Z0-9_]*, not __*)");
    }
  }
  if (p.batch_size < 1 || p.batch_size > 1'000'000) {
    return Status::InvalidArgument(" key batch_size: must be between 1 and 1000000");
  }
  if (p.rate_limit < 0) return Status::InvalidArgument(" key rate_limit: must be 0 (none) or more");
  if (p.interval_ms < 100 || p.interval_ms > 86'400'000) {
    return Status::InvalidArgument(" key interval: must be between 100ms and 1d");
  }
  if (p.timeout_ms < 100 || p.timeout_ms > 600'000) {
    return Status::InvalidArgument(" key timeout: must be between 100ms and 10m");
  }
  if (p.min_backoff_ms < 10 || p.max_backoff_ms < p.min_backoff_ms ||
      p.max_backoff_ms > 86'400'000) {
    return Status::InvalidArgument(
        " keys min_backoff, max_backoff: need 10ms <= min_backoff <= max_backoff <= 1d");
  }
  if (!p.frames && !p.windows) {
    return Status::InvalidArgument(" key send: must name frames, windows or both");
  }
  if (!p.bearer_token_file.empty()) {
    auto token = ReadTokenFile(p.bearer_token_file, 16);
    if (!token.ok()) {
      return Status::InvalidArgument(" key bearer_token_file: " + token.status().message());
    }
  }
  return Status::Ok();
}

// [[push]]: an array of tables.
Status ApplyPushTables(const toml::node& node, const std::string& source, Config& c) {
  const toml::array* arr = node.as_array();
  if (arr == nullptr) {
    return Status::InvalidArgument(source + ": key push: expected [[push]] tables");
  }
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::table* t = (*arr)[i].as_table();
    const std::string at = source + ": push[" + std::to_string(i) + "]";
    if (t == nullptr) return Status::InvalidArgument(at + ": expected a table");
    PushConfig p;
    for (auto&& entry : *t) {
      // Not a structured binding: the lambdas below capture the node, which
      // clang before 16 does not allow of a binding.
      const std::string k(entry.first.str());
      const toml::node& v = entry.second;
      const std::string where = at + " key " + k;
      auto str = [&](std::string& out) -> Status {
        auto s = v.value<std::string>();
        if (!s || !v.is_string()) return Status::InvalidArgument(where + ": expected a string");
        out = *s;
        return Status::Ok();
      };
      auto integer = [&](int64_t& out) -> Status {
        auto n = v.value<int64_t>();
        if (!n || !v.is_integer()) return Status::InvalidArgument(where + ": expected an integer");
        out = *n;
        return Status::Ok();
      };
      auto duration = [&](int64_t& out) -> Status {
        if (v.is_integer()) {
          int64_t s = *v.value<int64_t>();
          if (s < 0 || __builtin_mul_overflow(s, 1000, &out)) {
            return Status::InvalidArgument(where + ": expected " + kDurationSyntax);
          }
          return Status::Ok();
        }
        auto s = v.value<std::string>();
        if (!s) return Status::InvalidArgument(where + ": expected " + kDurationSyntax);
        auto d = ParseDurationMs(*s);
        if (!d.ok()) return Status::InvalidArgument(where + ": " + d.status().message());
        out = *d;
        return Status::Ok();
      };
      auto pairs = [&](std::vector<std::pair<std::string, std::string>>& out) -> Status {
        const toml::table* kv = v.as_table();
        if (kv == nullptr) {
          return Status::InvalidArgument(where + ": expected a table of strings");
        }
        for (auto&& [name, value] : *kv) {
          auto s = value.value<std::string>();
          if (!s || !value.is_string()) {
            return Status::InvalidArgument(where + "." + std::string(name.str()) +
                                           ": expected a string");
          }
          out.emplace_back(std::string(name.str()), *s);
        }
        return Status::Ok();
      };
      Status st;
      if (k == "url") {
        st = str(p.url);
      } else if (k == "protocol") {
        st = str(p.protocol);
      } else if (k == "bearer_token_file") {
        st = str(p.bearer_token_file);
      } else if (k == "tls_ca") {
        st = str(p.tls_ca);
      } else if (k == "batch_size") {
        st = integer(p.batch_size);
      } else if (k == "rate_limit") {
        st = integer(p.rate_limit);
      } else if (k == "interval") {
        st = duration(p.interval_ms);
      } else if (k == "timeout") {
        st = duration(p.timeout_ms);
      } else if (k == "min_backoff") {
        st = duration(p.min_backoff_ms);
      } else if (k == "max_backoff") {
        st = duration(p.max_backoff_ms);
      } else if (k == "headers") {
        st = pairs(p.headers);
      } else if (k == "labels") {
        st = pairs(p.labels);
      } else if (k == "send") {
        const toml::array* what = v.as_array();
        if (what == nullptr) {
          return Status::InvalidArgument(where +
                                         ": expected a list such as [\"frames\", \"windows\"]");
        }
        p.frames = p.windows = false;
        for (const auto& e : *what) {
          auto s = e.value<std::string>();
          if (s && *s == "frames") {
            p.frames = true;
          } else if (s && *s == "windows") {
            p.windows = true;
          } else {
            return Status::InvalidArgument(where +
                                           ": each entry must be \"frames\" or \"windows\"");
          }
        }
      } else {
        return Status::InvalidArgument(where + ": unknown key");
      }
      if (!st.ok()) return st;
    }
    c.push.push_back(std::move(p));
  }
  return Status::Ok();
}

Status ValidateLines(const Config& c) {
  if (c.root.empty() || c.root.front() != '/')
    return Status::InvalidArgument("key daemon.root: must be an absolute path");
  // A missing root would run with no channels at all (sysfs read as empty).
  if (Status s = CheckRootDirectory(c.root, "key daemon.root:"); !s.ok()) return s;
  if (c.interval_ms < 10 || c.interval_ms > 3'600'000) {
    return Status::InvalidArgument("key daemon.interval_ms: must be between 10 and 3600000, got " +
                                   std::to_string(c.interval_ms));
  }
  if (c.energy_rate_hz < 0 || c.energy_rate_hz > 1000) {
    return Status::InvalidArgument("key daemon.energy_rate_hz: must be between 0 and 1000, got " +
                                   std::to_string(c.energy_rate_hz));
  }
  if (c.topology_check_s < 1 || c.topology_check_s > 86400) {
    return Status::InvalidArgument("key daemon.topology_check: must be between 1s and 1d");
  }
  if (c.listen.rfind("unix:", 0) != 0 && c.listen.find(':') == std::string::npos) {
    return Status::InvalidArgument("key daemon.listen: expected unix:/path or host:port, got \"" +
                                   c.listen + "\"");
  }
  if (c.listen.rfind("unix:", 0) == 0 && c.listen.size() <= 5) {
    return Status::InvalidArgument("key daemon.listen: the unix socket path is empty");
  }
  if (!c.tcp_listen.empty()) {
    auto colon = c.tcp_listen.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == c.tcp_listen.size() ||
        c.tcp_listen.rfind("unix:", 0) == 0) {
      return Status::InvalidArgument("key daemon.tcp_listen: expected host:port, got \"" +
                                     c.tcp_listen + "\"");
    }
  }
  if (!c.tcp_listen.empty() && c.listen.rfind("unix:", 0) != 0) {
    return Status::InvalidArgument(
        "key daemon.tcp_listen: daemon.listen is already a TCP address; use one of them");
  }
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    return Status::InvalidArgument("keys daemon.tls_cert and daemon.tls_key: set both or neither");
  }
  if (!c.tcp_token_file.empty() && c.tcp_listen.empty() && c.listen.rfind("unix:", 0) == 0) {
    return Status::InvalidArgument(
        "key daemon.tcp_token_file: there is no TCP listener to protect (set "
        "daemon.tcp_listen)");
  }
  for (const std::string* addr : {&c.listen, &c.tcp_listen}) {
    if (addr->empty() || addr->rfind("unix:", 0) == 0 || !c.tls_cert.empty()) continue;
    // An IP literal judged by its value, or "localhost"; any other name could
    // resolve anywhere ("127.0.0.1.example.test"), and an empty host binds
    // every address.
    auto hp = addr->front() == ':' ? Result<HostPort>(Status::InvalidArgument("no host"))
                                   : ParseHostPort(*addr);
    if (!hp.ok() || !hp->loopback) {
      return Status::InvalidArgument(
          std::string("key daemon.") + (addr == &c.listen ? "listen" : "tcp_listen") + ": " +
          *addr +
          " is not a loopback address; refusing plain-text TCP (set daemon.tls_cert and "
          "daemon.tls_key)");
    }
  }
  if (auto hp =
          c.metrics_listen.empty() ? Result<HostPort>(HostPort{}) : ParseHostPort(c.metrics_listen);
      !hp.ok()) {
    return Status::InvalidArgument("key daemon.metrics_listen: " + hp.status().message() +
                                   ", got \"" + c.metrics_listen + "\"");
  }
  if (!c.metrics_token_file.empty() && c.metrics_listen.empty()) {
    return Status::InvalidArgument(
        "key daemon.metrics_token_file: there is no HTTP listener to protect (set "
        "daemon.metrics_listen)");
  }
  if (c.max_streams < 1 || c.max_streams > 100'000) {
    return Status::InvalidArgument("key daemon.max_streams: must be between 1 and 100000, got " +
                                   std::to_string(c.max_streams));
  }
  if (c.nvml != "auto" && c.nvml != "on" && c.nvml != "off") {
    return Status::InvalidArgument("key daemon.nvml: must be auto, on or off");
  }
  const char* levels[] = {"trace", "debug", "info", "warn", "error"};
  bool level_ok = false;
  for (auto* l : levels) level_ok = level_ok || c.log_level == l;
  if (!level_ok)
    return Status::InvalidArgument(
        "key daemon.log_level: must be trace, debug, info, warn or error");
  if (c.db_path.empty()) return Status::InvalidArgument("key store.path: must not be empty");
  // Upper bounds keep every later product in nanoseconds inside int64.
  constexpr int64_t kTenYears = 3650LL * 86400;
  if (c.retention_s < 60 || c.retention_s > kTenYears) {
    return Status::InvalidArgument("key store.retention: must be between 1m and 3650d");
  }
  if (c.max_db_bytes < (1 << 20) || c.max_db_bytes > (1LL << 40)) {
    return Status::InvalidArgument("key store.max_size: must be between 1MiB and 1TiB");
  }
  if (c.rollup_period_s < 1 || c.rollup_period_s > 86400) {
    return Status::InvalidArgument("key store.rollup_period: must be between 1s and 1d");
  }
  if (c.rollup_retention_s < c.rollup_period_s) {
    return Status::InvalidArgument(
        "key store.rollup_retention: must be at least one rollup_period");
  }
  if (c.rollup_retention_s > kTenYears) {
    return Status::InvalidArgument("key store.rollup_retention: must be at most 3650d");
  }
  if ((c.commit_interval_ms < 0 && c.commit_interval_ms != kCommitIntervalAuto) ||
      c.commit_interval_ms > 600'000) {
    return Status::InvalidArgument(
        "key store.commit_interval_ms: must be between 0 and 600000, or -1 (automatic)");
  }
  if (c.rollup_write_frames < 0 || c.rollup_write_frames > 1'000'000) {
    return Status::InvalidArgument("key store.rollup_write_frames: must be between 0 and 1000000");
  }
  for (size_t i = 0; i < c.push.size(); ++i) {
    if (Status s = ValidatePush(c.push[i]); !s.ok()) {
      return Status::InvalidArgument("push[" + std::to_string(i) + "]" + s.message());
    }
  }
  return Status::Ok();
}

}  // namespace

}  // namespace edgemon::runtime
