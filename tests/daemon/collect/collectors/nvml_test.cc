// The NVML collector where the library is absent: nothing declared, no
// errors, a rediscovery tries again quietly.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "daemon/collect/collectors.h"
#include "daemon/collect/sysfs.h"
#include "tests/support/collector_harness.h"
#include "tests/support/temp_tree.h"

namespace edgemon {
namespace {

using testing::Harness;
using testing::TempTree;

TEST(Nvml, WithoutTheLibraryDeclaresNothing) {
  if (void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {
    ::dlclose(lib);
    GTEST_SKIP() << "libnvidia-ml.so.1 is installed here";
  }
  TempTree t;
  RootedSysFs fs(t.root());
  Harness h(fs, MakeNvmlCollector());
  EXPECT_TRUE(h.inventory().channels.empty());
  h.Sample();
  h.collection().Discover();  // a rediscovery tries again, quietly
  h.Sample();
  EXPECT_TRUE(h.inventory().channels.empty());
  EXPECT_EQ(h.collection().total_errors(), 0u);
}

}  // namespace
}  // namespace edgemon
