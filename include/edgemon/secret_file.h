// Small files the daemon and its clients read whole: TLS certificates, keys
// and CA roots, and bearer-token files.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace edgemon {

// The file's bytes; nullopt when it cannot be opened.
std::optional<std::string> ReadWholeFile(const std::string& path);

// A token file's token: its first line without surrounding spaces, tabs and
// carriage returns ("" when that line is blank).
std::string FirstLineTrimmed(std::string_view text);

}  // namespace edgemon
