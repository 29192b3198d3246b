// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class FanCollector final : public Collector {
 public:
  std::string_view Name() const override { return "fan"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeFanCollector() { return std::make_unique<FanCollector>(); }

}  // namespace edgemon
