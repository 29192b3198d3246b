// The local group database, read directly rather than through getgrnam or
// getgrgid: NSS modules cannot load into the static release build, and the
// groups edgemon uses (edgemon, edgemon-control) are local ones the installer
// creates. `group_file` is for tests.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "edgemon/paths.h"

namespace edgemon {

// The gid of the group named `name`; nullopt when there is none, or its
// entry is malformed.
std::optional<gid_t> LocalGroupId(std::string_view name,
                                  const std::string& group_file = EtcPath("group"));
// The name of group `gid`; nullopt when there is none.
std::optional<std::string> LocalGroupName(gid_t gid,
                                          const std::string& group_file = EtcPath("group"));
// Whether `user` is listed as a member of group `gid` (its supplementary
// members; a user whose primary group it is is not listed there).
bool LocalGroupHasMember(gid_t gid, std::string_view user,
                         const std::string& group_file = EtcPath("group"));

}  // namespace edgemon
