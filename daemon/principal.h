// Principal: who asked. Every lease and window belongs to the principal that
// made it; only that principal (or a privileged one, root) may renew or end
// it, and per-principal quotas keep one caller from filling a table that all
// callers share.
//
// Keys: "uid:N" for a caller on the unix socket (SO_PEERCRED at accept),
// "tcp:HOST" for a caller over TCP (authenticated by TLS or the bearer
// token, one principal per remote address), else the transport's own peer
// name. Only uid 0 is privileged.
#pragma once

#include <string>

namespace edgemon {

struct Principal {
  std::string key;
  bool privileged = false;

  // May `who` act on something that belongs to `owner`? Its owner and root
  // may; an empty owner (written before owners were recorded) is anyone's.
  static bool MayActOn(const Principal& who, const std::string& owner) {
    return who.privileged || owner.empty() || owner == who.key;
  }
};

}  // namespace edgemon
