// SysFs: the only door from edgemon to the monitored system's files.
//
// Every path a collector uses is a *logical* absolute path inside the
// monitored system ("/sys/class/hwmon"), built with SysPath()/ProcPath()/...
// A RootedSysFs prefixes them with a runtime root (`--root DIR`), which is how
// tests, fixture boards and the board simulator are read. The literal system
// prefixes appear in common/paths.cc only (include/edgemon/paths.h).
//
// Discovery uses List/ReadText/Resolve (they may walk and open files). Every
// tick uses only Read on files opened once at discovery: pread at offset 0,
// no open/close, no directory walk.
//
// What is read and listed goes through ConfinedRoot (daemon/collect/confined.h):
// regular files only (a FIFO or device under the root is refused, -EINVAL,
// so it can never block the sampler); under a root other than "/", only
// files and directories whose symlinks resolve inside the root (-EXDEV
// otherwise: a fixture's link to /etc/passwd is not a sensor). A value file
// outside /sys and /proc (nvpmodel's status, for one) is followed when it is
// replaced by rename: Read re-opens it when the path's inode changes.
//
// Thread safety: a SysFs is used by one thread at a time (the sampler).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/collect/confined.h"
#include "edgemon/paths.h"

namespace edgemon {

using FileId = int;  // >= 0: an open value file; < 0: -errno from Open

class SysFs {
 public:
  virtual ~SysFs() = default;

  // Opens a value file to be re-read every tick. Returns an id >= 0, or -errno.
  virtual FileId Open(const std::string& path) = 0;
  virtual void Close(FileId id) = 0;
  // Reads up to `cap` bytes from offset 0. Returns the byte count or -errno.
  virtual ssize_t Read(FileId id, char* buf, size_t cap) = 0;

  // Reads a whole small file (at most `max_bytes`). nullopt on any error,
  // with errno saying which (ENOENT, EACCES, ...).
  // No default for `max_bytes`: a default on a virtual binds to the static
  // type, so a call through an override would silently get another one.
  virtual std::optional<std::string> ReadText(const std::string& path, size_t max_bytes) = 0;
  // Names in a directory, sorted, without "." and "..". Empty on error.
  virtual std::vector<std::string> List(const std::string& dir) = 0;
  // The canonical logical path (symlinks resolved, staying inside the root).
  virtual std::optional<std::string> Resolve(const std::string& path) = 0;
  virtual bool Exists(const std::string& path) = 0;
  virtual bool IsDir(const std::string& path) = 0;
};

// The real implementation: logical paths below `root` ("/" on a live system).
class RootedSysFs final : public SysFs {
 public:
  explicit RootedSysFs(std::string root);
  ~RootedSysFs() override;
  RootedSysFs(const RootedSysFs&) = delete;
  RootedSysFs& operator=(const RootedSysFs&) = delete;

  FileId Open(const std::string& path) override;
  void Close(FileId id) override;
  ssize_t Read(FileId id, char* buf, size_t cap) override;
  std::optional<std::string> ReadText(const std::string& path, size_t max_bytes) override;
  std::vector<std::string> List(const std::string& dir) override;
  std::optional<std::string> Resolve(const std::string& path) override;
  bool Exists(const std::string& path) override;
  bool IsDir(const std::string& path) override;

  const std::string& root() const { return root_; }
  // Logical paths of the files currently open (for the benchmark's floor).
  std::vector<std::string> OpenPaths() const;

 private:
  std::string Real(const std::string& path) const;
  int OpenRegular(const std::string& path, struct stat* st) const;

  std::string root_;       // canonical, no trailing slash ("" for "/")
  ConfinedRoot confined_;  // every open and listing below root_
  struct Slot {
    int fd = -1;
    std::string path;
    bool replaceable = false;  // outside /sys and /proc: check the inode per read
    dev_t dev = 0;
    ino_t ino = 0;
  };
  std::vector<Slot> slots_;
  std::vector<FileId> free_;
};

}  // namespace edgemon
