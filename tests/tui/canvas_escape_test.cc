// edgetop's canvas with names from a hostile sysfs: every span it hands the
// terminal is TerminalSafe, so ncurses never receives an escape sequence and
// each cell holds one printable character (the layout stays aligned).
#include <gtest/gtest.h>

#include <string>

#include "tui/canvas.h"

namespace edgemon::tui {
namespace {

TEST(CanvasEscape, SpansHoldNoControlBytes) {
  Canvas cv(80, 2);
  const int end = cv.Put(0, 0, "zone\x1b]0;pwned\x07\x1b[2J", Role::kText);
  cv.Put(1, 0,
         "nv\xc2\x9b"
         "2Jme",
         Role::kText, 10);
  const Screen screen = cv.Take();
  ASSERT_EQ(screen.spans.size(), 2u);
  EXPECT_EQ(screen.spans[0].text, "zone\\x1b]0;pwned\\x07\\x1b[2J");
  EXPECT_EQ(end, Utf8Width(screen.spans[0].text));  // the escaped width, as drawn
  EXPECT_EQ(screen.spans[1].text, "nv\\u009b2J");   // clipped to 10 columns after escaping
  for (const Span& s : screen.spans) {
    EXPECT_EQ(s.text.find('\x1b'), std::string::npos) << s.text;
    EXPECT_EQ(s.text.find('\x07'), std::string::npos) << s.text;
    EXPECT_EQ(s.text.find("\xc2\x9b"), std::string::npos) << s.text;
  }
}

}  // namespace
}  // namespace edgemon::tui
