#include "daemon/service/codec.h"

#include <algorithm>

#include "edgemon/select.h"

namespace edgemon::service {

std::vector<std::string> FlagNames(uint32_t flags) {
  std::vector<std::string> out;
  if (flags & kFlagConstant) out.emplace_back("constant");
  if (flags & kFlagInputRail) out.emplace_back("input");
  if (flags & kFlagCounter) out.emplace_back("counter");
  if (flags & kFlagDerived) out.emplace_back("derived");
  return out;
}

void ToProto(const Channel& c, v1::Channel* out) {
  out->set_id(c.id);
  out->set_kind(std::string(ToString(c.kind)));
  out->set_name(c.name);
  out->set_field(std::string(ToString(c.field)));
  out->set_unit(std::string(ToString(c.unit)));
  out->set_device(c.device);
  out->set_parent(c.parent);
  for (auto& f : FlagNames(c.flags)) out->add_flags(f);
  if (c.min) {
    out->set_has_min(true);
    out->set_min(*c.min);
  }
  if (c.max) {
    out->set_has_max(true);
    out->set_max(*c.max);
  }
  if (c.crit) {
    out->set_has_crit(true);
    out->set_crit(*c.crit);
  }
  for (const auto& t : c.trips) {
    auto* tp = out->add_trips();
    tp->set_type(t.type);
    tp->set_temp_mc(t.temp_mc);
  }
  for (const auto& [k, v] : c.attrs) (*out->mutable_attrs())[k] = v;
  out->set_key(c.Key());
}

void ToProto(const BoardInfo& b, v1::BoardInfo* out) {
  out->set_model(b.model);
  out->set_soc(b.soc);
  out->set_l4t(b.l4t);
  out->set_jetpack(b.jetpack);
  out->set_nvpmodel(b.nvpmodel);
  out->set_nvpmodel_id(b.nvpmodel_id);
  for (const auto& [id, name] : b.nvpmodel_modes) (*out->mutable_nvpmodel_modes())[id] = name;
  out->set_kernel(b.kernel);
  out->set_cpu_model(b.cpu_model);
  out->set_hostname(b.hostname);
}

void ToProto(const Inventory& inventory, const Frame* frame, v1::BoardInfo* out) {
  const BoardInfo& b = inventory.board;
  ToProto(b, out);
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

void ToProto(const Frame& frame, const std::vector<ChannelId>& subset, uint64_t generation,
             v1::Frame* out) {
  out->Clear();
  out->set_seq(frame.seq);
  out->set_boottime_ns(frame.boottime_ns);
  out->set_realtime_ns(frame.realtime_ns);
  out->set_generation(generation);
  auto put = [out](ChannelId id, const Value& v) {
    if (!v) return;
    out->add_ids(id);
    out->add_values(*v);
  };
  if (subset.empty()) {
    out->mutable_ids()->Reserve(static_cast<int>(frame.values.size()));
    out->mutable_values()->Reserve(static_cast<int>(frame.values.size()));
    for (ChannelId id = 0; id < frame.values.size(); ++id) put(id, frame.values[id]);
  } else {
    for (ChannelId id : subset) put(id, frame.Get(id));
  }
}

Result<std::vector<ChannelId>> SelectChannels(const Inventory& inventory,
                                              const std::vector<std::string>& wanted) {
  if (wanted.empty()) return std::vector<ChannelId>{};  // every channel, later ones too
  return edgemon::SelectChannels(inventory, wanted);
}

}  // namespace edgemon::service
