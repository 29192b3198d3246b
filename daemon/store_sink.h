// StoreSink: the sampler's frames into the ring store (a FrameSink). Registers
// the inventory whenever its generation changes, then appends the frame.
// Both calls only queue work for the store's writer thread: never blocks.
#pragma once

#include <cstdint>

#include "daemon/sampler.h"
#include "daemon/store/ring_store.h"

namespace edgemon {

class StoreSink final : public FrameSink {
 public:
  explicit StoreSink(store::RingStore& s) : store_(s) {}
  void OnFrame(const Inventory& inv, uint64_t generation, const Frame& frame) override {
    if (generation != generation_) {
      store_.SetInventory(inv);
      generation_ = generation;
    }
    store_.Append(frame);
  }

 private:
  store::RingStore& store_;
  uint64_t generation_ = 0;
};

}  // namespace edgemon
