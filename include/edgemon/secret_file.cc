#include "edgemon/secret_file.h"

#include <fstream>
#include <sstream>

namespace edgemon {

std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string FirstLineTrimmed(std::string_view text) {
  std::string_view line = text.substr(0, text.find('\n'));
  constexpr std::string_view kBlank = " \t\r";
  size_t begin = line.find_first_not_of(kBlank);
  if (begin == std::string_view::npos) return {};
  return std::string(line.substr(begin, line.find_last_not_of(kBlank) + 1 - begin));
}

}  // namespace edgemon
