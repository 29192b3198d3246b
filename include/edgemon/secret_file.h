// Small files the daemon and its clients read whole: the configuration, TLS
// certificates, keys and CA roots, and bearer-token files.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace edgemon {

// A regular file's bytes, at most `max_bytes`. A directory, FIFO or device is
// refused (opening a FIFO would wait for a writer; /dev/zero never ends).
// nullopt and *err on failure: EINVAL when not a regular file, EFBIG when
// larger than `max_bytes`, else the errno of open or read.
std::optional<std::string> ReadRegularFile(const std::string& path, size_t max_bytes, int* err);

// ReadRegularFile with a 1 MiB bound; nullopt when it cannot be read.
std::optional<std::string> ReadWholeFile(const std::string& path);

// A token file's token: its first line without surrounding spaces, tabs and
// carriage returns ("" when that line is blank).
std::string FirstLineTrimmed(std::string_view text);

// Whether `got` equals the secret `expected`, in a time that depends on
// expected's length alone (not on where the two differ): for tokens.
bool SecretEqual(std::string_view got, std::string_view expected);

}  // namespace edgemon
