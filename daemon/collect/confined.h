// ConfinedRoot: the one way edgemon opens files below a root directory (the
// monitored system, `--root`, or a state directory). RootedSysFs reads
// through it; edgemon-control, which runs as root, makes every read and
// write of a board and of its state file through it.
//
// The rules, for a root other than "/":
//   - Paths are logical ("/sys/class/hwmon/hwmon1/pwm1") and resolved
//     relative to a directory fd of the root with openat2(2) and
//     RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS. A symlink on the way that
//     stays inside the root is followed (a fixture's or a simulated board's
//     "class/hwmon/hwmon1 -> ../../devices/..."); one that leaves it (an
//     absolute target, or ".." above the root) is refused with -EXDEV, and
//     so is a /proc magic link. Where the kernel has no openat2 (before 5.6,
//     or a seccomp filter that refuses it: one probe decides, once), the same
//     rules are applied by a walk, one component at a time, with
//     O_PATH | O_NOFOLLOW opens and readlinkat from the root's fd.
//   - With Last::kNoFollow, the final component must not be a symlink at
//     all (-ELOOP), wherever it points: a value file that is written is
//     never reached through a link (sysfs attributes are never links).
//   - Only regular files are opened for reading or writing (-EINVAL for a
//     FIFO, socket, device or directory), checked on an O_PATH fd before the
//     real open and again with fstat after it; every open is
//     O_NONBLOCK | O_CLOEXEC | O_NOCTTY, so nothing can wait for a FIFO's
//     writer, and reads are bounded (kMaxRead).
// With root "/" there is nothing to leave: paths resolve as the kernel
// resolves them (absolute links such as a Jetson's /etc/nvpmodel.conf ->
// /etc/nvpmodel/... included) with RESOLVE_NO_MAGICLINKS; the
// final-component and regular-file rules still hold.
//
// Thread safety: a ConfinedRoot is immutable; any thread may call it.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "edgemon/status.h"

namespace edgemon {

class ConfinedRoot {
 public:
  enum class Resolver {
    kAuto,  // openat2 where the kernel has it, else the walk
    kWalk,  // the walk always (tests of the fallback)
  };
  enum class Last { kFollow, kNoFollow };
  // The most any ReadText returns (sysfs attributes are at most a page).
  static constexpr size_t kMaxRead = 64 * 1024;

  explicit ConfinedRoot(std::string root, Resolver resolver = Resolver::kAuto);

  // The root as given, without a trailing slash ("/" for the system).
  const std::string& root() const { return root_; }
  // Where a logical path lies on this machine, for messages and for
  // programs run from the root.
  std::string Real(std::string_view path) const;
  // Whether openat2 is used (false: the walk).
  bool UsesOpenat2() const;

  // Opens a regular file below the root with `flags` (O_RDONLY, or O_WRONLY
  // and O_TRUNC; never O_CREAT). Returns the fd, or -errno: -EXDEV out of
  // the root, -ELOOP a final symlink under kNoFollow, -EINVAL not a regular
  // file, or what the kernel said (-ENOENT, -EACCES, ...).
  int Open(std::string_view path, int flags, Last last) const;
  // Opens a directory below the root (O_RDONLY | O_DIRECTORY); fd or -errno.
  int OpenDir(std::string_view path) const;

  // A whole small file (at most `max_bytes`, capped at kMaxRead; a longer
  // file is refused, not cut). The error names the path and says why:
  // NOT_FOUND when it does not exist, UNAVAILABLE otherwise.
  Result<std::string> ReadText(std::string_view path, size_t max_bytes, Last last) const;
  // Writes `text` to an existing regular file (O_WRONLY | O_TRUNC, final
  // symlink refused, never created). UNAVAILABLE with the reason alone
  // (strerror's text, or the rule that refused it): the caller names the file.
  Status WriteText(std::string_view path, std::string_view text) const;
  // Replaces `path` (a file directly in a directory below the root) with a
  // new file of `text`: written to a fresh "<name>.tmp" (any old one is
  // removed first, never followed), fsync'd, renamed over `path` within the
  // same directory fd. For state files.
  Status ReplaceFile(std::string_view path, std::string_view text, mode_t mode) const;
  // Names in a directory below the root, sorted, without "." and "..".
  Result<std::vector<std::string>> List(std::string_view dir) const;

  // What an errno from Open means here, as words for a message ("is a
  // symbolic link; ...", "leads out of <root>; ...", strerror otherwise).
  std::string Why(int err) const;

 private:
  // Resolves `path` and opens the last component with `flags` (O_PATH for a
  // check); fd or -errno. No regular-file check.
  int Resolve(std::string_view path, int flags, Last last) const;
  int Walk(int root_fd, std::string_view path, int flags, Last last) const;

  std::string root_;
  bool confined_;  // root_ != "/"
  Resolver resolver_;
};

}  // namespace edgemon
