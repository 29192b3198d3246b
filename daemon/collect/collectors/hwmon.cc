// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class HwmonCollector final : public Collector {
 public:
  std::string_view Name() const override { return "hwmon"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeHwmonCollector() { return std::make_unique<HwmonCollector>(); }

}  // namespace edgemon
