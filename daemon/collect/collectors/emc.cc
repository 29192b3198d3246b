// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class EmcCollector final : public Collector {
 public:
  std::string_view Name() const override { return "emc"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeEmcCollector() { return std::make_unique<EmcCollector>(); }

}  // namespace edgemon
