// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class Ina3221IioCollector final : public Collector {
 public:
  std::string_view Name() const override { return "power_ina3221_iio"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeIna3221IioCollector() { return std::make_unique<Ina3221IioCollector>(); }

}  // namespace edgemon
