#include "edgemon/rail_tree.h"

#include <set>

namespace edgemon {

void WalkRailTree(const std::vector<RailLink>& rails, const std::function<void(size_t, int)>& enter,
                  const std::function<void(size_t, int, const std::vector<size_t>&)>& leave) {
  std::set<std::string> names;
  for (const RailLink& r : rails) names.insert(r.name);
  std::set<std::string> done;
  auto visit = [&](auto&& self, size_t i, int depth) -> void {
    if (!done.insert(rails[i].name).second) return;  // a cycle or a repeated name
    if (enter) enter(i, depth);
    std::vector<size_t> children;
    for (size_t c = 0; c < rails.size(); ++c) {
      const RailLink& child = rails[c];
      if (child.parent != rails[i].name || child.name == rails[i].name || done.count(child.name)) {
        continue;
      }
      children.push_back(c);
      self(self, c, depth + 1);
    }
    if (leave) leave(i, depth, children);
  };
  auto top = [&](const RailLink& r) {
    return r.parent.empty() || r.parent == r.name || !names.count(r.parent);
  };
  for (size_t i = 0; i < rails.size(); ++i) {
    if (top(rails[i]) && rails[i].input) visit(visit, i, 0);
  }
  for (size_t i = 0; i < rails.size(); ++i) {
    if (top(rails[i])) visit(visit, i, 0);
  }
  for (size_t i = 0; i < rails.size(); ++i) visit(visit, i, 0);  // members of a parent cycle
}

}  // namespace edgemon
