// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class NvmlCollector final : public Collector {
 public:
  std::string_view Name() const override { return "nvml"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeNvmlCollector() { return std::make_unique<NvmlCollector>(); }

}  // namespace edgemon
