// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class AmdgpuCollector final : public Collector {
 public:
  std::string_view Name() const override { return "amdgpu"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeAmdgpuCollector() { return std::make_unique<AmdgpuCollector>(); }

}  // namespace edgemon
