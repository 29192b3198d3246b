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

#include <cstddef>
#include <map>
#include <string>

namespace edgemon::runtime {

struct Principal {
  std::string key;
  bool privileged = false;

  // May `who` act on something that belongs to `owner`? Its owner and root
  // may; an empty owner (written before owners were recorded) is anyone's.
  static bool MayActOn(const Principal& who, const std::string& owner) {
    return who.privileged || owner.empty() || owner == who.key;
  }
};

// Whether `who` may add one entry to a table every principal shares
// (rate leases, open windows), and at whose cost.
struct Room {
  enum class Verdict {
    kAdd,        // there is room
    kOverQuota,  // `who` already holds per_principal entries (never when privileged)
    kFull,       // the table is full and `who` is its biggest holder
    kTakeFrom,   // the table is full: `victim`, its biggest holder, gives up its oldest entry
  };
  Verdict verdict = Verdict::kAdd;
  size_t held = 0;     // entries `who` holds now
  std::string victim;  // kTakeFrom
};

// `held`: entries per principal key now; `capacity`: the table's size.
inline Room RoomFor(const Principal& who, const std::map<std::string, size_t>& held,
                    size_t capacity, size_t per_principal) {
  Room room;
  size_t total = 0;
  const std::pair<const std::string, size_t>* most = nullptr;
  for (const auto& entry : held) {
    total += entry.second;
    if (most == nullptr || entry.second > most->second) most = &entry;
  }
  if (auto it = held.find(who.key); it != held.end()) room.held = it->second;
  if (!who.privileged && room.held >= per_principal) {
    room.verdict = Room::Verdict::kOverQuota;
  } else if (total >= capacity) {
    if (most == nullptr || most->first == who.key) {
      room.verdict = Room::Verdict::kFull;
    } else {
      room.verdict = Room::Verdict::kTakeFrom;
      room.victim = most->first;
    }
  }
  return room;
}

}  // namespace edgemon::runtime
