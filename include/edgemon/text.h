// Text helpers shared by every program: trimming and ASCII case. One copy
// for the parsers of sysfs text (daemon/collect/parse.h), the time syntax,
// the /metrics Accept header and the control helper's tool output.
#pragma once

#include <string>
#include <string_view>

namespace edgemon::text {

// Whether `c` is blank in the files and inputs edgemon reads: space, tab,
// CR, LF, and NUL (sysfs attributes and /proc fields may end in one).
bool IsSpace(char c);
// `s` without leading and trailing IsSpace characters.
std::string_view Trim(std::string_view s);
// ASCII lower and upper case (locale-independent; other bytes unchanged).
std::string Lower(std::string_view s);
std::string Upper(std::string_view s);
// ASCII case-insensitive equality.
bool IEquals(std::string_view a, std::string_view b);
// Whether `s` is non-empty and only ASCII digits (a pid, a channel id).
bool AllDigits(std::string_view s);

}  // namespace edgemon::text
