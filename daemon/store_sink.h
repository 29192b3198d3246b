// StoreSink: the sampler's frames into the ring store (a FrameSink). Registers
// the inventory whenever its generation changes, then appends the frame (the
// sampler's shared snapshot itself, not a copy). Both calls only queue work
// for the store's writer thread: never blocks.
#pragma once

#include <cstdint>

#include "daemon/sampler.h"
#include "daemon/store/ring_store.h"

namespace edgemon {

class StoreSink final : public FrameSink {
 public:
  explicit StoreSink(store::RingStore& s) : store_(s) {}
  void OnFrame(const Inventory& inv, uint64_t generation, const Frame& frame) override {
    Declare(inv, generation);
    store_.Append(frame);
  }
  void OnSharedFrame(const Inventory& inv, uint64_t generation,
                     const std::shared_ptr<const Frame>& frame, int64_t) override {
    Declare(inv, generation);
    store_.Append(frame);
  }

 private:
  void Declare(const Inventory& inv, uint64_t generation) {
    if (generation != generation_) {
      store_.SetInventory(inv);
      generation_ = generation;
    }
  }
  store::RingStore& store_;
  uint64_t generation_ = 0;
};

}  // namespace edgemon
