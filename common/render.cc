#include "edgemon/render.h"

#include <cinttypes>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "edgemon/text.h"

namespace edgemon {
namespace {

std::string Fixed(double v, int decimals, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, unit);
  return buf;
}

nlohmann::json Opt(const std::optional<int64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::string FormatValue(const Channel& c, const Value& v) {
  if (!v) return "-";
  const double x = static_cast<double>(*v);
  switch (c.unit) {
    case Unit::kPermille:
      return Fixed(x / 10.0, 1, "%");
    case Unit::kKhz:
      return Fixed(x / 1000.0, 0, "MHz");
    case Unit::kMilliCelsius:
      return Fixed(x / 1000.0, 1, "C");
    case Unit::kMilliwatt:
      return Fixed(x / 1000.0, 3, "W");
    case Unit::kMillivolt:
      return Fixed(x / 1000.0, 3, "V");
    case Unit::kMilliamp:
      return Fixed(x / 1000.0, 3, "A");
    case Unit::kMillijoule:
      return Fixed(x / 1000.0, 3, "J");
    case Unit::kRpm:
      return Fixed(x, 0, "rpm");
    case Unit::kMillisecond:
      return Fixed(x / 1000.0, 1, "s");
    case Unit::kKib:
      return x >= 1024.0 * 1024.0 ? Fixed(x / 1024.0 / 1024.0, 2, "GiB")
                                  : Fixed(x / 1024.0, 1, "MiB");
    case Unit::kBool:
      return c.field == Field::kOnline ? (*v ? "online" : "offline") : (*v ? "on" : "off");
    case Unit::kCount:
    case Unit::kId:
    case Unit::kNone:
      return std::to_string(*v);
  }
  return std::to_string(*v);
}

// Names of one kind with each rail's sub-rails right after it (depth first,
// otherwise in declaration order); a parent that is not listed leaves its
// children at the top level.
static std::vector<std::string> ParentsFirst(const Inventory& inv, Kind kind,
                                             const std::vector<std::string>& order) {
  std::map<std::string, std::string> parent;
  for (const auto& c : inv.channels) {
    if (c.kind == kind && !c.parent.empty() && c.parent != c.name) parent.emplace(c.name, c.parent);
  }
  std::set<std::string> names(order.begin(), order.end()), done;
  std::vector<std::string> out;
  std::function<void(const std::string&)> emit = [&](const std::string& name) {
    if (!done.insert(name).second) return;
    out.push_back(name);
    for (const auto& child : order) {
      auto p = parent.find(child);
      if (p != parent.end() && p->second == name) emit(child);
    }
  };
  for (const auto& name : order) {
    auto p = parent.find(name);
    if (p == parent.end() || !names.count(p->second)) emit(name);
  }
  for (const auto& name : order) emit(name);  // a cycle: still listed once
  return out;
}

std::string RenderTable(const Inventory& inv, const Frame& frame,
                        const std::vector<uint64_t>& error_counts) {
  // Board strings come from sysfs and the device tree: the header is
  // escaped as a block, each row's label below before it is padded.
  std::string out;
  const BoardInfo& b = inv.board;
  out += "board:    " + (b.model.empty() ? std::string("(unknown)") : b.model) + "\n";
  if (!b.l4t.empty()) {
    out += "L4T:      " + b.l4t + (b.jetpack.empty() ? "" : " (JetPack " + b.jetpack + ")") + "\n";
  }
  if (b.nvpmodel_id >= 0) {
    out += "nvpmodel: " + std::to_string(b.nvpmodel_id) +
           (b.nvpmodel.empty() ? "" : " (" + b.nvpmodel + ")") + "\n";
  }
  out += "host:     " + b.hostname + "  kernel " + b.kernel + "\n";
  if (!b.cpu_model.empty()) out += "cpu:      " + b.cpu_model + "\n";
  out = TerminalSafe(out);

  // Group rows by kind, then by (name, device) in declaration order.
  for (int k = 0; k <= static_cast<int>(kLastKind); ++k) {
    Kind kind = static_cast<Kind>(k);
    std::vector<std::string> order;
    std::map<std::string, std::string> rows;
    for (const auto& c : inv.channels) {
      if (c.kind != kind) continue;
      if (!rows.count(c.name)) order.push_back(c.name);
      std::string& row = rows[c.name];
      row += "  " + std::string(ToString(c.field)) + "=" + FormatValue(c, frame.Get(c.id));
      if (c.Has(kFlagConstant)) row += " (constant)";
      if (c.id < error_counts.size() && error_counts[c.id] > 0) {
        row += " [" + std::to_string(error_counts[c.id]) + " errors]";
      }
    }
    if (order.empty()) continue;
    order = ParentsFirst(inv, kind, order);
    out += "\n[" + std::string(ToString(kind)) + "]\n";
    for (const auto& name : order) {
      const Channel* any = nullptr;
      for (const auto& c : inv.channels) {
        if (c.kind == kind && c.name == name) {
          any = &c;
          break;
        }
      }
      std::string label = TerminalSafe(name);
      if (any != nullptr && any->Has(kFlagInputRail)) label += " (input)";
      if (any != nullptr && !any->parent.empty()) {
        label = "  " + label + " < " + TerminalSafe(any->parent);
      }
      char head[64];
      std::snprintf(head, sizeof head, "  %-28s", label.c_str());
      out += head + rows[name] + "\n";
    }
  }
  return out;
}

nlohmann::json ToJson(const Inventory& inv, const Frame& frame,
                      const std::vector<uint64_t>& error_counts) {
  const BoardInfo& b = inv.board;
  nlohmann::json modes = nlohmann::json::object();
  for (const auto& [id, name] : b.nvpmodel_modes) modes[std::to_string(id)] = name;
  nlohmann::json out = {
      {"board",
       {{"model", b.model},
        {"soc", b.soc},
        {"l4t", b.l4t},
        {"jetpack", b.jetpack},
        {"nvpmodel", b.nvpmodel},
        {"nvpmodel_id", b.nvpmodel_id},
        {"nvpmodel_modes", modes},
        {"kernel", b.kernel},
        {"cpu_model", b.cpu_model},
        {"hostname", b.hostname}}},
      {"seq", frame.seq},
      {"boottime_ns", frame.boottime_ns},
      {"realtime_ns", frame.realtime_ns},
  };
  nlohmann::json channels = nlohmann::json::array();
  nlohmann::json values = nlohmann::json::object();
  for (const auto& c : inv.channels) {
    nlohmann::json flags = nlohmann::json::array();
    if (c.Has(kFlagConstant)) flags.push_back("constant");
    if (c.Has(kFlagInputRail)) flags.push_back("input");
    if (c.Has(kFlagCounter)) flags.push_back("counter");
    if (c.Has(kFlagDerived)) flags.push_back("derived");
    nlohmann::json attrs = nlohmann::json::object();
    for (const auto& [k, v] : c.attrs) attrs[k] = v;
    nlohmann::json trips = nlohmann::json::array();
    for (const auto& t : c.trips) trips.push_back({{"type", t.type}, {"temp_mc", t.temp_mc}});
    Value v = frame.Get(c.id);
    channels.push_back({{"id", c.id},
                        {"kind", ToString(c.kind)},
                        {"name", c.name},
                        {"field", ToString(c.field)},
                        {"unit", ToString(c.unit)},
                        {"device", c.device},
                        {"parent", c.parent},
                        {"flags", flags},
                        {"min", Opt(c.min)},
                        {"max", Opt(c.max)},
                        {"crit", Opt(c.crit)},
                        {"trips", trips},
                        {"attrs", attrs},
                        {"value", Opt(v)},
                        {"errors", c.id < error_counts.size() ? error_counts[c.id] : 0}});
    values[c.Key()] = Opt(v);
  }
  out["channels"] = std::move(channels);
  out["values"] = std::move(values);
  return out;
}

std::string RenderLine(const Inventory& inv, const Frame& frame) {
  std::string out = fmt::format("#{}", frame.seq);
  for (const auto& c : inv.channels) {
    bool show = (c.kind == Kind::kCpu && c.field == Field::kLoad) ||
                (c.kind == Kind::kRail && c.field == Field::kPower) ||
                (c.kind == Kind::kThermal && c.field == Field::kTemp) ||
                (c.kind == Kind::kGpu && (c.field == Field::kLoad || c.field == Field::kFreq)) ||
                (c.kind == Kind::kMemory && c.field == Field::kUsed);
    if (!show) continue;
    out +=
        fmt::format(" {}{}{}={}", TerminalSafe(c.name), c.kind == Kind::kGpu ? "." : "",
                    c.kind == Kind::kGpu ? ToString(c.field) : "", FormatValue(c, frame.Get(c.id)));
  }
  return out;
}

}  // namespace edgemon
