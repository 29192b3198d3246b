// CSV from `edgemon query --format csv` and a record bundle's samples.csv:
// names are data, quoted where RFC 4180 needs it and otherwise kept exact.
#include <gtest/gtest.h>

#include "client/cli/cli.h"

namespace edgemon::cli {
namespace {

TEST(CsvField, QuotesCommasQuotesAndLineBreaks) {
  EXPECT_EQ(CsvField("rail/VDD_IN/power (mW)"), "rail/VDD_IN/power (mW)");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField("cr\rhere"), "\"cr\rhere\"");  // a bare CR ends a record for some readers
}

TEST(CsvField, ControlBytesAreDataNotEscaped) {
  EXPECT_EQ(CsvField("zone\x1b]0;pwned\x07"), "zone\x1b]0;pwned\x07");
}

}  // namespace
}  // namespace edgemon::cli
