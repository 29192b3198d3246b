// The OTLP metrics encoder (daemon/push/otlp.h). Each channel is planned
// once (metric name, unit, kind of data, scale, attributes); the planned
// metrics are then filled with one point per channel and frame.
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "daemon/metrics/exposition.h"
#include "daemon/push/otlp.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"

#ifndef EDGEMON_VERSION
#error "EDGEMON_VERSION is set by daemon/push/otlp/CMakeLists.txt"
#endif

namespace edgemon::push {
namespace {

namespace collector = opentelemetry::proto::collector::metrics::v1;
namespace common = opentelemetry::proto::common::v1;
namespace otlp = opentelemetry::proto::metrics::v1;

// Protobuf strings must be UTF-8 (a receiver rejects the whole request
// otherwise): a byte that does not start a well-formed sequence becomes
// U+FFFD. Names and labels come from sysfs and from configuration.
std::string Utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto b = static_cast<unsigned char>(s[i]);
    size_t len = b < 0x80                   ? 1
                 : (b >= 0xC2 && b <= 0xDF) ? 2
                 : (b >= 0xE0 && b <= 0xEF) ? 3
                 : (b >= 0xF0 && b <= 0xF4) ? 4
                                            : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    if (ok && len >= 3) {
      auto b1 = static_cast<unsigned char>(s[i + 1]);
      // No overlong forms, no surrogates, nothing above U+10FFFF.
      ok = !(b == 0xE0 && b1 < 0xA0) && !(b == 0xED && b1 >= 0xA0) && !(b == 0xF0 && b1 < 0x90) &&
           !(b == 0xF4 && b1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

// One attribute, kept until it is written into a data point.
struct Attr {
  std::string key;
  std::variant<std::string, bool, int64_t> value;
};

void AddAttr(google::protobuf::RepeatedPtrField<common::KeyValue>* out, const Attr& a) {
  common::KeyValue* kv = out->Add();
  kv->set_key(a.key);
  if (const auto* s = std::get_if<std::string>(&a.value)) {
    kv->mutable_value()->set_string_value(*s);
  } else if (const auto* b = std::get_if<bool>(&a.value)) {
    kv->mutable_value()->set_bool_value(*b);
  } else {
    kv->mutable_value()->set_int_value(std::get<int64_t>(a.value));
  }
}

using metrics::Scale;

struct Plan {
  std::string name;
  std::string unit;
  std::string description;
  bool sum = false;  // cumulative monotonic Sum; else Gauge
  Scale scale = Scale::kOne;
  std::vector<Attr> attrs;
};

// The UCUM unit of a /metrics base unit ("" stays "": a state, a mode or a
// count, which Prometheus names without a unit).
std::string Ucum(std::string_view prometheus_unit) {
  static constexpr std::pair<std::string_view, std::string_view> kUnits[] = {
      {"hertz", "Hz"},  {"ratio", "1"},  {"celsius", "Cel"}, {"watts", "W"},   {"volts", "V"},
      {"amperes", "A"}, {"joules", "J"}, {"bytes", "By"},    {"seconds", "s"}, {"rpm", "rpm"}};
  for (const auto& [word, ucum] : kUnits) {
    if (word == prometheus_unit) return std::string(ucum);
  }
  return std::string(prometheus_unit);
}

// edgemon.<kind>.<field part> for a /metrics family edgemon_<kind>_<field
// part>_<unit>: Prometheus's OTLP receiver turns the name and unit back into
// the family (dots become '_', the unit is appended: Hz -> _hertz, 1 ->
// _ratio, a monotonic sum gets _total), so both paths land on one series.
std::string OtlpName(const Channel& c, const metrics::ChannelSeries& s) {
  std::string prefix =
      c.kind == Kind::kBoard ? metrics::SanitizeName(c.name) : std::string(ToString(c.kind));
  std::string_view rest = s.family;
  std::string head = "edgemon_" + prefix + "_";
  if (rest.starts_with(head)) {
    rest.remove_prefix(head.size());
  } else if (rest.starts_with("edgemon_")) {
    rest.remove_prefix(8);
  }
  if (!s.unit.empty() && rest.ends_with("_" + s.unit)) rest.remove_suffix(s.unit.size() + 1);
  return "edgemon." + prefix + "." + std::string(rest);
}

// hw.id of a component: "<kind>/<name>", unique on the board.
std::string HwId(Kind kind, std::string_view name) {
  return Utf8(std::string(ToString(kind)) + "/" + std::string(name));
}

// The hw.type of what a rail feeds, a well-known value of the conventions'
// enum (kOtlpSemconvVersion): the first of GPU, CPU or memory (DDR, DRAM,
// VDDQ, MEM) its name names; else power_supply (the rail is a supply's
// output). "power_rail" is not in the enum.
std::string RailHwType(std::string_view name) {
  std::string upper(name);
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
      {"GPU", "gpu"},     {"CPU", "cpu"},     {"DDR", "memory"},
      {"DRAM", "memory"}, {"VDDQ", "memory"}, {"MEM", "memory"}};
  size_t best = std::string::npos;
  std::string_view type = "power_supply";
  for (const auto& [word, t] : kTypes) {
    if (size_t at = upper.find(word); at < best) {
      best = at;
      type = t;
    }
  }
  return std::string(type);
}

// The hardware semantic conventions' attributes of a rail: hw.id, hw.type
// (`type`; none on the hw.host.* metrics, which have no hw.type), hw.name,
// hw.parent (the rail this one is part of) and edgemon.rail (the rail's name
// as the board labels it, whatever hw.type says).
std::vector<Attr> RailAttrs(std::string_view name, std::string_view parent,
                            std::optional<std::string> type) {
  std::vector<Attr> a{{"hw.id", HwId(Kind::kRail, name)}};
  if (type) a.push_back({"hw.type", std::move(*type)});
  a.push_back({"hw.name", Utf8(name)});
  if (!parent.empty()) a.push_back({"hw.parent", HwId(Kind::kRail, parent)});
  a.push_back({"edgemon.rail", Utf8(name)});
  return a;
}

// The hw.gpu.task of an engine's load: NVENC (MSENC on older boards) is the
// encoder, NVDEC the decoder; "" for other engines (not GPU tasks).
std::string_view GpuTask(std::string_view engine) {
  if (engine.starts_with("NVENC") || engine.starts_with("MSENC")) return "encoder";
  if (engine.starts_with("NVDEC")) return "decoder";
  return "";
}

Plan PlanChannel(const Channel& c, const metrics::ChannelSeries& s) {
  Plan p;
  p.unit = Ucum(s.unit);
  p.scale = s.scale;
  p.sum = s.type == metrics::MetricType::kCounter;
  p.name = OtlpName(c, s);
  p.description = s.help;
  bool input = c.Has(kFlagInputRail);
  auto hw = [&](const char* name, const char* type, const char* description) {
    p.name = name;
    p.description = description;
    p.attrs = {
        {"hw.id", HwId(c.kind, c.name)}, {"hw.type", std::string(type)}, {"hw.name", Utf8(c.name)}};
  };
  if (c.kind == Kind::kRail) {
    if (c.field == Field::kPower) {
      p.name = input ? "hw.host.power" : "hw.power";
      p.description = input ? "Power drawn by the whole board (its input rail)"
                            : "Power of a rail (sub-rails are part of their hw.parent)";
    } else if (c.field == Field::kEnergy) {
      p.name = input ? "hw.host.energy" : "hw.energy";
      p.description = input ? "Energy drawn by the whole board (its input rail) since the counter "
                              "started"
                            : "Energy of a rail since the counter started (sub-rails are part of "
                              "their hw.parent)";
    } else if (c.field == Field::kVoltage) {
      p.name = "hw.voltage";
      p.description = "Voltage of a rail";
    }
    std::optional<std::string> type;
    if (c.field == Field::kVoltage) {
      type = "voltage";
    } else if (!input || (c.field != Field::kPower && c.field != Field::kEnergy)) {
      type = RailHwType(c.name);
    }
    p.attrs = RailAttrs(c.name, c.parent, type);
    if (input) p.attrs.push_back({"edgemon.rail.input", true});
    if (!c.device.empty() && c.device != c.name) p.attrs.push_back({"device", Utf8(c.device)});
    return p;
  }
  if (c.kind == Kind::kThermal && c.field == Field::kTemp) {
    hw("hw.temperature", "temperature", "Temperature of a thermal zone or sensor");
  } else if (c.kind == Kind::kFan && c.field == Field::kSpeed) {
    hw("hw.fan.speed", "fan", "Fan speed in revolutions per minute");
  } else if (c.kind == Kind::kGpu && c.field == Field::kLoad) {
    hw("hw.gpu.utilization", "gpu", "GPU busy share (0..1), by task");
    p.attrs.push_back({"hw.gpu.task", std::string("general")});
  } else if (c.kind == Kind::kEngine && c.field == Field::kLoad && !GpuTask(c.name).empty()) {
    hw("hw.gpu.utilization", "gpu", "GPU busy share (0..1), by task");
    p.attrs.push_back({"hw.gpu.task", std::string(GpuTask(c.name))});
  } else {
    // /metrics's labels as they are: the kind's label and the device.
    for (const auto& [key, value] : s.labels) p.attrs.push_back({key, Utf8(value)});
    return p;
  }
  if (!c.device.empty() && c.device != c.name) p.attrs.push_back({"device", Utf8(c.device)});
  return p;
}

// The request's one ResourceMetrics with the board's resource and the scope;
// returns the scope's metrics to fill.
google::protobuf::RepeatedPtrField<otlp::Metric>* Begin(collector::ExportMetricsServiceRequest& req,
                                                        const Identity& id) {
  otlp::ResourceMetrics* rm = req.add_resource_metrics();
  std::vector<Attr> attrs{{"service.name", std::string("edgemond")},
                          {"service.version", std::string(EDGEMON_VERSION)}};
  auto add = [&](const char* key, const std::string& value) {
    if (!value.empty()) attrs.push_back({key, Utf8(value)});
  };
  add("service.instance.id", id.host_name);  // Prometheus's `instance`
  add("host.name", id.host_name);
  add("host.id", id.host_id);
  add("edgemon.board.model", id.board_model);
  add("edgemon.board.soc", id.soc);
  add("edgemon.board.l4t", id.l4t);
  for (const auto& [key, value] : id.labels) {
    std::string k = Utf8(key);
    std::erase_if(attrs, [&](const Attr& a) { return a.key == k; });  // configured wins
    attrs.push_back({k, Utf8(value)});
  }
  for (const Attr& a : attrs) AddAttr(rm->mutable_resource()->mutable_attributes(), a);
  otlp::ScopeMetrics* sm = rm->add_scope_metrics();
  sm->mutable_scope()->set_name("edgemon");
  sm->mutable_scope()->set_version(EDGEMON_VERSION);
  sm->set_schema_url(std::string("https://opentelemetry.io/schemas/") + kOtlpSemconvVersion);
  return sm->mutable_metrics();
}

otlp::Metric* NewMetric(google::protobuf::RepeatedPtrField<otlp::Metric>* metrics, const Plan& p) {
  otlp::Metric* m = metrics->Add();
  m->set_name(p.name);
  m->set_unit(p.unit);
  m->set_description(p.description);
  if (p.sum) {
    m->mutable_sum()->set_aggregation_temporality(otlp::AGGREGATION_TEMPORALITY_CUMULATIVE);
    m->mutable_sum()->set_is_monotonic(true);
  } else {
    m->mutable_gauge();
  }
  return m;
}

otlp::NumberDataPoint* AddPoint(otlp::Metric* m) {
  return m->has_sum() ? m->mutable_sum()->add_data_points() : m->mutable_gauge()->add_data_points();
}

void SetScaled(otlp::NumberDataPoint* dp, Scale scale, int64_t v) {
  switch (scale) {
    case Scale::kOne:
      dp->set_as_int(v);
      break;
    case Scale::kMilli:
      dp->set_as_double(static_cast<double>(v) / 1000.0);
      break;
    case Scale::kKilo:
      dp->set_as_int(v * 1000);
      break;
    case Scale::kKibi:
      dp->set_as_int(v * 1024);
      break;
  }
}

int PointCount(const otlp::Metric& m) {
  return m.has_sum() ? m.sum().data_points_size() : m.gauge().data_points_size();
}

}  // namespace

std::string EncodeOtlpFrames(const Inventory& inventory, std::span<const Frame> frames,
                             const Identity& identity, const OtlpOptions& options) {
  collector::ExportMetricsServiceRequest req;
  auto* metrics = Begin(req, identity);

  // One Metric per name and unit, in the inventory's order; the channels
  // each one holds.
  struct Group {
    otlp::Metric* metric;
    Scale scale;
    bool energy;  // rail energy counters (OtlpOptions::counter_start_ns)
    std::vector<std::pair<ChannelId, std::vector<Attr>>> channels;
  };
  std::vector<Group> groups;
  for (const metrics::ChannelSeries& s : metrics::PlanSeries(inventory)) {
    const Channel* c = s.id < inventory.channels.size() ? &inventory.channels[s.id] : nullptr;
    if (c == nullptr || c->id != s.id) continue;
    Plan p = PlanChannel(*c, s);
    Group* g = nullptr;
    for (Group& each : groups) {
      if (each.metric->name() == p.name && each.metric->unit() == p.unit) g = &each;
    }
    if (g == nullptr) {
      g = &groups.emplace_back(
          Group{NewMetric(metrics, p), p.scale, c->field == Field::kEnergy, {}});
    }
    g->channels.emplace_back(c->id, std::move(p.attrs));
  }

  for (Group& g : groups) {
    bool sum = g.metric->has_sum();
    for (const auto& [id, attrs] : g.channels) {
      // Cumulative sums: the start of the counting run (see OtlpOptions);
      // other counters count from when their source started (unknown here).
      int64_t start_ns = g.energy ? options.counter_start_ns : 0;
      std::optional<int64_t> prev_value;
      int64_t prev_ns = 0;
      for (const Frame& f : frames) {
        Value v = f.Get(id);
        if (!v || f.realtime_ns <= 0) continue;
        otlp::NumberDataPoint* dp = AddPoint(g.metric);
        for (const Attr& a : attrs) AddAttr(dp->mutable_attributes(), a);
        dp->set_time_unix_nano(static_cast<uint64_t>(f.realtime_ns));
        SetScaled(dp, g.scale, *v);
        if (sum) {
          if (prev_value && *v < *prev_value) start_ns = prev_ns;  // the counter restarted
          if (start_ns > 0 && start_ns <= f.realtime_ns) {
            dp->set_start_time_unix_nano(static_cast<uint64_t>(start_ns));
          }
          prev_value = v;
          prev_ns = f.realtime_ns;
        }
      }
    }
  }
  // A metric without points says nothing: leave it out.
  for (int i = metrics->size() - 1; i >= 0; --i) {
    if (PointCount(metrics->Get(i)) == 0) metrics->DeleteSubrange(i, 1);
  }
  return req.SerializeAsString();
}

std::string EncodeOtlpWindows(const Inventory& inventory, std::span<const WindowEnergy> windows,
                              const Identity& identity) {
  collector::ExportMetricsServiceRequest req;
  auto* metrics = Begin(req, identity);
  // A gauge, not a Sum: each window is a series of its own (its id is an
  // attribute) with one point, the energy over [start, end]; there is no
  // running total to accumulate, and a delta Sum is dropped by Prometheus's
  // OTLP receiver unless a feature flag converts it.
  Plan sub{"edgemon.window.energy",
           "J",
           "Energy of a rail over a closed window (a record or measure run); sub-rails are part "
           "of their hw.parent",
           false,
           Scale::kMilli,
           {}};
  Plan host{"edgemon.window.host.energy",
            "J",
            "Energy drawn by the whole board (its input rail) over a closed window",
            false,
            Scale::kMilli,
            {}};
  otlp::Metric* sub_metric = nullptr;
  otlp::Metric* host_metric = nullptr;
  for (const WindowEnergy& w : windows) {
    if (!w.window.end_ns || *w.window.end_ns <= 0) continue;  // still open
    for (const RailSummary& r : w.rails) {
      if (!r.energy_mj) continue;  // missing is not zero
      otlp::Metric*& m = r.input ? host_metric : sub_metric;
      if (m == nullptr) m = NewMetric(metrics, r.input ? host : sub);
      otlp::NumberDataPoint* dp = AddPoint(m);
      std::vector<Attr> attrs =
          RailAttrs(r.name, r.parent, r.input ? std::nullopt : std::optional(RailHwType(r.name)));
      if (r.input) attrs.push_back({"edgemon.rail.input", true});
      const Channel* ch = inventory.Find(Kind::kRail, r.name, Field::kEnergy);
      if (ch == nullptr) ch = inventory.Find(Kind::kRail, r.name, Field::kPower);
      if (ch != nullptr && !ch->device.empty() && ch->device != ch->name) {
        attrs.push_back({"device", Utf8(ch->device)});
      }
      attrs.push_back({"edgemon.window.label", Utf8(w.window.label)});
      attrs.push_back({"edgemon.window.id", w.window.id});
      if (w.window.abandoned) attrs.push_back({"edgemon.window.abandoned", true});
      for (const Attr& a : attrs) AddAttr(dp->mutable_attributes(), a);
      if (w.window.start_ns > 0) {
        dp->set_start_time_unix_nano(static_cast<uint64_t>(w.window.start_ns));
      }
      dp->set_time_unix_nano(static_cast<uint64_t>(*w.window.end_ns));
      dp->set_as_double(*r.energy_mj / 1000.0);
    }
  }
  return req.SerializeAsString();
}

}  // namespace edgemon::push
