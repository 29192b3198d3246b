#include "daemon/collect/confined.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "daemon/collect/sysfs.h"

#ifndef SYS_openat2
#define SYS_openat2 437  // the same number on every architecture
#endif

namespace edgemon {
namespace {

constexpr int kMaxLinks = 40;  // as the kernel's MAXSYMLINKS
// Every open: no controlling terminal, not inherited, never waiting on a FIFO.
constexpr int kOpenFlags = O_CLOEXEC | O_NOCTTY | O_NONBLOCK;

// Closes an fd at scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&&) = delete;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

int Errno() {
  return errno != 0 ? errno : EIO;
}

long Openat2(int dirfd, const char* path, int flags, uint64_t resolve) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.resolve = resolve;
  return ::syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

// One probe per process: ENOSYS (before 5.6), or EPERM/EINVAL from a seccomp
// filter or an old ABI, means the walk is used for every open.
bool HaveOpenat2() {
  static const bool have = [] {
    long fd = Openat2(AT_FDCWD, ".", O_PATH | O_CLOEXEC, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
    if (fd < 0) return false;
    ::close(static_cast<int>(fd));
    return true;
  }();
  return have;
}

// Pushes the components of `path` onto a stack of names still to resolve,
// the first component on top.
void PushComponents(std::vector<std::string>& todo, std::string_view path) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    if (!part.empty() && part != ".") parts.emplace_back(part);
    i = j + 1;
  }
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo.push_back(std::move(*it));
}

// "/sys/class" -> "sys/class"; "" or "/" -> ".".
std::string Relative(std::string_view path) {
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  return path.empty() ? std::string(".") : std::string(path);
}

}  // namespace

ConfinedRoot::ConfinedRoot(std::string root, Resolver resolver) : resolver_(resolver) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty()) root.push_back('/');  // not = "/": GCC 12 -O3 warns (-Wrestrict)
  root_ = std::move(root);
  confined_ = root_ != "/";
}

std::string ConfinedRoot::Real(std::string_view path) const {
  if (!confined_) return path.empty() ? root_ : std::string(path);
  return root_ + (path.empty() || path.front() == '/' ? "" : "/") + std::string(path);
}

bool ConfinedRoot::UsesOpenat2() const {
  return resolver_ == Resolver::kAuto && HaveOpenat2();
}

