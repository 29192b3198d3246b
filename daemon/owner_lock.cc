#include "daemon/owner_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace edgemon {

OwnerLock::~OwnerLock() {
  if (fd_ >= 0) ::close(fd_);
}

Status OwnerLock::Acquire(const std::string& db_path) {
  const std::string path = db_path + ".lock";
  std::error_code ec;
  auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    return Status::Unavailable("cannot open lock file " + path + ": " + std::strerror(errno));
  }
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_SETLK, &fl) != 0) {
    int err = errno;
    struct flock holder {};
    holder.l_type = F_WRLCK;
    holder.l_whence = SEEK_SET;
    std::string who;
    if (::fcntl(fd, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK) {
      who = " by pid " + std::to_string(holder.l_pid);
    }
    ::close(fd);
    if (err == EACCES || err == EAGAIN) {
      return Status::FailedPrecondition("the store " + db_path + " is in use" + who +
                                        " (another edgemond?); one daemon per database");
    }
    return Status::Unavailable("cannot lock " + path + ": " + std::strerror(err));
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without the pid in the file; F_GETLK names the holder.
  }
  fd_ = fd;
  return Status::Ok();
}

}  // namespace edgemon
