// Unix sockets and loopback listeners, for every program that serves one
// (edgemond's API and feed, edgemon-control): claiming a socket path without
// replacing a live one, the socket's directory, and the loopback checks made
// before and after a TCP bind.
//
// Thread safety: free functions with no state of their own.
#pragma once

#include <sys/socket.h>

#include <string>

#include "edgemon/status.h"

namespace edgemon::runtime {

// True when `sa` is an IPv4 127.0.0.0/8, IPv6 ::1 or ::ffff:127.x.y.z address.
bool IsLoopbackAddress(const sockaddr* sa);

// True when `host_port`'s host is a loopback IP literal (127.0.0.0/8, ::1,
// ::ffff:127.0.0.0/104) or "localhost" (what it bound to is checked after
// bind). Any other name, the empty host (every address) or a non-loopback
// address is false.
bool IsLoopback(const std::string& host_port);

// Creates the unix socket's directory (0755) when it is missing. OK, else an
// error in one line. The socket and the flight recorder beside it share it.
Status MakeSocketDirectory(const std::string& unix_path);

// A live socket is never replaced: OK when `path` is free or held by a stale
// socket file (then removed), else one line (ALREADY_EXISTS when taken).
// `type` is the socket type served there (SOCK_STREAM, SOCK_SEQPACKET).
Status ClaimUnixPath(const std::string& path, int type = SOCK_STREAM);

// After bind: every listening TCP socket of this process on `port` has a
// loopback local address (getsockname), whatever the resolver said.
bool ListensOnlyOnLoopback(int port);

}  // namespace edgemon::runtime
