// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class GpuDevfreqCollector final : public Collector {
 public:
  std::string_view Name() const override { return "gpu_devfreq"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeGpuDevfreqCollector() { return std::make_unique<GpuDevfreqCollector>(); }

}  // namespace edgemon
