#include "proto/convert.h"

#include <algorithm>
#include <limits>

namespace edgemon::wire {
namespace {

constexpr int64_t kNsPerMs = 1'000'000;

}  // namespace

std::vector<std::string> FlagNames(uint32_t flags) {
  std::vector<std::string> out;
  if (flags & kFlagConstant) out.emplace_back("constant");
  if (flags & kFlagInputRail) out.emplace_back("input");
  if (flags & kFlagCounter) out.emplace_back("counter");
  if (flags & kFlagDerived) out.emplace_back("derived");
  return out;
}

uint32_t FlagsFromNames(const google::protobuf::RepeatedPtrField<std::string>& flags) {
  uint32_t out = kFlagNone;
  for (const std::string& f : flags) {
    if (f == "constant") out |= kFlagConstant;
    if (f == "input") out |= kFlagInputRail;
    if (f == "counter") out |= kFlagCounter;
    if (f == "derived") out |= kFlagDerived;
  }
  return out;
}

std::optional<Unit> UnitFromString(std::string_view s) {
  for (int u = static_cast<int>(Unit::kNone); u <= static_cast<int>(Unit::kId); ++u) {
    if (ToString(static_cast<Unit>(u)) == s) return static_cast<Unit>(u);
  }
  return std::nullopt;
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
  c.flags = FlagsFromNames(pb.flags());
  if (pb.has_min()) c.min = pb.min();
  if (pb.has_max()) c.max = pb.max();
  if (pb.has_crit()) c.crit = pb.crit();
  for (const v1::TripPoint& t : pb.trips()) c.trips.push_back({t.type(), t.temp_mc()});
  for (const auto& [k, v] : pb.attrs()) c.attrs.emplace_back(k, v);
  std::sort(c.attrs.begin(), c.attrs.end());  // map order is unspecified
  return c;
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

void ToProto(const Bucket& b, v1::Bucket* out) {
  out->set_t_ns(b.t_ns);
  out->set_min(b.min);
  out->set_avg(b.avg);
  out->set_max(b.max);
  out->set_count(static_cast<uint64_t>(b.count));
}

Bucket BucketFromProto(const v1::Bucket& pb) {
  const uint64_t count = std::min<uint64_t>(pb.count(), std::numeric_limits<int64_t>::max());
  return Bucket{pb.t_ns(), pb.min(), pb.avg(), pb.max(), static_cast<int64_t>(count)};
}

void ToProto(const Window& w, v1::Window* out) {
  out->set_id(w.id);
  out->set_label(w.label);
  out->set_start_ns(w.start_ns);
  if (w.end_ns) out->set_end_ns(*w.end_ns);
  out->set_abandoned(w.abandoned);
  if (w.lease_ns) out->set_lease_ms(static_cast<uint32_t>(*w.lease_ns / kNsPerMs));
  if (w.result.items) out->set_items(*w.result.items);
  if (w.result.exit_status) out->set_exit_status(*w.result.exit_status);
  out->set_input_rail(w.result.input_rail);
  if (w.result.input_energy_mj) out->set_input_energy_mj(*w.result.input_energy_mj);
}

Window WindowFromProto(const v1::Window& pb) {
  Window w;
  w.id = pb.id();
  w.label = pb.label();
  w.start_ns = pb.start_ns();
  if (pb.has_end_ns()) w.end_ns = pb.end_ns();
  w.abandoned = pb.abandoned();
  if (pb.has_lease_ms()) w.lease_ns = int64_t{pb.lease_ms()} * kNsPerMs;
  if (pb.has_items()) w.result.items = pb.items();
  if (pb.has_exit_status()) w.result.exit_status = pb.exit_status();
  w.result.input_rail = pb.input_rail();
  if (pb.has_input_energy_mj()) w.result.input_energy_mj = pb.input_energy_mj();
  return w;
}

void ToProto(const Summary& s, v1::Summary* out) {
  out->set_from_ns(s.from_ns);
  out->set_to_ns(s.to_ns);
  out->set_duration_s(s.duration_s);
  for (const RailSummary& r : s.rails) {
    v1::RailSummary* pr = out->add_rails();
    pr->set_name(r.name);
    pr->set_parent(r.parent);
    pr->set_input(r.input);
    if (r.energy_mj) pr->set_energy_mj(*r.energy_mj);
    if (r.avg_power_mw) pr->set_avg_power_mw(*r.avg_power_mw);
    if (r.peak_power_mw) pr->set_peak_power_mw(*r.peak_power_mw);
  }
  for (const TempSummary& t : s.temps) {
    v1::TempSummary* pt = out->add_temps();
    pt->set_name(t.name);
    if (t.start_mc) pt->set_start_mc(*t.start_mc);
    pt->set_min_mc(t.min_mc);
    pt->set_max_mc(t.max_mc);
  }
  for (const FreqResidency& f : s.residency) {
    v1::FreqResidency* pf = out->add_residency();
    pf->set_name(f.name);
    for (const auto& [khz, share] : f.khz_share) (*pf->mutable_khz_share())[khz] = share;
  }
  for (const LoadSummary& l : s.loads) {
    v1::LoadSummary* pl = out->add_loads();
    pl->set_kind(l.kind);
    pl->set_name(l.name);
    pl->set_mean_permille(l.mean_permille);
    pl->set_peak_permille(l.peak_permille);
  }
  out->set_samples(s.samples);
  out->set_gaps(s.gaps);
  out->set_note(s.note);
  if (s.min_rail_rate_hz) out->set_min_rail_rate_hz(*s.min_rail_rate_hz);
  if (s.max_rail_rate_hz) out->set_max_rail_rate_hz(*s.max_rail_rate_hz);
  if (s.requested_from_ns) out->set_requested_from_ns(*s.requested_from_ns);
  if (s.requested_to_ns) out->set_requested_to_ns(*s.requested_to_ns);
  out->set_bad_frames(s.bad_frames);
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
    RailSummary& rs = s.rails.emplace_back();
    rs.name = r.name();
    rs.parent = r.parent();
    rs.input = r.input();
    if (r.has_energy_mj()) rs.energy_mj = r.energy_mj();
    if (r.has_avg_power_mw()) rs.avg_power_mw = r.avg_power_mw();
    if (r.has_peak_power_mw()) rs.peak_power_mw = r.peak_power_mw();
  }
  for (const v1::TempSummary& t : pb.temps()) {
    TempSummary& ts = s.temps.emplace_back();
    ts.name = t.name();
    if (t.has_start_mc()) ts.start_mc = t.start_mc();
    ts.min_mc = t.min_mc();
    ts.max_mc = t.max_mc();
  }
  for (const v1::FreqResidency& r : pb.residency()) {
    FreqResidency& fr = s.residency.emplace_back();
    fr.name = r.name();
    for (const auto& [khz, share] : r.khz_share()) fr.khz_share.emplace_back(khz, share);
    std::sort(fr.khz_share.begin(), fr.khz_share.end());
  }
  for (const v1::LoadSummary& l : pb.loads()) {
    s.loads.push_back({l.kind(), l.name(), l.mean_permille(), l.peak_permille()});
  }
  return s;
}

}  // namespace edgemon::wire
