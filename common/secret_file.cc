#include "edgemon/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace edgemon {

std::optional<std::string> ReadRegularFile(const std::string& path, size_t max_bytes, int* err) {
  *err = 0;
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *err = errno;
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *err = errno;
  } else if (!S_ISREG(st.st_mode)) {
    *err = EINVAL;
  } else if (static_cast<size_t>(st.st_size) > max_bytes) {
    *err = EFBIG;
  }
  std::string text;
  char buf[16384];
  while (*err == 0) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) *err = errno;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) *err = EFBIG;  // it grew while being read
  }
  ::close(fd);
  if (*err != 0) return std::nullopt;
  return text;
}

std::optional<std::string> ReadWholeFile(const std::string& path) {
  int err = 0;
  return ReadRegularFile(path, 1 << 20, &err);
}

std::string FirstLineTrimmed(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  constexpr std::string_view kBlank = " \t\r";
  size_t begin = line.find_first_not_of(kBlank);
  if (begin == std::string_view::npos) return {};
  return std::string(line.substr(begin, line.find_last_not_of(kBlank) + 1 - begin));
}

bool SecretEqual(std::string_view got, std::string_view expected) {
  unsigned diff = got.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(i < got.size() ? got[i] : 0) ^
            static_cast<unsigned char>(expected[i]);
  }
  return diff == 0;
}

}  // namespace edgemon
