// PLACEHOLDER: replaced by the real collector.
#include "../collectors.h"

namespace edgemon {
namespace {

class BoardCollector final : public Collector {
 public:
  std::string_view Name() const override { return "board"; }
  void Discover(DiscoverContext&) override {}
  void Sample(SampleContext&) override {}
};

}  // namespace

std::unique_ptr<Collector> MakeBoardCollector() { return std::make_unique<BoardCollector>(); }

}  // namespace edgemon
