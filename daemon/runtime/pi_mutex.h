// PiMutex: a mutex with priority inheritance, for the locks the sampler
// shares with the threads that serve requests (the latest frame, the live
// energy counters, the sampler's timeline, leases and rate log). The sampler
// runs ahead of those threads (10 nice levels above them, real-time with
// daemon.realtime, or they 10 levels below it: thread_priority.h): with a
// plain mutex, a request thread preempted
// while it holds the lock would keep the sampler waiting behind every
// runnable process of normal priority (priority inversion). With
// PTHREAD_PRIO_INHERIT the kernel runs the holder at the waiting sampler's
// priority until it unlocks; uncontended, it costs what a plain mutex costs
// (one atomic operation each way, no system call).
//
// Lockable: std::lock_guard, std::unique_lock and std::condition_variable_any
// take it.
#pragma once

#include <pthread.h>

#include <cerrno>
#include <system_error>

namespace edgemon::runtime {

class PiMutex {
 public:
  PiMutex() {
    pthread_mutexattr_t a;
    ::pthread_mutexattr_init(&a);
    // Where the C library lacks priority inheritance this stays a plain mutex.
    (void)::pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
    const int rc = ::pthread_mutex_init(&m_, &a);
    ::pthread_mutexattr_destroy(&a);
    if (rc != 0) throw std::system_error(rc, std::generic_category(), "pthread_mutex_init");
  }
  ~PiMutex() { ::pthread_mutex_destroy(&m_); }
  PiMutex(const PiMutex&) = delete;
  PiMutex& operator=(const PiMutex&) = delete;

  void lock() {
    if (const int rc = ::pthread_mutex_lock(&m_); rc != 0) {
      throw std::system_error(rc, std::generic_category(), "pthread_mutex_lock");
    }
  }
  bool try_lock() { return ::pthread_mutex_trylock(&m_) == 0; }
  void unlock() { ::pthread_mutex_unlock(&m_); }

 private:
  pthread_mutex_t m_;
};

}  // namespace edgemon::runtime
