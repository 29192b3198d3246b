// Small files the daemon and its clients read whole: the configuration, TLS
// certificates, keys and CA roots, and bearer-token files.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "edgemon/status.h"

namespace edgemon {

// A regular file's bytes, at most `max_bytes`. A directory, FIFO or device is
// refused (opening a FIFO would wait for a writer; /dev/zero never ends).
// nullopt and *err on failure: EINVAL when not a regular file, EFBIG when
// larger than `max_bytes`, else the errno of open or read.
std::optional<std::string> ReadRegularFile(const std::string& path, size_t max_bytes, int* err);

// ReadRegularFile with a 1 MiB bound; nullopt when it cannot be read.
std::optional<std::string> ReadWholeFile(const std::string& path);

// A secret file (a bearer token): its bytes, read only when no one but
// `user` (the reading program's effective uid by default) and root can have
// written it, and no one else can read it. The rule, checked on the opened
// objects themselves (O_PATH|O_NOFOLLOW at every step, then fstat):
//   - every directory from / down to the file (and down through any link on
//     the way) belongs to root or `user`, and is writable by neither group
//     nor others unless it is sticky (/tmp): then the entry below it must
//     belong to root or `user`, so no one else can have put it there;
//   - a link on the way is followed only when it belongs to root or `user`
//     in such a directory (at most 40 links); the file itself is never a
//     link (O_NOFOLLOW);
//   - the file is a regular file (a FIFO is refused at once, never waited
//     on), belongs to root or `user`, has no group or other permission bits
//     (mode & 077 == 0), and holds at most `max_bytes`.
// A refusal is one line naming the file and the rule it broke:
// PERMISSION_DENIED for the ownership and mode rules, INVALID_ARGUMENT for a
// link, a file that is not regular or is too large, NOT_FOUND for a missing
// file, else INTERNAL with the system's reason. A relative path is taken
// from the working directory, whose directories are checked the same way.
inline constexpr size_t kMaxSecretBytes = 64 << 10;
Result<std::string> ReadSecretFile(const std::string& path, size_t max_bytes = kMaxSecretBytes);
Result<std::string> ReadSecretFile(const std::string& path, size_t max_bytes, uid_t user);

// A token file (ReadSecretFile): its first line without surrounding blanks
// (FirstLineTrimmed). INVALID_ARGUMENT when that is shorter than `min_bytes`
// (an empty token is never accepted).
Result<std::string> ReadTokenFile(const std::string& path, size_t min_bytes = 1);

// A token file's token: its first line without surrounding spaces, tabs and
// carriage returns ("" when that line is blank).
std::string FirstLineTrimmed(std::string_view text);

// Whether `got` equals the secret `expected`, in a time that depends on
// expected's length alone (not on where the two differ): for tokens.
bool SecretEqual(std::string_view got, std::string_view expected);

}  // namespace edgemon
