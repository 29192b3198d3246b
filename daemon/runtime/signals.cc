#include "daemon/runtime/signals.h"

#include <pthread.h>
#include <sys/signalfd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace edgemon::runtime {

Result<int> OpenSignalFd(std::initializer_list<int> signals) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : signals) sigaddset(&mask, sig);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
  if (sfd < 0) return Status::Internal(std::string("signalfd: ") + std::strerror(errno));
  return sfd;
}

}  // namespace edgemon::runtime
