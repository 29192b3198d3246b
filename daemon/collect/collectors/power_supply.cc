// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class PowerSupplyCollector final : public Collector {
 public:
  std::string_view Name() const override { return "power_supply"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakePowerSupplyCollector() { return std::make_unique<PowerSupplyCollector>(); }

}  // namespace edgemon
