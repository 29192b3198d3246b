// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class RaplCollector final : public Collector {
 public:
  std::string_view Name() const override { return "rapl"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeRaplCollector() { return std::make_unique<RaplCollector>(); }

}  // namespace edgemon
