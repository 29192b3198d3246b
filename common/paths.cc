#include "edgemon/paths.h"

namespace edgemon {
namespace {

std::string Prefixed(std::string_view prefix, std::string_view rel) {
  std::string out(prefix);
  if (!rel.empty()) {
    out += '/';
    out += rel;
  }
  return out;
}

}  // namespace

// The one place that names the system trees.
std::string SysPath(std::string_view rel) {
  return Prefixed("/sys", rel);
}
std::string ProcPath(std::string_view rel) {
  return Prefixed("/proc", rel);
}
std::string EtcPath(std::string_view rel) {
  return Prefixed("/etc", rel);
}
std::string VarLibPath(std::string_view rel) {
  return Prefixed("/var/lib", rel);
}
std::string HostProcPath(std::string_view rel) {
  return ProcPath(rel);
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (out.empty() || out.back() != '/') out += '/';
  out += name;
  return out;
}

std::string_view BaseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  auto pos = path.rfind('/');
  return pos == std::string_view::npos ? path : path.substr(pos + 1);
}

std::string_view DirName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  auto pos = path.rfind('/');
  if (pos == std::string_view::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

}  // namespace edgemon
