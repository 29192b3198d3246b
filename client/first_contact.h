// What a failed first call to edgemond means and what to do next, in one
// line: no daemon, a path that is no socket, a socket the caller may not
// open (the `edgemon` group), a wrong address, TLS, a token, an older daemon.
// Used by edgemon (every subcommand's first call) and edgetop; the Python
// package says the same (client/python/edgemon/_errors.py).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "edgemon/addresses.h"
#include "edgemon/groups.h"
#include "edgemon/status.h"

namespace edgemon::client {

namespace first_contact {

inline bool Has(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// The group of `path`'s inode, by name ("" when unknown): the local group
// database, which the static build reads without NSS (edgemon/groups.h).
inline std::string GroupOf(const struct stat& st) {
  return LocalGroupName(st.st_gid).value_or("");
}

// Whether the caller's login ($USER) is a member of group `gid` in the group
// database; ProcessHasGroup: whether this process has it (fixed at login).
inline bool ListedInGroup(gid_t gid) {
  const char* user = std::getenv("USER");
  if (user == nullptr || *user == '\0') user = std::getenv("LOGNAME");
  return user != nullptr && *user != '\0' && LocalGroupHasMember(gid, user);
}

inline bool ProcessHasGroup(gid_t gid) {
  if (getegid() == gid) return true;
  int n = getgroups(0, nullptr);
  if (n <= 0) return false;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  n = getgroups(n, groups.data());
  for (int i = 0; i < n; ++i) {
    if (groups[static_cast<size_t>(i)] == gid) return true;
  }
  return false;
}

inline constexpr const char* kStart =
    "start edgemond (`sudo systemctl start edgemond`, or as yourself: `edgemond --listen "
    "unix:$XDG_RUNTIME_DIR/edgemon.sock`), or set EDGEMON_CONNECT (or --connect) to the "
    "socket or host:port of the daemon that runs";

// The reason a unix socket at `path` refused a connection, with the remedy.
inline std::string UnixSocket(const std::string& path, const Status& s) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == EACCES) {
      // A directory on the way shuts us out: its group is the one to join.
      std::string dir = path.substr(0, path.rfind('/'));
      struct stat ds {};
      if (!dir.empty() && stat(dir.c_str(), &ds) == 0) st = ds;
    } else {
      return "no socket there (edgemond is not running, or listens elsewhere): " +
             std::string(kStart);
    }
  } else if (!S_ISSOCK(st.st_mode)) {
    return "that path is not a socket: set EDGEMON_CONNECT (or --connect) to edgemond's socket "
           "(`listen` in /etc/edgemon/edgemond.toml, default " +
           std::string(kDefaultTarget) + ")";
  }
  if (s.code() == StatusCode::kPermissionDenied || Has(s.message(), "Permission denied")) {
    const std::string group = GroupOf(st);
    if (group.empty() || getuid() == 0) {
      return "permission denied on the socket: ask the administrator for access to it";
    }
    if (ListedInGroup(st.st_gid) && !ProcessHasGroup(st.st_gid)) {
      return "permission denied: you are in the `" + group +
             "` group, but not in this login session yet: log out and in again (or run `newgrp " +
             group + "`)";
    }
    return "permission denied: only members of the `" + group +
           "` group may connect: join it (`sudo usermod -aG " + group +
           " $USER`), then log out and in again";
  }
  if (Has(s.message(), "Connection refused")) {
    return "nothing listens on that socket (edgemond stopped?): " + std::string(kStart);
  }
  return "";
}

}  // namespace first_contact

// One line: what happened at `target` (as normalized: unix:/path or
// host:port) and what to do next; "" where `s` names no first-contact
// failure this knows (the caller then prints the status as it is).
inline std::string FirstContactAdvice(const std::string& target, const Status& s) {
  using first_contact::Has;
  const std::string& m = s.message();
  switch (s.code()) {
    case StatusCode::kUnauthenticated:
      if (Has(m, "wrong bearer token")) {
        return "the daemon refused the bearer token: give the token in the daemon's "
               "`tcp_token_file` with --token-file FILE (or EDGEMON_TOKEN_FILE)";
      }
      return "the daemon wants a bearer token on this listener: pass --token-file FILE (or set "
             "EDGEMON_TOKEN_FILE) with the token in the daemon's `tcp_token_file`";
    case StatusCode::kUnimplemented:
      return "the daemon is older than this client and lacks this call: upgrade edgemond to "
             "the same version as the client (see `edgemon --version`)";
    case StatusCode::kUnavailable:
    case StatusCode::kPermissionDenied:
    case StatusCode::kDeadlineExceeded:
      break;
    default:
      return "";
  }
  if (target.rfind("unix:", 0) == 0) {
    if (s.code() == StatusCode::kDeadlineExceeded) {
      return "the daemon did not answer in time (overloaded or stopped?): check `systemctl "
             "status edgemond`, or raise --timeout-ms";
    }
    return first_contact::UnixSocket(target.substr(5), s);
  }
  if (Has(m, "andshake") || Has(m, "SSL") || Has(m, "ssl") || Has(m, "ertificate") ||
      Has(m, "TLS")) {
    return "the TLS handshake failed: trust the daemon's certificate with --tls-ca FILE, check "
           "the name it was issued for (--tls-server-name NAME), or drop --tls for a plain "
           "listener";
  }
  if (Has(m, "DNS") || Has(m, "resolve") || Has(m, "Name or service not known")) {
    return "the host name does not resolve: check the address in --connect or EDGEMON_CONNECT";
  }
  if (Has(m, "Connection refused")) {
    return "nothing listens on that host and port: check the address in --connect or "
           "EDGEMON_CONNECT, and that edgemond runs with `tcp_listen` set to it";
  }
  if (Has(m, "Socket closed") || Has(m, "Connection reset") || Has(m, "EOF")) {
    return "the connection was closed at once: if the daemon listens with TLS, add --tls or "
           "--tls-ca FILE; else check the address in --connect or EDGEMON_CONNECT";
  }
  if (s.code() == StatusCode::kDeadlineExceeded) {
    return "no answer in time: check the address in --connect or EDGEMON_CONNECT, the network "
           "and any firewall, or raise --timeout-ms";
  }
  return "";
}

}  // namespace edgemon::client
