#include "tui/canvas.h"

#include <array>
#include <cmath>

namespace edgemon::tui {

namespace {

// Byte length of the first `n` code points of `s`.
size_t Utf8PrefixBytes(std::string_view s, int n) {
  size_t i = 0;
  int count = 0;
  while (i < s.size() && count < n) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
    ++count;
  }
  return i;
}

}  // namespace

int Utf8Width(std::string_view s) {
  int n = 0;
  for (char ch : s) {
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string Clip(std::string_view s, int n) {
  if (n <= 0) return {};
  return std::string(s.substr(0, Utf8PrefixBytes(s, n)));
}

std::string PadRight(std::string_view s, int n) {
  std::string out = Clip(s, n);
  int w = Utf8Width(out);
  if (w < n) out.append(static_cast<size_t>(n - w), ' ');
  return out;
}

std::string PadLeft(std::string_view s, int n) {
  std::string clipped = Clip(s, n);
  int w = Utf8Width(clipped);
  std::string out;
  if (w < n) out.assign(static_cast<size_t>(n - w), ' ');
  return out + clipped;
}

std::string BarFill(double fraction, int width, bool utf8) {
  if (width <= 0) return {};
  fraction = std::clamp(fraction, 0.0, 1.0);
  std::string out;
  if (!utf8) {
    int n = static_cast<int>(std::lround(fraction * width));
    out.assign(static_cast<size_t>(n), '|');
    return out;
  }
  // Eighths of a cell: U+2588 full block, U+2589..U+258F partial blocks.
  static constexpr std::array<const char*, 8> kPartial = {"",
                                                          "\xE2\x96\x8F",
                                                          "\xE2\x96\x8E",
                                                          "\xE2\x96\x8D",
                                                          "\xE2\x96\x8C",
                                                          "\xE2\x96\x8B",
                                                          "\xE2\x96\x8A",
                                                          "\xE2\x96\x89"};
  int eighths = static_cast<int>(std::lround(fraction * width * 8));
  int full = eighths / 8;
  for (int i = 0; i < full; ++i) out += "\xE2\x96\x88";
  if (full < width && eighths % 8 != 0) out += kPartial[static_cast<size_t>(eighths % 8)];
  return out;
}

Role BarRole(double fraction) {
  if (fraction >= 0.8) return Role::kBarHigh;
  if (fraction >= 0.5) return Role::kBarMid;
  return Role::kBarLow;
}

// "[bar     ]" at (row, col) with `width` cells including the brackets.
void PutBar(Canvas& cv, int row, int col, int width, std::optional<double> fraction,
            const Glyphs& g, std::string_view inside) {
  if (width < 3) return;
  cv.Put(row, col, "[", Role::kDim);
  cv.Put(row, col + width - 1, "]", Role::kDim);
  if (!inside.empty()) {
    cv.Put(row, col + 1, inside, Role::kDim, col + width - 1);
  } else if (fraction) {
    cv.Put(row, col + 1, BarFill(*fraction, width - 2, g.utf8), BarRole(*fraction),
           col + width - 1);
  }
}

// One meter cell: "LABEL [bar      ] text", `width` cells from `col`.
void PutMeter(Canvas& cv, int row, int col, int width, std::string_view label, int label_width,
              std::optional<double> fraction, std::string_view text, int text_width,
              const Glyphs& g, Role label_role, std::string_view inside) {
  const int end = col + width - 1;  // one blank column between cells
  cv.Put(row, col, label, label_role, col + label_width);
  const int bar_col = col + label_width + 1;
  const int bar_width = end - bar_col - text_width - 1;
  if (bar_width >= 3) {
    PutBar(cv, row, bar_col, bar_width, fraction, g, inside);
    cv.Put(row, end - text_width, PadLeft(text, text_width), Role::kText, end);
  } else {
    cv.Put(row, bar_col, text, Role::kText, end);
  }
}

TextRender RenderText(const Screen& screen) {
  TextRender out;
  const int w = std::max(screen.width, 0);
  const int h = std::max(screen.height, 0);
  std::vector<std::vector<std::string>> cells(
      static_cast<size_t>(h), std::vector<std::string>(static_cast<size_t>(w), " "));
  std::vector<std::vector<bool>> used(static_cast<size_t>(h),
                                      std::vector<bool>(static_cast<size_t>(w), false));
  for (const Span& s : screen.spans) {
    int col = s.col;
    size_t i = 0;
    while (i < s.text.size()) {
      size_t j = i + 1;
      while (j < s.text.size() && (static_cast<unsigned char>(s.text[j]) & 0xC0) == 0x80) ++j;
      if (s.row < 0 || s.row >= h || col < 0 || col >= w) {
        ++out.out_of_bounds;
      } else {
        auto r = static_cast<size_t>(s.row);
        auto c = static_cast<size_t>(col);
        if (used[r][c]) ++out.overlaps;
        used[r][c] = true;
        cells[r][c] = s.text.substr(i, j - i);
      }
      ++col;
      i = j;
    }
  }
  for (const auto& row : cells) {
    std::string line;
    for (const std::string& c : row) line += c;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out.lines.push_back(std::move(line));
  }
  return out;
}

}  // namespace edgemon::tui
