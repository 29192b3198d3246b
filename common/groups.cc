#include "edgemon/groups.h"

#include <charconv>
#include <fstream>

namespace edgemon {
namespace {

struct GroupEntry {
  std::string_view name;
  std::optional<gid_t> gid;  // nullopt: malformed
};

// "name:password:gid:members" -> its name and gid.
GroupEntry ParseEntry(std::string_view line) {
  GroupEntry e;
  const size_t name_end = line.find(':');
  if (name_end == std::string_view::npos) return e;
  e.name = line.substr(0, name_end);
  const size_t gid_start = line.find(':', name_end + 1);
  if (gid_start == std::string_view::npos) return e;
  std::string_view gid = line.substr(gid_start + 1);
  gid = gid.substr(0, gid.find(':'));
  gid_t value = 0;
  const auto [end, ec] = std::from_chars(gid.data(), gid.data() + gid.size(), value);
  if (!gid.empty() && ec == std::errc() && end == gid.data() + gid.size()) e.gid = value;
  return e;
}

// Calls `found` with each entry until it returns true.
template <typename Found>
void ForEachGroup(const std::string& group_file, Found&& found) {
  std::ifstream in(group_file);
  std::string line;
  while (std::getline(in, line)) {
    if (found(ParseEntry(line))) return;
  }
}

}  // namespace

std::optional<gid_t> LocalGroupId(std::string_view name, const std::string& group_file) {
  std::optional<gid_t> out;
  ForEachGroup(group_file, [&](const GroupEntry& e) {
    if (e.name != name) return false;
    out = e.gid;
    return true;
  });
  return out;
}

std::optional<std::string> LocalGroupName(gid_t gid, const std::string& group_file) {
  std::optional<std::string> out;
  ForEachGroup(group_file, [&](const GroupEntry& e) {
    if (e.gid != gid || e.name.empty()) return false;
    out = std::string(e.name);
    return true;
  });
  return out;
}

bool LocalGroupHasMember(gid_t gid, std::string_view user, const std::string& group_file) {
  bool member = false;
  std::ifstream in(group_file);
  std::string line;
  while (!member && std::getline(in, line)) {
    if (ParseEntry(line).gid != gid) continue;
    // "name:password:gid:members", members comma-separated.
    const size_t colon = line.rfind(':');
    std::string_view rest = std::string_view(line).substr(colon + 1);
    while (!rest.empty() && !member) {
      const size_t comma = rest.find(',');
      member = rest.substr(0, comma) == user;
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return member;
}

}  // namespace edgemon
