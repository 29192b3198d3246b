#include "edgemon/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <vector>

namespace edgemon {
namespace {

constexpr int kMaxLinks = 40;

// File descriptors closed when the walk ends.
class Fds {
 public:
  Fds() = default;
  Fds(const Fds&) = delete;
  Fds& operator=(const Fds&) = delete;
  ~Fds() {
    for (int fd : fds_) ::close(fd);
  }
  int Add(int fd) {
    if (fd >= 0) fds_.push_back(fd);
    return fd;
  }

 private:
  std::vector<int> fds_;
};

std::string Mode(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

void Split(std::string_view path, std::deque<std::string>* out, bool front) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > at) parts.emplace_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  if (front) {
    out->insert(out->begin(), parts.begin(), parts.end());
  } else {
    out->insert(out->end(), parts.begin(), parts.end());
  }
}

}  // namespace

Result<std::string> ReadSecretFile(const std::string& path, size_t max_bytes) {
  return ReadSecretFile(path, max_bytes, ::geteuid());
}

Result<std::string> ReadSecretFile(const std::string& path, size_t max_bytes, uid_t user) {
  const std::string who = "secret file " + path + ": ";
  const std::string owners =
      user == 0 ? std::string("root") : "root or uid " + std::to_string(user);
  auto trusted = [&](uid_t uid) { return uid == 0 || uid == user; };
  if (path.empty()) return Status::InvalidArgument("secret file: no path given");

  std::deque<std::string> todo;
  if (path.front() != '/') {
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd) == nullptr) {
      return Status::Internal(who + "cannot tell the working directory: " + std::strerror(errno));
    }
    Split(cwd, &todo, false);
  }
  Split(path, &todo, false);
  if (todo.empty()) return Status::InvalidArgument(who + "is not a regular file");

  Fds fds;
  // The directories walked so far (fds) and their names, from / down.
  std::vector<int> dirs;
  std::vector<std::string> names;
  auto check_dir = [&](int fd, const std::string& shown) -> Status {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      return Status::Internal(who + "cannot stat " + shown + ": " + std::strerror(errno));
    }
    if (!trusted(st.st_uid)) {
      return Status::PermissionDenied(who + "directory " + shown + " belongs to uid " +
                                      std::to_string(st.st_uid) + " (every directory above a " +
                                      "secret file must belong to " + owners + ")");
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
      return Status::PermissionDenied(who + "directory " + shown + " is writable by group or " +
                                      "others (mode " + Mode(st.st_mode) + "): someone else " +
                                      "could swap the file");
    }
    return Status::Ok();
  };
  auto restart_at_root = [&]() -> Status {
    dirs.clear();
    names.clear();
    const int root = fds.Add(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (root < 0) return Status::Internal(who + "cannot open /: " + std::strerror(errno));
    dirs.push_back(root);
    return check_dir(root, "/");
  };
  if (Status s = restart_at_root(); !s.ok()) return s;

  int links = 0;
  std::string name;
  while (!todo.empty()) {
    name = todo.front();
    todo.pop_front();
    if (name == ".") {
      if (todo.empty()) return Status::InvalidArgument(who + "is not a regular file");
      continue;
    }
    if (name == "..") {
      if (dirs.size() > 1) {
        dirs.pop_back();
        names.pop_back();
      }
      if (todo.empty()) return Status::InvalidArgument(who + "is not a regular file");
      continue;
    }
    if (todo.empty()) break;  // the file itself
    names.push_back(name);
    const std::string shown = Join(names);
    const int fd = fds.Add(::openat(dirs.back(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (fd < 0) {
      const int err = errno;
      if (err == ENOENT) return Status::NotFound(who + shown + " does not exist");
      return Status::Internal(who + "cannot open " + shown + ": " + std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      return Status::Internal(who + "cannot stat " + shown + ": " + std::strerror(errno));
    }
    if (S_ISLNK(st.st_mode)) {
      if (!trusted(st.st_uid)) {
        return Status::PermissionDenied(who + "link " + shown + " belongs to uid " +
                                        std::to_string(st.st_uid) + " (a link on the way to a " +
                                        "secret file must belong to " + owners + ")");
      }
      if (++links > kMaxLinks) {
        return Status::InvalidArgument(who + "more than " + std::to_string(kMaxLinks) +
                                       " links on the way");
      }
      char target[4096];
      const ssize_t n = ::readlinkat(fd, "", target, sizeof target);
      if (n <= 0 || static_cast<size_t>(n) >= sizeof target) {
        return Status::Internal(who + "cannot read link " + shown);
      }
      const std::string_view t(target, static_cast<size_t>(n));
      names.pop_back();
      if (t.front() == '/') {
        if (Status s = restart_at_root(); !s.ok()) return s;
      }
      Split(t, &todo, true);
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument(who + shown + " is not a directory");
    }
    if (Status s = check_dir(fd, shown); !s.ok()) return s;
    dirs.push_back(fd);
  }

  // The file: never through a link, never waiting for a FIFO's writer.
  names.push_back(name);
  const std::string shown = Join(names);
  const std::string what = shown == path ? who : who + "(" + shown + ") ";
  const int fd =
      fds.Add(::openat(dirs.back(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) {
      return Status::InvalidArgument(what + "is a symbolic link (secret files are never read " +
                                     "through a link)");
    }
    if (err == ENOENT) return Status::NotFound(what + "does not exist");
    return Status::Internal(what + "cannot open: " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return Status::Internal(what + "cannot stat: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(what + "is not a regular file");
  if (!trusted(st.st_uid)) {
    return Status::PermissionDenied(what + "belongs to uid " + std::to_string(st.st_uid) +
                                    " (a secret file must belong to " + owners + ")");
  }
  if ((st.st_mode & 077) != 0) {
    return Status::PermissionDenied(what + "is open to group or others (mode " + Mode(st.st_mode) +
                                    "; chmod 600)");
  }
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    return Status::InvalidArgument(what + "is larger than " + std::to_string(max_bytes) + " bytes");
  }
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Internal(what + "cannot read: " + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) {  // it grew while being read
      return Status::InvalidArgument(what + "is larger than " + std::to_string(max_bytes) +
                                     " bytes");
    }
  }
  return text;
}

Result<std::string> ReadTokenFile(const std::string& path, size_t min_bytes) {
  auto text = ReadSecretFile(path);
  if (!text.ok()) return text.status();
  std::string token = FirstLineTrimmed(*text);
  if (token.empty()) return Status::InvalidArgument("token file " + path + " is empty");
  if (token.size() < min_bytes) {
    return Status::InvalidArgument("token file " + path + ": the token must be at least " +
                                   std::to_string(min_bytes) + " bytes");
  }
  return token;
}

std::optional<std::string> ReadRegularFile(const std::string& path, size_t max_bytes, int* err) {
  *err = 0;
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *err = errno;
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *err = errno;
  } else if (!S_ISREG(st.st_mode)) {
    *err = EINVAL;
  } else if (static_cast<size_t>(st.st_size) > max_bytes) {
    *err = EFBIG;
  }
  std::string text;
  char buf[16384];
  while (*err == 0) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) *err = errno;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) *err = EFBIG;  // it grew while being read
  }
  ::close(fd);
  if (*err != 0) return std::nullopt;
  return text;
}

std::optional<std::string> ReadWholeFile(const std::string& path) {
  int err = 0;
  return ReadRegularFile(path, 1 << 20, &err);
}

std::string FirstLineTrimmed(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  constexpr std::string_view kBlank = " \t\r";
  size_t begin = line.find_first_not_of(kBlank);
  if (begin == std::string_view::npos) return {};
  return std::string(line.substr(begin, line.find_last_not_of(kBlank) + 1 - begin));
}

bool SecretEqual(std::string_view got, std::string_view expected) {
  unsigned diff = got.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(i < got.size() ? got[i] : 0) ^
            static_cast<unsigned char>(expected[i]);
  }
  return diff == 0;
}

}  // namespace edgemon
