// /proc/PID/stat, edgemon/proc_stat.h: the process list's ticks and
// `tegrastats --stop`'s start time, from one parser.
#include "edgemon/proc_stat.h"

#include <gtest/gtest.h>

#include <string_view>

namespace edgemon {
namespace {

TEST(ProcStat, StatNameIsBetweenTheFirstOpenAndTheLastCloseParenthesis) {
  struct Case {
    std::string_view text;
    std::string_view name;
    char state;
    uint64_t utime, stime;
  };
  for (const Case& c : {
           Case{"4242 (fake-bench) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1",
                "fake-bench", 'S', 250, 50},
           // A comm may hold spaces and parentheses of its own.
           Case{"7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0\n", "a) b (c)", 'R', 3, 4},
           Case{"8 () Z 1 8 8 0 -1 0 0 0 0 0 0 0", "", 'Z', 0, 0},
       }) {
    auto st = ParseProcStat(c.text);
    ASSERT_TRUE(st) << c.text;
    EXPECT_EQ(st->name, c.name);
    EXPECT_EQ(st->state, c.state);
    EXPECT_EQ(st->utime, c.utime);
    EXPECT_EQ(st->stime, c.stime);
  }
}

TEST(ProcStat, MalformedStatIsNoValue) {
  EXPECT_FALSE(ParseProcStat(""));
  EXPECT_FALSE(ParseProcStat("garbage"));
  EXPECT_FALSE(ParseProcStat("1 )x( S 1 1 1 0 -1 0 0 0 0 0 1 1"));   // close before open
  EXPECT_FALSE(ParseProcStat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 1"));     // cut before stime
  EXPECT_FALSE(ParseProcStat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 -1 1"));  // negative ticks
  EXPECT_FALSE(ParseProcStat("1 (x) SS 1 1 1 0 -1 0 0 0 0 0 1 1"));  // not a state
  EXPECT_FALSE(ParseProcStat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 1 1x"));  // not a number
  EXPECT_FALSE(ParseProcStat("1 (x)"));
}

// A real line: a command name with spaces and parentheses of its own.
TEST(ProcStat, StartTimeIsField22CountedAfterTheLastParenthesis) {
  auto st = ParseProcStat(
      "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 98765 "
      "1234567 200 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 3 0 0 0 0 0\n");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->name, "my (odd) name");
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->start_time, 98765u);
  st = ParseProcStat("7 (a) b) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 555 0 0\n");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->state, 'Z');
  EXPECT_EQ(st->start_time, 555u);
  // Cut before field 22, or not a number there: the ticks, no start time.
  st = ParseProcStat("7 (x) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0\n");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->start_time, std::nullopt);
  st = ParseProcStat("7 (x) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12ab 0\n");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->start_time, std::nullopt);
  EXPECT_FALSE(ParseProcStat("4242 (short) S 1 2 3\n"));
  EXPECT_FALSE(ParseProcStat("no parentheses S 1 2 3"));
}

}  // namespace
}  // namespace edgemon
