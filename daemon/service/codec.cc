#include "daemon/service/codec.h"

#include <algorithm>

#include "edgemon/select.h"
#include "proto/convert.h"

namespace edgemon::service {

void ToProto(const Inventory& inventory, const Frame* frame, v1::BoardInfo* out) {
  const BoardInfo& b = inventory.board;
  wire::ToProto(b, out);
  const Channel* mode = inventory.Find(Kind::kBoard, "nvpmodel", Field::kMode);
  if (frame == nullptr || mode == nullptr) return;
  Value id = frame->Get(mode->id);
  if (!id) return;
  out->set_nvpmodel_id(*id);
  out->set_nvpmodel("");
  for (const auto& [mid, name] : b.nvpmodel_modes) {
    if (mid == *id) out->set_nvpmodel(name);
  }
}

Result<std::vector<ChannelId>> SelectChannelsOrAll(const Inventory& inventory,
                                                   const std::vector<std::string>& wanted) {
  if (wanted.empty()) return std::vector<ChannelId>{};  // every channel, later ones too
  return edgemon::SelectChannels(inventory, wanted);
}

}  // namespace edgemon::service
