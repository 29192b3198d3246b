// Text printed on a terminal: window labels and mark names with escape
// sequences are shown escaped, never executed.
#include <gtest/gtest.h>

#include "client/cli/cli.h"

namespace edgemon::cli {
namespace {

TEST(TerminalSafe, ControlCharactersAreEscaped) {
  EXPECT_EQ(TerminalSafe("\x1b[2J\x1b[Hpwned"), "\\x1b[2J\\x1b[Hpwned");
  EXPECT_EQ(TerminalSafe(std::string("a\0b\rc\x7f", 6)), "a\\x00b\\x0dc\\x7f");
  EXPECT_EQ(TerminalSafe("csi \xc2\x9b"
                         "2J"),
            "csi \\u009b2J");  // C1 CSI in UTF-8
}

TEST(TerminalSafe, OrdinaryTextIsUnchanged) {
  const std::string text =
      "edgemon record: resnet50 \xc3\xa9t\xc3\xa9 \xe2\x80\x94 1.2 J\n\tnext\n";
  EXPECT_EQ(TerminalSafe(text), text);
}

}  // namespace
}  // namespace edgemon::cli
