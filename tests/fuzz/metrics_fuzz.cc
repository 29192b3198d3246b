// libFuzzer target: the Prometheus exposition with hostile names. Arbitrary
// bytes become rail, zone, device and board strings (sysfs labels and
// device-tree models can hold anything), then the exposition is rendered in
// both formats and every sample line is parsed back: a metric name of
// [a-zA-Z_:][a-zA-Z0-9_:]*, label values that are properly quoted and escaped
// (no raw newline, quote or lone backslash), then one space and a value.
// Also: EscapeLabelValue round-trips valid UTF-8, SanitizeName yields a valid
// name fragment, and Accept-header negotiation takes any bytes.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/metrics/exposition.h"
#include "edgemon/channel.h"
#include "tests/support/inventory.h"

namespace {

using namespace edgemon;

bool NameChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

// Parses `{name="value",...}` from `line` at `i`; false when malformed.
bool ParseLabels(std::string_view line, size_t& i) {
  if (i >= line.size() || line[i] != '{') return true;
  ++i;
  while (i < line.size() && line[i] != '}') {
    size_t start = i;
    while (i < line.size() && NameChar(line[i], i == start)) ++i;
    if (i == start || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') return false;
    i += 2;
    while (i < line.size() && line[i] != '"') {
      if (line[i] == '\n') return false;
      if (line[i] == '\\') {
        if (i + 1 >= line.size()) return false;
        char e = line[i + 1];
        if (e != '\\' && e != '"' && e != 'n') return false;
        ++i;
      }
      ++i;
    }
    if (i >= line.size()) return false;
    ++i;  // closing quote
    if (i < line.size() && line[i] == ',') ++i;
  }
  if (i >= line.size()) return false;
  ++i;  // '}'
  return true;
}

void CheckExposition(const std::string& text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) std::abort();  // every line ends with a newline
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    size_t i = 0;
    while (i < line.size() && NameChar(line[i], i == 0)) ++i;
    if (i == 0) std::abort();
    if (!ParseLabels(line, i)) std::abort();
    if (i >= line.size() || line[i] != ' ' || i + 1 >= line.size()) std::abort();
  }
}

std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char e = s[++i];
      out += e == 'n' ? '\n' : e;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (n < 0 || i + static_cast<size_t>(n) >= s.size() + (n == 0 ? 1 : 0)) {
      if (n != 0) return false;
    }
    uint32_t cp = n == 0 ? c : n == 1 ? (c & 0x1f) : n == 2 ? (c & 0x0f) : (c & 0x07);
    for (int k = 1; k <= n; ++k) {
      if (i + static_cast<size_t>(k) >= s.size()) return false;
      unsigned char cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((cc >> 6) != 2) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += static_cast<size_t>(n) + 1;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string escaped = metrics::EscapeLabelValue(in);
  if (escaped.find('\n') != std::string::npos) std::abort();
  if (ValidUtf8(in) && Unescape(escaped) != in) std::abort();
  std::string name = metrics::SanitizeName(in);
  for (size_t i = 0; i < name.size(); ++i) {
    if (!NameChar(name[i], i == 0) || name[i] == ':') std::abort();
  }
  (void)metrics::NegotiateFormat(in);

  // Up to four strings separated by NUL bytes: rail, zone, device, model.
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= in.size() && parts.size() < 4; ++i) {
    if (i == in.size() || in[i] == '\0') {
      parts.emplace_back(in.substr(start, i - start));
      start = i + 1;
    }
  }
  while (parts.size() < 4) parts.emplace_back("x");
  Inventory inv;
  inv.board.model = parts[3];
  inv.board.hostname = parts[2];
  auto add = [&](Kind kind, const std::string& n, Field field, const std::string& parent) {
    Channel& c = testing::AddChannel(inv, kind, n, field);
    c.unit = UnitOf(field);
    c.device = parts[2];
    c.parent = parent;
  };
  add(Kind::kRail, parts[0], Field::kPower, "");
  add(Kind::kRail, parts[0], Field::kEnergy, "");
  add(Kind::kRail, parts[1], Field::kPower, parts[0]);
  add(Kind::kThermal, parts[1], Field::kTemp, "");
  Frame frame;
  frame.values = {5123, 77000, -1, 45500};
  std::vector<uint64_t> errors(inv.channels.size(), 1);
  metrics::Health health;
  health.version = parts[3];
  health.frames = 1;
  health.read_errors = errors;
  metrics::Exposition exposition(inv);
  CheckExposition(exposition.Render(&frame, health, metrics::Format::kPrometheus));
  std::string om = exposition.Render(&frame, health, metrics::Format::kOpenMetrics);
  CheckExposition(om);
  if (!om.ends_with("# EOF\n")) std::abort();
  return 0;
}
