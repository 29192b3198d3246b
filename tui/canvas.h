// edgetop's canvas: the Screen of positioned text spans with colour roles,
// the Canvas that writes them clipped to the screen, the text and bar
// primitives the panels draw with, and RenderText, which tests use to read a
// Screen back as plain text. Pure: no terminal, no I/O.
//
// Thread safety: pure functions over value types.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edgemon/text.h"

namespace edgemon::tui {

// What a span is, for colour and attributes. The terminal maps each role to a
// colour pair (and to bold/reverse/dim in monochrome).
enum class Role : uint8_t {
  kText,
  kDim,        // labels, units, absent values
  kTitle,      // section titles
  kHeader,     // the header lines
  kTab,        // an inactive page tab
  kTabActive,  // the current page tab
  kGood,       // connected, cool, low load
  kWarn,       // warm, medium load
  kHot,        // past a passive/hot trip, high load
  kCrit,       // past a critical trip
  kAlert,      // disconnected, paused
  kBarLow,
  kBarMid,
  kBarHigh,
  kSpark,
  kSelected,  // the sort column
};
inline constexpr int kRoleCount = static_cast<int>(Role::kSelected) + 1;

// Text at (row, col); `text` is UTF-8 and one cell per code point (edgetop
// only emits narrow characters).
struct Span {
  int row = 0;
  int col = 0;
  std::string text;
  Role role = Role::kText;
};

struct Screen {
  int width = 0;
  int height = 0;
  std::vector<Span> spans;
};

// Plain text of a Screen: `height` lines of at most `width` code points, with
// trailing blanks removed. Counts cells written by more than one span and
// spans that leave the screen.
struct TextRender {
  std::vector<std::string> lines;
  int overlaps = 0;
  int out_of_bounds = 0;
};
TextRender RenderText(const Screen& screen);

// Code points in a UTF-8 string.
int Utf8Width(std::string_view s);

// The first `n` code points of `s`; padded with blanks to `n` cells.
std::string Clip(std::string_view s, int n);
std::string PadRight(std::string_view s, int n);
std::string PadLeft(std::string_view s, int n);

// Writes spans clipped to the screen and to a right limit; callers keep
// their regions apart, and RenderText in tests proves it.
class Canvas {
 public:
  Canvas(int width, int height) {
    screen_.width = width;
    screen_.height = height;
  }

  int width() const { return screen_.width; }
  int height() const { return screen_.height; }

  // Puts `text` at (row, col), clipped to columns [col, min(limit, width)).
  // Returns the column after the text. Names come from sysfs and the daemon:
  // the text is TerminalSafe, so control characters are drawn as "\x1b",
  // never sent to the terminal, and each cell holds one printable character.
  int Put(int row, int col, std::string_view text, Role role, int limit = INT_MAX) {
    limit = std::min(limit, screen_.width);
    if (row < 0 || row >= screen_.height || col < 0 || col >= limit || text.empty()) return col;
    std::string clipped = Clip(TerminalSafe(text), limit - col);
    int w = Utf8Width(clipped);
    if (w == 0) return col;
    screen_.spans.push_back({row, col, std::move(clipped), role});
    return col + w;
  }

  Screen Take() { return std::move(screen_); }

 private:
  Screen screen_;
};

// The glyphs of the terminal: UTF-8 box drawing and blocks, or ASCII.
struct Glyphs {
  bool utf8;
  const char* sep() const { return utf8 ? " \xE2\x94\x82 " : " | "; }  // " │ "
};

// A bar of exactly `width` cells for a fraction in [0, 1].
std::string BarFill(double fraction, int width, bool utf8);

// The colour of a bar: low, mid (from 0.5), high (from 0.8).
Role BarRole(double fraction);

// "[bar     ]" at (row, col) with `width` cells including the brackets.
void PutBar(Canvas& cv, int row, int col, int width, std::optional<double> fraction,
            const Glyphs& g, std::string_view inside = {});

// One meter cell: "LABEL [bar      ] text", `width` cells from `col`.
void PutMeter(Canvas& cv, int row, int col, int width, std::string_view label, int label_width,
              std::optional<double> fraction, std::string_view text, int text_width,
              const Glyphs& g, Role label_role = Role::kTitle, std::string_view inside = {});

}  // namespace edgemon::tui
