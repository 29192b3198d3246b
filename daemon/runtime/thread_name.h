// NameThread: a name for each of the daemon's own threads, as ps -L, top -H
// and /proc/PID/task/*/comm show it, so that its CPU can be told apart
// (sampler, store writer, workers) from gRPC's threads. Linux keeps 15
// bytes of it.
#pragma once

#include <pthread.h>

#include <thread>

namespace edgemon::runtime {

inline void NameThread(std::thread& t, const char* name) {
  // Fails only for a name over 15 bytes: the thread keeps its old name.
  (void)::pthread_setname_np(t.native_handle(), name);
}

}  // namespace edgemon::runtime
