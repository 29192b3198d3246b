// Harness: runs one collector through a Collection, as the daemon does, on
// a tick of one second of fake boottime per Sample().
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "daemon/collect/collection.h"

namespace edgemon::testing {

// Runs one collector through a Collection, as the daemon does.
class Harness {
 public:
  Harness(SysFs& fs, std::unique_ptr<Collector> collector)
      : collection_(fs, One(std::move(collector)), CollectOptions{}, nullptr) {
    collection_.Discover();
  }

  Collection& collection() { return collection_; }
  const Inventory& inventory() const { return collection_.inventory(); }
  const Channel* Find(Kind kind, std::string_view name, Field field) const {
    return inventory().Find(kind, name, field);
  }
  void Sample() {
    now_ns_ += 1'000'000'000;
    collection_.Sample(now_ns_, frame_);
  }
  // The latest value of a channel; nullopt when absent or not declared.
  Value Get(Kind kind, std::string_view name, Field field) const {
    const Channel* c = Find(kind, name, field);
    return c == nullptr ? std::nullopt : frame_.Get(c->id);
  }
  uint64_t Errors(Kind kind, std::string_view name, Field field) const {
    const Channel* c = Find(kind, name, field);
    return c == nullptr ? 0 : collection_.error_counts().at(c->id);
  }

 private:
  static std::vector<std::unique_ptr<Collector>> One(std::unique_ptr<Collector> c) {
    std::vector<std::unique_ptr<Collector>> v;
    v.push_back(std::move(c));
    return v;
  }

  Collection collection_;
  Frame frame_;
  int64_t now_ns_ = 0;
};

}  // namespace edgemon::testing
