// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class CpuCollector final : public Collector {
 public:
  std::string_view Name() const override { return "cpu"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeCpuCollector() { return std::make_unique<CpuCollector>(); }

}  // namespace edgemon
