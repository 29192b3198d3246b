#include "daemon/collect/sysfs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>

namespace edgemon {
namespace {

// The root's canonical path without a trailing slash ("" for "/").
std::string CanonicalRoot(std::string root) {
  char buf[PATH_MAX];
  if (::realpath(root.c_str(), buf) != nullptr) root = buf;
  while (!root.empty() && root.back() == '/') root.pop_back();
  return root;
}

}  // namespace

RootedSysFs::RootedSysFs(std::string root)
    : root_(CanonicalRoot(std::move(root))), confined_(root_) {}

RootedSysFs::~RootedSysFs() {
  for (auto& s : slots_) {
    if (s.fd >= 0) ::close(s.fd);
  }
}

std::string RootedSysFs::Real(const std::string& path) const {
  return root_ + path;
}

namespace {

// pread(fd, buf, cap, 0) without glibc's cancellation point: in a process
// with more than one thread, glibc's pread switches the thread to
// asynchronous cancellation and back around the call (two atomic updates per
// read, dozens of reads a frame), and the daemon never cancels a thread. On
// 64-bit targets the offset is one register, so the raw call is portable.
ssize_t PreadAtZero(int fd, char* buf, size_t cap) {
#if defined(__LP64__) && defined(SYS_pread64)
  return static_cast<ssize_t>(::syscall(SYS_pread64, fd, buf, cap, 0L));
#else
  return ::pread(fd, buf, cap, 0);
#endif
}

// Kernel pseudo-filesystems: their value files are never replaced by rename.
bool IsKernelTree(const std::string& path) {
  return path.rfind(SysPath(""), 0) == 0 || path.rfind(ProcPath(""), 0) == 0;
}

}  // namespace

// Opens a file below the root for reading through ConfinedRoot: a regular
// file only (a FIFO or a device could block the sampler or never end), and,
// under a root other than "/", only when its symlinks resolve inside the
// root. Returns fd or -errno.
int RootedSysFs::OpenRegular(const std::string& path, struct stat* st) const {
  int fd = confined_.Open(path, O_RDONLY, ConfinedRoot::Last::kFollow);
  if (fd >= 0 && ::fstat(fd, st) != 0) {
    const int err = errno;
    ::close(fd);
    return -err;
  }
  return fd;
}

FileId RootedSysFs::Open(const std::string& path) {
  struct stat st {};
  int fd = OpenRegular(path, &st);
  if (fd < 0) return fd;
  FileId id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<FileId>(slots_.size());
    slots_.emplace_back();
  }
  slots_[id] = Slot{fd, path, !IsKernelTree(path), st.st_dev, st.st_ino};
  return id;
}

void RootedSysFs::Close(FileId id) {
  if (id < 0 || static_cast<size_t>(id) >= slots_.size() || slots_[id].fd < 0) return;
  ::close(slots_[id].fd);
  slots_[id] = Slot{};
  free_.push_back(id);
}

ssize_t RootedSysFs::Read(FileId id, char* buf, size_t cap) {
  if (id < 0 || static_cast<size_t>(id) >= slots_.size() || slots_[id].fd < 0) return -EBADF;
  Slot& slot = slots_[id];
  if (slot.replaceable) {
    // A file such as /var/lib/nvpmodel/status is rewritten by rename: follow
    // the path to the new file instead of reading the old one forever.
    struct stat now {};
    if (::stat(Real(slot.path).c_str(), &now) == 0 &&
        (now.st_ino != slot.ino || now.st_dev != slot.dev)) {
      struct stat st {};
      int fd = OpenRegular(slot.path, &st);
      if (fd < 0) return fd;
      ::close(slot.fd);
      slot.fd = fd;
      slot.dev = st.st_dev;
      slot.ino = st.st_ino;
    }
  }
  ssize_t n;
  do {
    n = PreadAtZero(slots_[id].fd, buf, cap);
  } while (n < 0 && errno == EINTR);
  return n < 0 ? -errno : n;
}

std::optional<std::string> RootedSysFs::ReadText(const std::string& path, size_t max_bytes) {
  struct stat st {};
  int fd = OpenRegular(path, &st);
  if (fd < 0) {
    errno = -fd;
    return std::nullopt;
  }
  std::string out;
  char buf[8192];
  int err = 0;
  while (out.size() < max_bytes) {
    ssize_t n = ::read(fd, buf, std::min(sizeof buf, max_bytes - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
      break;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (err != 0) {
    errno = err;
    return std::nullopt;
  }
  return out;
}

std::vector<std::string> RootedSysFs::List(const std::string& dir) {
  auto names = confined_.List(dir);
  return names.ok() ? std::move(*names) : std::vector<std::string>{};
}

std::optional<std::string> RootedSysFs::Resolve(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(Real(path).c_str(), buf) == nullptr) return std::nullopt;
  std::string_view real = buf;
  if (root_.empty()) return std::string(real);
  if (real.substr(0, root_.size()) != root_) return std::nullopt;
  real.remove_prefix(root_.size());
  if (real.empty()) return std::string("/");
  if (real.front() != '/') return std::nullopt;  // a sibling of the root, not inside it
  return std::string(real);
}

bool RootedSysFs::Exists(const std::string& path) {
  struct stat st;
  return ::stat(Real(path).c_str(), &st) == 0;
}

bool RootedSysFs::IsDir(const std::string& path) {
  struct stat st;
  return ::stat(Real(path).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> RootedSysFs::OpenPaths() const {
  std::vector<std::string> out;
  for (const auto& s : slots_) {
    if (s.fd >= 0) out.push_back(s.path);
  }
  return out;
}

}  // namespace edgemon
