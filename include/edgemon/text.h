// Text helpers shared by every program: trimming and ASCII case. One copy
// for the parsers of sysfs text (daemon/collect/parse.h), the time syntax,
// the /metrics Accept header and the control helper's tool output; and the
// one escaping of untrusted text for a terminal (TerminalSafe).
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

namespace edgemon {

// Untrusted text (a channel name or unit read from sysfs, a label, a device
// name or an error message from the daemon, a user's argument) made safe to
// print on a terminal: control characters (C0 but newline and tab, DEL, and
// C1 such as U+009B CSI in UTF-8) become "\xNN" / "\u00NN" escapes, so an
// escape sequence in a name cannot clear, retitle or rewrite the screen.
// Other UTF-8 passes through unchanged. The one copy for edgemon, edgetop
// and edgemond's --print; JSON and CSV outputs are data and are not passed
// through it.
std::string TerminalSafe(std::string_view text);

}  // namespace edgemon
