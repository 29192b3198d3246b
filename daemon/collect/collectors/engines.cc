// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class EngineCollector final : public Collector {
 public:
  std::string_view Name() const override { return "engines"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeEngineCollector() { return std::make_unique<EngineCollector>(); }

}  // namespace edgemon
