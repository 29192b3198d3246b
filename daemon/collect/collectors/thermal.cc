// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class ThermalCollector final : public Collector {
 public:
  std::string_view Name() const override { return "thermal"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeThermalCollector() { return std::make_unique<ThermalCollector>(); }

}  // namespace edgemon
