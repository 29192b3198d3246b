// OwnerLock: one owner per file, decided by the file's identity.
//
// edgemond takes three of them, in this order, before it touches anything:
//   1. "<socket>.lock" beside its unix socket: whoever holds it owns the
//      socket path, the flight recorder beside it and the right to replace a
//      stale socket file, so two daemons started at once on one socket never
//      both run (the old check-then-bind race);
//   2. the database file itself: every path to the store (a symlink, a hard
//      link, "a/../a") reaches the same inode and so the same lock;
//   3. the flight recorder's ring file itself (FlightRecorder::Open).
// Each is an exclusive flock(2) on the file: the kernel drops it when the
// process exits, however it exits, so a crash leaves nothing stale behind.
//
// flock locks are independent of the POSIX record locks SQLite takes on the
// same database file, and the descriptor holding the lock stays open for the
// daemon's whole life (closing it would drop SQLite's POSIX locks too; it is
// closed only after the store is closed).
//
// Thread safety: construct and destroy on one thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "edgemon/status.h"

namespace edgemon::runtime {

class OwnerLock {
 public:
  OwnerLock() = default;
  ~OwnerLock();
  OwnerLock(const OwnerLock&) = delete;
  OwnerLock& operator=(const OwnerLock&) = delete;

  // Locks the file at `path` (created 0600, with its directory, when
  // absent; a symlink is followed). `what` names it in messages ("the store
  // /var/lib/edgemon/edgemon.db"). FAILED_PRECONDITION when another process
  // holds it (naming that process where /proc/locks tells), when `path` is
  // not a regular file (a device, a FIFO, a directory), UNAVAILABLE when it
  // cannot be opened. A lock already held is released first.
  Status Acquire(const std::string& path, const std::string& what);
  // Whether `path` names the locked file now (same device and inode).
  bool Names(const std::string& path) const;
  // The locked file's device and inode folded into one number (0: none).
  uint64_t Identity() const;
  void Release();

 private:
  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace edgemon::runtime
