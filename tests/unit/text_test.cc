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
