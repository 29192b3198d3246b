// TempTree: a scratch directory tree for tests, removed on destruction.
// Paths given to it are logical ("/sys/class/hwmon/hwmon0/name"), so a
// RootedSysFs(tree.root()) sees them where a live system would have them.
#pragma once

#include <string>
#include <string_view>

namespace edgemon::testing {

class TempTree {
 public:
  TempTree();
  ~TempTree();
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  const std::string& root() const { return root_; }
  std::string Real(std::string_view logical) const { return root_ + std::string(logical); }

  // Writes a file (creating parent directories).
  void Write(std::string_view logical, std::string_view content);
  // Creates a symlink at `logical` pointing to `target` (taken verbatim).
  void Link(std::string_view logical, std::string_view target);
  // Creates a symlink at `logical` to the logical path `target`, written
  // relative to the link's directory (as sysfs writes its links).
  void LinkRelative(std::string_view logical, std::string_view target);
  void MakeDir(std::string_view logical);
  void Remove(std::string_view logical);  // file, link or whole directory
  void Rename(std::string_view from, std::string_view to);
  // Copies a fixture tree (for example EDGEMON_FIXTURES "/agx-orin") into the root.
  void CopyFrom(const std::string& dir);

 private:
  std::string root_;
};

// The directory of the checked-in fixture trees.
std::string FixturesDir();
// The directory of one fixture board ("agx-orin", "node_exporter/node_exporter", ...).
std::string Fixture(std::string_view name);

}  // namespace edgemon::testing
