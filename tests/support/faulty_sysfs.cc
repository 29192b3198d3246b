#include "tests/support/faulty_sysfs.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace edgemon::testing {

void FaultySysFs::FailWith(const std::string& path, int errno_value) {
  rules_[path] = Rule{Fault::kErrno, errno_value, {}};
}

void FaultySysFs::Replace(const std::string& path, std::string content) {
  rules_[path] = Rule{Fault::kContent, 0, std::move(content)};
}

void FaultySysFs::Hide(const std::string& path) {
  hidden_.push_back(path);
}

void FaultySysFs::Clear(const std::string& path) {
  rules_.erase(path);
  hidden_.erase(std::remove(hidden_.begin(), hidden_.end(), path), hidden_.end());
}

void FaultySysFs::ClearAll() {
  rules_.clear();
  hidden_.clear();
}

bool FaultySysFs::Hidden(const std::string& path) const {
  for (const auto& h : hidden_) {
    if (path == h ||
        (path.size() > h.size() && path.compare(0, h.size(), h) == 0 && path[h.size()] == '/')) {
      return true;
    }
  }
  return false;
}

const FaultySysFs::Rule* FaultySysFs::RuleFor(const std::string& path) const {
  auto it = rules_.find(path);
  return it == rules_.end() ? nullptr : &it->second;
}

FileId FaultySysFs::Open(const std::string& path) {
  if (Hidden(path)) return -ENOENT;
  FileId id = inner_.Open(path);
  if (id >= 0) paths_[id] = path;
  return id;
}

void FaultySysFs::Close(FileId id) {
  paths_.erase(id);
  inner_.Close(id);
}

ssize_t FaultySysFs::Read(FileId id, char* buf, size_t cap) {
  ++reads_;
  auto it = paths_.find(id);
  if (it != paths_.end()) {
    if (Hidden(it->second)) return -ENODEV;
    if (const Rule* r = RuleFor(it->second)) {
      if (r->fault == Fault::kErrno) return -r->err;
      if (r->fault == Fault::kContent) {
        size_t n = std::min(cap, r->content.size());
        std::memcpy(buf, r->content.data(), n);
        return static_cast<ssize_t>(n);
      }
    }
  }
  return inner_.Read(id, buf, cap);
}

std::optional<std::string> FaultySysFs::ReadText(const std::string& path, size_t max_bytes) {
  if (Hidden(path)) {
    errno = ENOENT;
    return std::nullopt;
  }
  if (const Rule* r = RuleFor(path)) {
    if (r->fault == Fault::kErrno) {
      errno = r->err;
      return std::nullopt;
    }
    if (r->fault == Fault::kContent) return r->content.substr(0, max_bytes);
  }
  return inner_.ReadText(path, max_bytes);
}

std::vector<std::string> FaultySysFs::List(const std::string& dir) {
  if (Hidden(dir)) return {};
  auto names = inner_.List(dir);
  names.erase(std::remove_if(names.begin(), names.end(),
                             [&](const std::string& n) { return Hidden(JoinPath(dir, n)); }),
              names.end());
  return names;
}

std::optional<std::string> FaultySysFs::Resolve(const std::string& path) {
  if (Hidden(path)) return std::nullopt;
  return inner_.Resolve(path);
}

bool FaultySysFs::Exists(const std::string& path) {
  return !Hidden(path) && inner_.Exists(path);
}
bool FaultySysFs::IsDir(const std::string& path) {
  return !Hidden(path) && inner_.IsDir(path);
}

}  // namespace edgemon::testing
