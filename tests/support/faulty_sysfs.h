// FaultySysFs: wraps a SysFs and injects faults into reads of chosen paths,
// in the style of LevelDB's ErrorEnv. CI runs as root, so permission-based
// failures cannot be staged with chmod; this wrapper stages them instead.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "daemon/collect/sysfs.h"

namespace edgemon::testing {

enum class Fault {
  kNone,
  kErrno,    // Read returns -errno_value
  kContent,  // Read returns `content` instead of the file's bytes
};

class FaultySysFs final : public SysFs {
 public:
  explicit FaultySysFs(SysFs& inner) : inner_(inner) {}

  // Every read of `path` (a value file opened with Open, or ReadText) fails with errno.
  void FailWith(const std::string& path, int errno_value);
  // Every read of `path` returns `content` ("" = an empty file).
  void Replace(const std::string& path, std::string content);
  // Makes ReadText/List/Exists/Open treat `path` (and anything below it) as absent.
  void Hide(const std::string& path);
  void Clear(const std::string& path);
  void ClearAll();
  uint64_t reads() const { return reads_; }

  FileId Open(const std::string& path) override;
  void Close(FileId id) override;
  ssize_t Read(FileId id, char* buf, size_t cap) override;
  std::optional<std::string> ReadText(const std::string& path, size_t max_bytes) override;
  std::vector<std::string> List(const std::string& dir) override;
  std::optional<std::string> Resolve(const std::string& path) override;
  bool Exists(const std::string& path) override;
  bool IsDir(const std::string& path) override;

 private:
  struct Rule {
    Fault fault = Fault::kNone;
    int err = 0;
    std::string content;
  };
  bool Hidden(const std::string& path) const;
  const Rule* RuleFor(const std::string& path) const;

  SysFs& inner_;
  std::map<std::string, Rule> rules_;
  std::vector<std::string> hidden_;
  std::map<FileId, std::string> paths_;
  uint64_t reads_ = 0;
};

}  // namespace edgemon::testing
