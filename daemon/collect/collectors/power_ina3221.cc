// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class Ina3221Collector final : public Collector {
 public:
  std::string_view Name() const override { return "power_ina3221"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeIna3221Collector() { return std::make_unique<Ina3221Collector>(); }

}  // namespace edgemon
