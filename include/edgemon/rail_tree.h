// The rail tree: the one order in which every surface (edgetop, the record
// report, summary.json) lists power rails. A board names an input rail (the
// whole board's supply) and sub-rails that a parent rail already includes
// (Channel::parent); the tree shows each sub-rail under its parent and never
// adds top-level rails to sub-rails.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace edgemon {

// A rail as the tree needs it.
struct RailLink {
  std::string name;
  std::string parent;  // "" at the top level
  bool input = false;  // the board's input (supply) rail
};

// Walks the rails in tree order: input rails at the top level first, then the
// other top-level rails in the order given (a rail whose parent is empty,
// itself or not in the list is top level), each followed depth-first by its
// sub-rails one level deeper, in the order given. Every name is visited once
// (a repeated name, or members of a parent cycle, which appear at the top
// level after the rest). `enter(i, depth)` is called for rails[i] before its
// sub-rails; `leave(i, depth, children)` after them, with the indices of the
// sub-rails visited under it (empty for a leaf).
void WalkRailTree(const std::vector<RailLink>& rails,
                  const std::function<void(size_t index, int depth)>& enter,
                  const std::function<void(size_t index, int depth,
                                           const std::vector<size_t>& children)>& leave = {});

}  // namespace edgemon
