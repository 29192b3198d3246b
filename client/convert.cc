#include "client/convert.h"

#include <algorithm>

namespace edgemon::client {

std::optional<Unit> UnitFromString(std::string_view s) {
  for (int u = static_cast<int>(Unit::kNone); u <= static_cast<int>(Unit::kId); ++u) {
    if (ToString(static_cast<Unit>(u)) == s) return static_cast<Unit>(u);
  }
  return std::nullopt;
}

uint32_t FlagsFromProto(const google::protobuf::RepeatedPtrField<std::string>& flags) {
  uint32_t out = kFlagNone;
  for (const std::string& f : flags) {
    if (f == "constant") out |= kFlagConstant;
    if (f == "input") out |= kFlagInputRail;
    if (f == "counter") out |= kFlagCounter;
    if (f == "derived") out |= kFlagDerived;
  }
  return out;
}

std::optional<Channel> ChannelFromProto(const v1::Channel& pb) {
  std::optional<Kind> kind = KindFromString(pb.kind());
  std::optional<Field> field = FieldFromString(pb.field());
  if (!kind || !field) return std::nullopt;
  Channel c;
  c.id = pb.id();
  c.kind = *kind;
  c.name = pb.name();
  c.field = *field;
  // The unit is fixed per field; trust the model, fall back to the wire.
  c.unit = UnitOf(*field);
  if (c.unit == Unit::kNone) c.unit = UnitFromString(pb.unit()).value_or(Unit::kNone);
  c.device = pb.device();
  c.parent = pb.parent();
  c.flags = FlagsFromProto(pb.flags());
  if (pb.has_min()) c.min = pb.min();
  if (pb.has_max()) c.max = pb.max();
  if (pb.has_crit()) c.crit = pb.crit();
  for (const v1::TripPoint& t : pb.trips()) c.trips.push_back({t.type(), t.temp_mc()});
  for (const auto& [k, v] : pb.attrs()) c.attrs.emplace_back(k, v);
  std::sort(c.attrs.begin(), c.attrs.end());  // map order is unspecified
  return c;
}

BoardInfo BoardFromProto(const v1::BoardInfo& pb) {
  BoardInfo b;
  b.model = pb.model();
  b.soc = pb.soc();
  b.l4t = pb.l4t();
  b.jetpack = pb.jetpack();
  b.nvpmodel = pb.nvpmodel();
  b.nvpmodel_id = pb.nvpmodel_id();
  b.kernel = pb.kernel();
  b.cpu_model = pb.cpu_model();
  b.hostname = pb.hostname();
  for (const auto& [id, name] : pb.nvpmodel_modes()) b.nvpmodel_modes.emplace_back(id, name);
  std::sort(b.nvpmodel_modes.begin(), b.nvpmodel_modes.end());
  return b;
}

edgemon::client::DeviceInfo DeviceInfoFromProto(const v1::DeviceInfo& pb) {
  edgemon::client::DeviceInfo info;
  info.inventory.board = BoardFromProto(pb.board());
  info.generation = pb.generation();
  info.daemon_version = pb.daemon_version();
  info.interval_ms = pb.interval_ms();
  info.energy_rate_hz = pb.energy_rate_hz();
  info.api_version = pb.api_version();
  if (pb.now_ns() != 0) info.now_ns = pb.now_ns();
  std::vector<Channel>& channels = info.inventory.channels;
  for (const v1::Channel& c : pb.channels()) {
    if (c.id() > kMaxChannelId) {
      ++info.unknown_channels;
      continue;
    }
    if (c.id() >= channels.size()) {
      size_t old = channels.size();
      channels.resize(c.id() + 1);
      for (size_t i = old; i < channels.size(); ++i) channels[i].id = static_cast<ChannelId>(i);
    }
    std::optional<Channel> ch = ChannelFromProto(c);
    if (ch) {
      channels[c.id()] = std::move(*ch);
    } else {
      ++info.unknown_channels;
    }
  }
  return info;
}

std::optional<Frame> FrameFromProto(const v1::Frame& pb) {
  if (pb.ids_size() != pb.values_size()) return std::nullopt;
  Frame f;
  f.seq = pb.seq();
  f.boottime_ns = pb.boottime_ns();
  f.realtime_ns = pb.realtime_ns();
  ChannelId top = 0;
  for (ChannelId id : pb.ids()) {
    if (id > kMaxChannelId) return std::nullopt;
    top = std::max(top, id);
  }
  if (pb.ids_size() > 0) f.values.resize(static_cast<size_t>(top) + 1);
  for (int i = 0; i < pb.ids_size(); ++i) f.values[pb.ids(i)] = pb.values(i);
  return f;
}

v1::Frame FrameToProto(const Frame& frame, uint64_t generation) {
  v1::Frame pb;
  pb.set_seq(frame.seq);
  pb.set_boottime_ns(frame.boottime_ns);
  pb.set_realtime_ns(frame.realtime_ns);
  pb.set_generation(generation);
  for (size_t id = 0; id < frame.values.size(); ++id) {
    if (!frame.values[id]) continue;
    pb.add_ids(static_cast<uint32_t>(id));
    pb.add_values(*frame.values[id]);
  }
  return pb;
}

Window WindowFromProto(const v1::Window& pb) {
  Window w;
  w.id = pb.id();
  w.label = pb.label();
  w.start_ns = pb.start_ns();
  if (pb.has_end_ns()) w.end_ns = pb.end_ns();
  w.abandoned = pb.abandoned();
  return w;
}

Summary SummaryFromProto(const v1::Summary& pb) {
  Summary s;
  s.from_ns = pb.from_ns();
  s.to_ns = pb.to_ns();
  s.duration_s = pb.duration_s();
  s.samples = pb.samples();
  s.gaps = pb.gaps();
  s.note = pb.note();
  s.bad_frames = pb.bad_frames();
  if (pb.has_min_rail_rate_hz()) s.min_rail_rate_hz = pb.min_rail_rate_hz();
  if (pb.has_max_rail_rate_hz()) s.max_rail_rate_hz = pb.max_rail_rate_hz();
  if (pb.has_requested_from_ns()) s.requested_from_ns = pb.requested_from_ns();
  if (pb.has_requested_to_ns()) s.requested_to_ns = pb.requested_to_ns();
  for (const v1::RailSummary& r : pb.rails()) {
    RailSummary rs{r.name(), r.parent(), r.input(), std::nullopt, std::nullopt, std::nullopt};
    if (r.has_energy_mj()) rs.energy_mj = r.energy_mj();
    if (r.has_avg_power_mw()) rs.avg_power_mw = r.avg_power_mw();
    if (r.has_peak_power_mw()) rs.peak_power_mw = r.peak_power_mw();
    s.rails.push_back(std::move(rs));
  }
  for (const v1::TempSummary& t : pb.temps()) {
    TempSummary ts{t.name(), std::nullopt, t.min_mc(), t.max_mc()};
    if (t.has_start_mc()) ts.start_mc = t.start_mc();
    s.temps.push_back(std::move(ts));
  }
  for (const v1::FreqResidency& r : pb.residency()) {
    FreqResidency fr;
    fr.name = r.name();
    for (const auto& [khz, share] : r.khz_share()) fr.khz_share.emplace_back(khz, share);
    std::sort(fr.khz_share.begin(), fr.khz_share.end());
    s.residency.push_back(std::move(fr));
  }
  return s;
}

Process ProcessFromProto(const v1::Process& pb) {
  Process p;
  p.pid = pb.pid();
  p.user = pb.user();
  p.name = pb.name();
  p.command = pb.command();
  if (pb.has_cpu_permille()) p.cpu_permille = pb.cpu_permille();
  if (pb.has_rss_kib()) p.rss_kib = pb.rss_kib();
  if (pb.has_gpu_mem()) p.gpu_mem_kib = pb.gpu_mem_kib();
  return p;
}

}  // namespace edgemon::client
