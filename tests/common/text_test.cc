#include "edgemon/text.h"

#include <gtest/gtest.h>

#include <string>

namespace edgemon::text {
namespace {

TEST(Text, TrimDropsBlanksOfEveryKindAtBothEndsOnly) {
  EXPECT_EQ(Trim(" \t\r\n 42 W\n"), "42 W");
  EXPECT_EQ(Trim(std::string("1500000\n\0", 9)), "1500000");  // a sysfs value ending in NUL
  EXPECT_EQ(Trim("a b"), "a b");
  EXPECT_EQ(Trim(" \n\t"), "");
  EXPECT_EQ(Trim(""), "");
}

TEST(Text, CaseMapsAsciiLettersOnly) {
  EXPECT_EQ(Lower("VDD_IN Ünï 5V"), "vdd_in Ünï 5v");
  EXPECT_EQ(Upper("gpu@0 µs"), "GPU@0 µS");
  EXPECT_TRUE(IEquals("Application/OpenMetrics-Text", "application/openmetrics-text"));
  EXPECT_FALSE(IEquals("text/plain", "text/plai"));
  EXPECT_FALSE(IEquals("[", "{"));  // 0x5B and 0x7B differ by 32 but are not letters
}

TEST(Text, AllDigitsIsNonEmptyAsciiDigitsOnly) {
  EXPECT_TRUE(AllDigits("0"));
  EXPECT_TRUE(AllDigits("4294967296"));
  EXPECT_FALSE(AllDigits(""));
  EXPECT_FALSE(AllDigits("+5"));
  EXPECT_FALSE(AllDigits(" 5"));
  EXPECT_FALSE(AllDigits("12a"));
}

}  // namespace
}  // namespace edgemon::text

namespace edgemon {
namespace {

// Text printed on a terminal: names, labels and messages with escape
// sequences are shown escaped, never executed.
TEST(TerminalSafe, ControlCharactersAreEscaped) {
  EXPECT_EQ(TerminalSafe("\x1b[2J\x1b[Hpwned"), "\\x1b[2J\\x1b[Hpwned");
  EXPECT_EQ(TerminalSafe(std::string("a\0b\rc\x7f", 6)), "a\\x00b\\x0dc\\x7f");
  EXPECT_EQ(TerminalSafe("csi \xc2\x9b"
                         "2J"),
            "csi \\u009b2J");                                         // C1 CSI in UTF-8
  EXPECT_EQ(TerminalSafe("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");  // OSC title, BEL
}

TEST(TerminalSafe, OrdinaryTextIsUnchanged) {
  const std::string text =
      "edgemon record: resnet50 \xc3\xa9t\xc3\xa9 \xe2\x80\x94 1.2 J\n\tnext\n";
  EXPECT_EQ(TerminalSafe(text), text);
  EXPECT_EQ(TerminalSafe("\xc2\xb0"
                         "C"),
            "\xc2\xb0"
            "C");  // U+00B0 is printable: only C1 (U+0080..U+009F) is escaped
}

}  // namespace
}  // namespace edgemon
