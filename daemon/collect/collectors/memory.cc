// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class MemoryCollector final : public Collector {
 public:
  std::string_view Name() const override { return "memory"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeMemoryCollector() { return std::make_unique<MemoryCollector>(); }

}  // namespace edgemon
