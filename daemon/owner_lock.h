// OwnerLock: one daemon per store. A second edgemond on the same database
// would interleave frames and fight over sequence numbers, so the daemon
// takes an exclusive POSIX record lock on "<db>.lock" (created 0600 beside
// the database, holding the owner's pid) before it opens the store, and
// keeps it for its whole life. The kernel drops the lock when the process
// exits, however it exits, so a crash never leaves a stale lock behind.
//
// The lock lives in its own file because SQLite takes and drops POSIX locks
// on the database file itself, and closing any descriptor of a file drops
// all of a process's POSIX locks on it.
//
// Thread safety: construct and destroy on one thread.
#pragma once

#include <string>

#include "edgemon/status.h"

namespace edgemon {

class OwnerLock {
 public:
  OwnerLock() = default;
  ~OwnerLock();
  OwnerLock(const OwnerLock&) = delete;
  OwnerLock& operator=(const OwnerLock&) = delete;

  // Locks "<db_path>.lock". FAILED_PRECONDITION naming the process that
  // holds it, or UNAVAILABLE saying why the lock file cannot be used.
  Status Acquire(const std::string& db_path);

 private:
  int fd_ = -1;
};

}  // namespace edgemon
