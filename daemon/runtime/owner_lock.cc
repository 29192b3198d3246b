#include "daemon/runtime/owner_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "daemon/collect/sysfs.h"
#include "edgemon/secret_file.h"

namespace edgemon::runtime {
namespace {

// The pid /proc/locks names as holding a flock on (dev, ino), else 0.
pid_t FlockHolder(dev_t dev, ino_t ino) {
  auto text = ReadWholeFile(HostProcPath("locks"));
  if (!text) return 0;
  char want[64];
  std::snprintf(want, sizeof want, "%02x:%02x:%" PRIu64, major(dev), minor(dev),
                static_cast<uint64_t>(ino));
  size_t at = 0;
  while (at < text->size()) {
    size_t end = text->find('\n', at);
    if (end == std::string::npos) end = text->size();
    const std::string line = text->substr(at, end - at);
    at = end + 1;
    // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
    char type[16] = {}, id[64] = {};
    long pid = 0;
    if (std::sscanf(line.c_str(), "%*[^:]: %15s %*s %*s %ld %63s", type, &pid, id) == 3 &&
        std::strcmp(type, "FLOCK") == 0 && std::strcmp(id, want) == 0 && pid > 0) {
      return static_cast<pid_t>(pid);
    }
  }
  return 0;
}

}  // namespace

OwnerLock::~OwnerLock() {
  Release();
}

void OwnerLock::Release() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  dev_ = 0;
  ino_ = 0;
}

Status OwnerLock::Acquire(const std::string& path, const std::string& what) {
  Release();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return Status::FailedPrecondition(what + " is not a regular file");
  }
  std::error_code ec;
  auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0600);
  if (fd < 0) {
    return Status::Unavailable("cannot open " + what + ": " + std::strerror(errno));
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {  // replaced between stat and open
    ::close(fd);
    return Status::FailedPrecondition(what + " is not a regular file");
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      const pid_t holder = FlockHolder(st.st_dev, st.st_ino);
      return Status::FailedPrecondition(what + " is in use" +
                                        (holder > 0 ? " by pid " + std::to_string(holder) : "") +
                                        " (another edgemond?)");
    }
    return Status::Unavailable("cannot lock " + what + ": " + std::strerror(err));
  }
  fd_ = fd;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  return Status::Ok();
}

bool OwnerLock::Names(const std::string& path) const {
  struct stat st {};
  return fd_ >= 0 && ::stat(path.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
}

uint64_t OwnerLock::Identity() const {
  if (fd_ < 0) return 0;
  return (static_cast<uint64_t>(dev_) * 0x9E3779B97F4A7C15ull) ^ static_cast<uint64_t>(ino_);
}

}  // namespace edgemon::runtime
