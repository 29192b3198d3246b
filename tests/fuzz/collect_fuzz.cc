// libFuzzer target: every collector on a fixture board where one file (a
// discovery file or a per-tick value file) holds arbitrary bytes. Nothing may
// crash, and no value may be produced from text that does not parse.
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/collect/collection.h"
#include "daemon/collect/collectors.h"
#include "tests/support/faulty_sysfs.h"
#include "tests/support/temp_tree.h"

namespace {

struct Board {
  std::string root;
  std::vector<std::string> files;  // logical paths of regular files
};

std::vector<Board> LoadBoards() {
  namespace fs = std::filesystem;
  std::vector<Board> boards;
  for (const auto* name : {"agx-orin", "orin-nano", "xavier-nx", "tx2", "jetson-nano", "x86-laptop",
                           "no-sensors", "node_exporter/node_exporter", "node_exporter/procfs"}) {
    Board b;
    b.root = edgemon::testing::Fixture(name);
    if (!fs::is_directory(b.root)) continue;
    for (auto it = fs::recursive_directory_iterator(b.root);
         it != fs::recursive_directory_iterator(); ++it) {
      if (it->is_symlink() || !it->is_regular_file()) continue;
      b.files.push_back(it->path().string().substr(b.root.size()));
    }
    if (!b.files.empty()) boards.push_back(std::move(b));
  }
  return boards;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<Board> boards = LoadBoards();
  if (boards.empty() || size < 3) return 0;
  const Board& b = boards[data[0] % boards.size()];
  const std::string& victim = b.files[(size_t{data[1]} << 8 | data[2]) % b.files.size()];

  edgemon::RootedSysFs real(b.root);
  edgemon::testing::FaultySysFs fs(real);
  fs.Replace(victim, std::string(reinterpret_cast<const char*>(data + 3), size - 3));
  edgemon::CollectOptions options;
  edgemon::Collection c(fs, edgemon::MakeDefaultCollectors(options), options, nullptr);
  c.Discover();
  edgemon::Frame f;
  c.Sample(1'000'000'000, f);
  c.Sample(2'000'000'000, f);
  return 0;
}
