// The board identity the shipper sends, read through the root seam.
#include "daemon/push/identity.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/temp_tree.h"

namespace edgemon::push {
namespace {

BoardInfo Orin() {
  BoardInfo b;
  b.hostname = "orin-7";
  b.model = "NVIDIA Jetson AGX Orin Developer Kit";
  b.soc = "tegra234";
  b.l4t = "36.4.3";
  return b;
}

TEST(PushIdentity, MachineIdFirstThenTheDeviceTreeSerial) {
  testing::TempTree tree;
  tree.Write("/etc/machine-id", "0f1e2d3c4b5a69788796a5b4c3d2e1f0\n");
  tree.Write("/proc/device-tree/serial-number", std::string("1421022110876\0", 14));
  RootedSysFs fs(tree.root());
  Identity id = ReadIdentity(fs, Orin(), {{"site", "lab-2"}});
  EXPECT_EQ(id.host_id, "0f1e2d3c4b5a69788796a5b4c3d2e1f0");
  EXPECT_EQ(id.host_name, "orin-7");
  EXPECT_EQ(id.board_model, "NVIDIA Jetson AGX Orin Developer Kit");
  EXPECT_EQ(id.soc, "tegra234");
  EXPECT_EQ(id.l4t, "36.4.3");
  EXPECT_EQ(id.labels, (std::vector<std::pair<std::string, std::string>>{{"site", "lab-2"}}));

  tree.Remove("/etc/machine-id");
  RootedSysFs fs2(tree.root());
  EXPECT_EQ(ReadIdentity(fs2, Orin(), {}).host_id, "1421022110876");  // the NUL trimmed

  tree.Remove("/proc/device-tree/serial-number");
  tree.Write("/etc/machine-id", "\n");  // blank: not an id
  RootedSysFs fs3(tree.root());
  EXPECT_EQ(ReadIdentity(fs3, Orin(), {}).host_id, "");
}

}  // namespace
}  // namespace edgemon::push
