#include "daemon/runtime/heap_trim.h"

#include <sys/mman.h>

#include <gtest/gtest.h>

namespace edgemon {
namespace {

// Written before the page-out and read after: the program's writable
// mappings hold its state and must keep it.
int g_state = 0;

int Touch(int x) {
  return x * 7 + g_state;
}

TEST(PageOutProgramText, ReturnsTheProgramsReadOnlyPagesAndKeepsItsState) {
  g_state = 41;
  // The test binary's own code is resident: it is running.
  auto t = runtime::PageOutProgramText();
#if defined(MADV_PAGEOUT)
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(t->trimmed);
  EXPECT_GT(t->rss_before_kib, 0);
  // Every resident read-only page of this (multi-MiB) test binary was asked
  // out; at least some went, as no other process maps this file.
  EXPECT_LT(t->rss_after_kib, t->rss_before_kib);
#else
  EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented);
#endif
  // The code faults back in, the state is where it was.
  EXPECT_EQ(g_state, 41);
  EXPECT_EQ(Touch(1), 48);
  // A second call finds the same mappings and works again.
  EXPECT_TRUE(runtime::PageOutProgramText().ok());
}

}  // namespace
}  // namespace edgemon