// The walk: what openat2's RESOLVE_BENEATH does, by hand. Each directory on
// the way is opened O_PATH | O_NOFOLLOW from the one before, so a directory
// on the stack is the physical child of the one below it and ".." is the
// stack's pop; a symlink is read (readlinkat on its O_PATH fd) and its
// target resolved from the directory holding it; an absolute target or a
// ".." below the root leaves the root (-EXDEV).
int ConfinedRoot::Walk(int root_fd, std::string_view path, int flags, Last last) const {
  std::vector<std::string> todo;
  PushComponents(todo, path);
  std::vector<Fd> dirs;
  dirs.emplace_back(::fcntl(root_fd, F_DUPFD_CLOEXEC, 0));
  if (dirs.back().get() < 0) return -Errno();
  int links = 0;
  while (!todo.empty()) {
    const std::string name = std::move(todo.back());
    todo.pop_back();
    if (name == "..") {
      if (dirs.size() == 1) return -EXDEV;
      dirs.pop_back();
      continue;
    }
    const bool final = todo.empty();
    const int dir = dirs.back().get();
    if (final && last == Last::kNoFollow) {
      int fd = ::openat(dir, name.c_str(), flags | O_NOFOLLOW);
      return fd < 0 ? -Errno() : fd;
    }
    Fd node(::openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (node.get() < 0) return -Errno();
    struct stat st {};
    if (::fstat(node.get(), &st) != 0) return -Errno();
    if (S_ISLNK(st.st_mode)) {
      if (++links > kMaxLinks) return -ELOOP;
      char target[PATH_MAX];
      ssize_t n = ::readlinkat(node.get(), "", target, sizeof target);
      if (n < 0) return -Errno();
      if (static_cast<size_t>(n) >= sizeof target) return -ENAMETOOLONG;
      if (n == 0) return -ENOENT;
      if (target[0] == '/') return -EXDEV;
      PushComponents(todo, std::string_view(target, static_cast<size_t>(n)));
      continue;
    }
    if (final) {
      // Not a link a moment ago: O_NOFOLLOW keeps it so.
      int fd = ::openat(dir, name.c_str(), flags | O_NOFOLLOW);
      return fd < 0 ? -Errno() : fd;
    }
    if (!S_ISDIR(st.st_mode)) return -ENOTDIR;
    dirs.push_back(std::move(node));
  }
  // The path named a directory on the stack ("", ".", "a/..").
  int fd = ::openat(dirs.back().get(), ".", flags);
  return fd < 0 ? -Errno() : fd;
}

int ConfinedRoot::Resolve(std::string_view path, int flags, Last last) const {
  // openat2 refuses O_PATH with any flag but O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW.
  flags |= (flags & O_PATH) != 0 ? O_CLOEXEC : kOpenFlags;
  Fd root_fd(::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root_fd.get() < 0) return -Errno();
  const std::string rel = Relative(path);
  if (UsesOpenat2()) {
    const uint64_t resolve = RESOLVE_NO_MAGICLINKS | (confined_ ? RESOLVE_BENEATH : 0);
    const int with = flags | (last == Last::kNoFollow ? O_NOFOLLOW : 0);
    for (int attempt = 0; attempt < 3; ++attempt) {
      long fd = Openat2(root_fd.get(), rel.c_str(), with, resolve);
      if (fd >= 0) return static_cast<int>(fd);
      if (errno != EAGAIN) return -Errno();  // EAGAIN: a rename raced the walk
    }
    return -EAGAIN;
  }
  if (!confined_) {
    int fd =
        ::openat(root_fd.get(), rel.c_str(), flags | (last == Last::kNoFollow ? O_NOFOLLOW : 0));
    return fd < 0 ? -Errno() : fd;
  }
  return Walk(root_fd.get(), rel, flags, last);
}

int ConfinedRoot::Open(std::string_view path, int flags, Last last) const {
  // Look before opening: a device or FIFO is never opened at all.
  {
    Fd probe(Resolve(path, O_PATH, last));
    if (probe.get() < 0) return probe.get();
    struct stat st {};
    if (::fstat(probe.get(), &st) != 0) return -Errno();
    if (S_ISLNK(st.st_mode)) return -ELOOP;  // O_PATH | O_NOFOLLOW opens the link itself
    if (!S_ISREG(st.st_mode)) return -EINVAL;
  }
  Fd fd(Resolve(path, flags, last));
  if (fd.get() < 0) return fd.get() == -ENXIO ? -EINVAL : fd.get();  // swapped for a FIFO
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return -Errno();
  if (!S_ISREG(st.st_mode)) return -EINVAL;
  return fd.release();
}

int ConfinedRoot::OpenDir(std::string_view path) const {
  return Resolve(path, O_RDONLY | O_DIRECTORY, Last::kFollow);
}

std::string ConfinedRoot::Why(int err) const {
  if (err < 0) err = -err;
  switch (err) {
    case ELOOP:
      return "it is a symbolic link (a value file is never reached through one)";
    case EXDEV:
      return "it leads out of " + root_;
    case EINVAL:
      return "it is not a regular file (a FIFO, socket, device or directory is never opened)";
    case EFBIG:
      return "it is larger than " + std::to_string(kMaxRead) + " bytes";
    default:
      return std::strerror(err);
  }
}

Result<std::string> ConfinedRoot::ReadText(std::string_view path, size_t max_bytes,
                                           Last last) const {
  max_bytes = std::min(max_bytes, kMaxRead);
  Fd fd(Open(path, O_RDONLY, last));
  if (fd.get() == -ENOENT) return Status::NotFound(Real(path) + ": " + Why(ENOENT));
  if (fd.get() < 0) return Status::Unavailable(Real(path) + ": " + Why(fd.get()));
  std::string out;
  char buf[8192];
  for (;;) {
    // One byte past the cap tells a file that is too long from one that fits.
    const size_t want = std::min(sizeof buf, max_bytes + 1 - out.size());
    ssize_t n = ::read(fd.get(), buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Unavailable(Real(path) + ": " + Why(Errno()));
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      return Status::Unavailable(Real(path) + ": it is larger than " + std::to_string(max_bytes) +
                                 " bytes");
    }
  }
  return out;
}

Status ConfinedRoot::WriteText(std::string_view path, std::string_view text) const {
  Fd fd(Open(path, O_WRONLY | O_TRUNC, Last::kNoFollow));
  if (fd.get() < 0) return Status::Unavailable(Why(fd.get()));
  ssize_t n;
  do {
    n = ::write(fd.get(), text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  int err = n < 0 ? Errno() : (static_cast<size_t>(n) != text.size() ? EIO : 0);
  if (::close(fd.release()) != 0 && err == 0) err = Errno();
  return err == 0 ? Status::Ok() : Status::Unavailable(Why(err));
}

Status ConfinedRoot::ReplaceFile(std::string_view path, std::string_view text, mode_t mode) const {
  const std::string name(BaseName(path));
  const std::string tmp = name + ".tmp";
  auto failed = [&](const std::string& what, int err) {
    return Status::Internal("cannot " + what + " " + Real(path) + ": " + Why(err));
  };
  Fd dir(OpenDir(DirName(path)));
  if (dir.get() < 0) return failed("open the directory of", dir.get());
  // A ".tmp" left (or planted) there is removed, never written through.
  if (::unlinkat(dir.get(), tmp.c_str(), 0) != 0 && errno != ENOENT) {
    return failed("remove the old .tmp of", Errno());
  }
  Fd fd(::openat(dir.get(), tmp.c_str(),
                 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode));
  if (fd.get() < 0) return failed("create the .tmp of", Errno());
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return failed("write", n < 0 ? Errno() : EIO);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return failed("sync", Errno());
  if (::close(fd.release()) != 0) return failed("write", Errno());
  if (::renameat(dir.get(), tmp.c_str(), dir.get(), name.c_str()) != 0) {
    return failed("rename the .tmp over", Errno());
  }
  return Status::Ok();
}

Result<std::vector<std::string>> ConfinedRoot::List(std::string_view dir) const {
  int fd = OpenDir(dir);
  if (fd < 0) return Status::Unavailable(Real(dir) + ": " + Why(fd));
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    const int err = Errno();
    ::close(fd);
    return Status::Unavailable(Real(dir) + ": " + Why(err));
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    names.emplace_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace edgemon
