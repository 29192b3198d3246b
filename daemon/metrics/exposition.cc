#include "daemon/metrics/exposition.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

#include "edgemon/text.h"

namespace edgemon::metrics {
namespace {

constexpr std::string_view kPrometheusType = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::string_view kOpenMetricsType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

using text::IEquals;
using text::Trim;

void AppendInt(std::string& out, int64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, p);
}

void AppendUint(std::string& out, uint64_t v) {
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, p);
}

// v / 10^digits as an exact decimal without trailing zeros.
void AppendScaledDown(std::string& out, int64_t v, int digits) {
  uint64_t div = 1;
  for (int i = 0; i < digits; ++i) div *= 10;
  uint64_t mag = v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
  if (v < 0) out.push_back('-');
  AppendUint(out, mag / div);
  uint64_t frac = mag % div;
  if (frac == 0) return;
  char buf[20];
  for (int i = digits - 1; i >= 0; --i) {
    buf[i] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  int n = digits;
  while (n > 0 && buf[n - 1] == '0') --n;
  out.push_back('.');
  out.append(buf, static_cast<size_t>(n));
}

void AppendScaledUp(std::string& out, int64_t v, int64_t mul) {
  int64_t r;
  if (!__builtin_mul_overflow(v, mul, &r)) {
    AppendInt(out, r);
    return;
  }
  char buf[32];
  int n =
      std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(v) * static_cast<double>(mul));
  out.append(buf, static_cast<size_t>(n));
}

// `v` in the base unit of `scale`, as an exact decimal.
void AppendScaled(std::string& out, int64_t v, Scale scale) {
  switch (scale) {
    case Scale::kOne:
      AppendInt(out, v);
      return;
    case Scale::kMilli:
      AppendScaledDown(out, v, 3);
      return;
    case Scale::kKilo:
      AppendScaledUp(out, v, 1000);
      return;
    case Scale::kKibi:
      AppendScaledUp(out, v, 1024);
      return;
  }
}

struct FieldMap {
  const char* suffix;  // after "edgemon_<kind>_"
  const char* unit;    // the base unit the name ends with ("" = none)
  int scale;           // 0 one, 1 milli, 2 kilo, 3 kibi
  const char* what;    // for HELP
};

FieldMap MapField(Kind kind, Field field) {
  bool mem_kind = kind == Kind::kMemory || kind == Kind::kSwap;
  switch (field) {
    case Field::kLoad:
      return {"load_ratio", "ratio", 1, "Busy share (0..1)"};
    case Field::kFreq:
      return {"frequency_hertz", "hertz", 2, "Current frequency"};
    case Field::kFreqMin:
      return {"frequency_min_hertz", "hertz", 2, "Lower frequency policy limit"};
    case Field::kFreqMax:
      return {"frequency_max_hertz", "hertz", 2, "Upper frequency policy limit"};
    case Field::kOnline:
      return {"online", "", 0, "Online (1) or not (0)"};
    case Field::kTemp:
      return {"temperature_celsius", "celsius", 1, "Temperature"};
    case Field::kPower:
      return {"power_watts", "watts", 1, "Power"};
    case Field::kVoltage:
      return {"voltage_volts", "volts", 1, "Voltage"};
    case Field::kCurrent:
      return {"current_amperes", "amperes", 1, "Current"};
    case Field::kEnergy:
      return {"energy_joules", "joules", 1,
              "Energy since the counter started (integrated by edgemond, or the hardware counter)"};
    case Field::kDuty:
      return {"duty_ratio", "ratio", 1, "PWM duty (0..1)"};
    case Field::kSpeed:
      return {"speed_rpm", "rpm", 0, "Speed in revolutions per minute"};
    case Field::kState:
      return kind == Kind::kEngine ? FieldMap{"enabled", "", 0, "Clock enabled (1) or not (0)"}
                                   : FieldMap{"state", "", 0, "State (0 or 1)"};
    case Field::kTotal:
      return {mem_kind ? "total_bytes" : "memory_total_bytes", "bytes", 3, "Total memory"};
    case Field::kUsed:
      return {mem_kind ? "used_bytes" : "memory_used_bytes", "bytes", 3, "Used memory"};
    case Field::kFree:
      return {mem_kind ? "free_bytes" : "memory_free_bytes", "bytes", 3, "Free memory"};
    case Field::kAvailable:
      return {mem_kind ? "available_bytes" : "memory_available_bytes", "bytes", 3,
              "Available memory"};
    case Field::kBuffers:
      return {mem_kind ? "buffers_bytes" : "memory_buffers_bytes", "bytes", 3, "Buffer memory"};
    case Field::kCached:
      return {mem_kind ? "cached_bytes" : "memory_cached_bytes", "bytes", 3, "Cached memory"};
    case Field::kShared:
      return {mem_kind ? "shared_bytes" : "memory_shared_bytes", "bytes", 3,
              "GPU/CPU shared (nvmap) memory"};
    case Field::kLfbBlocks:
      return {"lfb_blocks", "", 0, "Free blocks of the largest free block size"};
    case Field::kLfbSize:
      return {"lfb_block_bytes", "bytes", 3, "Largest free block size"};
    case Field::kDevices:
      return {"devices", "", 0, "Number of devices"};
    case Field::kMode:
      return {"mode", "", 0, "Mode id"};
    case Field::kEvents:
      return {"events", "", 0, "Events counted by the source"};
    case Field::kTime:
      return {"seconds", "seconds", 1, "Time spent in the condition"};
  }
  return {"value", "", 0, "Value"};
}

// The label holding the channel name, and the metric prefix, per kind.
std::pair<const char*, const char*> KindNames(Kind kind) {
  switch (kind) {
    case Kind::kCpu:
      return {"cpu", "cpu"};
    case Kind::kGpu:
      return {"gpu", "gpu"};
    case Kind::kEmc:
      return {"emc", "emc"};
    case Kind::kMemory:
      return {"memory", "memory"};
    case Kind::kSwap:
      return {"swap", "swap"};
    case Kind::kThermal:
      return {"zone", "thermal"};  // temp: edgemon_temperature_celsius
    case Kind::kRail:
      return {"rail", "rail"};
    case Kind::kFan:
      return {"fan", "fan"};
    case Kind::kEngine:
      return {"engine", "engine"};
    case Kind::kDevfreq:
      return {"devfreq", "devfreq"};
    case Kind::kBoard:
      return {"", "board"};
    case Kind::kEvent:
      return {"event", "event"};
  }
  return {"name", "other"};
}

void AppendLabel(std::string& out, std::string_view name, std::string_view escaped_value) {
  out.push_back(out.empty() ? '{' : ',');
  out.append(name);
  out.append("=\"");
  out.append(escaped_value);
  out.push_back('"');
}

void AppendHelp(std::string& out, std::string_view name, std::string_view help) {
  out.append("# HELP ");
  out.append(name);
  out.push_back(' ');
  out.append(help);
  out.push_back('\n');
}

void AppendType(std::string& out, std::string_view name, std::string_view type) {
  out.append("# TYPE ");
  out.append(name);
  out.push_back(' ');
  out.append(type);
  out.push_back('\n');
}

// Header lines of one family. `name` is the family name (without _total or
// _info); in the 0.0.4 format the TYPE line names the sample instead.
void AppendHeader(std::string& out, Format f, std::string_view name, std::string_view help,
                  std::string_view type, std::string_view unit) {
  std::string sample_name(name);
  if (f == Format::kPrometheus) {
    if (type == "counter") sample_name += "_total";
    if (type == "info") sample_name += "_info";
    AppendHelp(out, sample_name, help);
    AppendType(out, sample_name, type == "info" ? "gauge" : type);
    return;
  }
  AppendHelp(out, name, help);
  AppendType(out, name, type);
  if (!unit.empty()) {
    out.append("# UNIT ");
    out.append(name);
    out.push_back(' ');
    out.append(unit);
    out.push_back('\n');
  }
}

void AppendSampleStart(std::string& out, std::string_view name, std::string_view suffix,
                       std::string_view labels) {
  out.append(name);
  out.append(suffix);
  out.append(labels);
  out.push_back(' ');
}

// A single-sample health family.
void AppendSimple(std::string& out, Format f, std::string_view name, std::string_view type,
                  std::string_view unit, std::string_view help, std::string_view value) {
  AppendHeader(out, f, name, help, type, unit);
  AppendSampleStart(out, name, type == "counter" ? "_total" : "", "");
  out.append(value);
  out.push_back('\n');
}

std::string UintText(uint64_t v) {
  std::string s;
  AppendUint(s, v);
  return s;
}

std::string IntText(int64_t v) {
  std::string s;
  AppendInt(s, v);
  return s;
}

std::string SecondsText(int64_t ns) {
  std::string s;
  AppendScaledDown(s, ns, 9);
  return s;
}

// One family per shipper figure, a sample per destination (a figure not
// known for a destination is left out for it).
void AppendPush(std::string& out, Format f, std::span<const PushHealth> push) {
  struct Figure {
    const char* name;
    const char* type;
    const char* unit;
    const char* help;
    std::optional<std::string> (*value)(const PushHealth&);
  };
  static const Figure kFigures[] = {
      {"edgemon_push_samples_sent", "counter", "", "Samples the push receiver acknowledged",
       [](const PushHealth& p) { return std::optional(UintText(p.samples_sent)); }},
      {"edgemon_push_samples_retried", "counter", "",
       "Samples sent again after a 429, a 5xx or a network error",
       [](const PushHealth& p) { return std::optional(UintText(p.samples_retried)); }},
      {"edgemon_push_samples_failed", "counter", "",
       "Samples the receiver refused for good (a 4xx other than 429); moved past",
       [](const PushHealth& p) { return std::optional(UintText(p.samples_failed)); }},
      {"edgemon_push_batches_failed", "counter", "", "Batches the receiver refused for good",
       [](const PushHealth& p) { return std::optional(UintText(p.batches_failed)); }},
      {"edgemon_push_rollup_gaps", "counter", "",
       "Times the push cursor fell behind the raw frames held (the rollup tier was sent)",
       [](const PushHealth& p) { return std::optional(UintText(p.rollup_gaps)); }},
      {"edgemon_push_backlog_frames", "gauge", "", "Stored frames not yet acknowledged",
       [](const PushHealth& p) {
         return p.backlog_frames ? std::optional(IntText(*p.backlog_frames)) : std::nullopt;
       }},
      {"edgemon_push_backlog_age_seconds", "gauge", "seconds",
       "Age of the oldest stored frame not yet acknowledged (0 when none is waiting)",
       [](const PushHealth& p) {
         return p.backlog_age_ns ? std::optional(SecondsText(*p.backlog_age_ns)) : std::nullopt;
       }},
      {"edgemon_push_last_success_timestamp_seconds", "gauge", "seconds",
       "When the receiver last acknowledged a batch",
       [](const PushHealth& p) {
         return p.last_success_ns ? std::optional(SecondsText(*p.last_success_ns)) : std::nullopt;
       }},
      {"edgemon_push_last_error_timestamp_seconds", "gauge", "seconds",
       "When a batch last failed (refused, retried or unreachable)",
       [](const PushHealth& p) {
         return p.last_error_ns ? std::optional(SecondsText(*p.last_error_ns)) : std::nullopt;
       }},
  };
  for (const Figure& fig : kFigures) {
    bool header = false;
    for (const PushHealth& p : push) {
      auto v = fig.value(p);
      if (!v) continue;
      if (!header) {
        AppendHeader(out, f, fig.name, fig.help, fig.type, fig.unit);
        header = true;
      }
      std::string labels;
      AppendLabel(labels, "destination", EscapeLabelValue(p.destination));
      labels.push_back('}');
      AppendSampleStart(out, fig.name, std::string_view(fig.type) == "counter" ? "_total" : "",
                        labels);
      out.append(*v);
      out.push_back('\n');
    }
  }
}

}  // namespace

Format NegotiateFormat(std::string_view accept) {
  double best_om = 0, best_text = 0;
  while (!accept.empty()) {
    size_t comma = accept.find(',');
    std::string_view range = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
    size_t semi = range.find(';');
    std::string_view type = Trim(range.substr(0, semi));
    double q = 1;
    std::string_view version;
    while (semi != std::string_view::npos) {
      range = range.substr(semi + 1);
      semi = range.find(';');
      std::string_view param = Trim(range.substr(0, semi));
      size_t eq = param.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view key = Trim(param.substr(0, eq)), val = Trim(param.substr(eq + 1));
      if (IEquals(key, "q")) {
        std::string v(val);
        char* end = nullptr;
        double d = std::strtod(v.c_str(), &end);
        q = end != v.c_str() && std::isfinite(d) ? d : 0;
      } else if (IEquals(key, "version")) {
        version = val;
      }
    }
    if (IEquals(type, "application/openmetrics-text")) {
      if (version.empty() || version == "1.0.0" || version == "0.0.1") {
        best_om = std::max(best_om, q);
      }
    } else if (IEquals(type, "text/plain") || IEquals(type, "*/*") || IEquals(type, "text/*")) {
      best_text = std::max(best_text, q);
    }
  }
  return best_om > 0 && best_om >= best_text ? Format::kOpenMetrics : Format::kPrometheus;
}

std::string_view ContentType(Format format) {
  return format == Format::kOpenMetrics ? kOpenMetricsType : kPrometheusType;
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  size_t i = 0;
  while (i < v.size()) {
    auto c = static_cast<unsigned char>(v[i]);
    if (c < 0x80) {
      if (c == '\\') {
        out += "\\\\";
      } else if (c == '"') {
        out += "\\\"";
      } else if (c == '\n') {
        out += "\\n";
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: copy it if well formed, else U+FFFD for one byte.
    size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    bool ok = len > 0 && i + len <= v.size();
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(v[i + k]) & 0xC0) == 0x80;
    }
    if (ok && len == 3) {
      auto c1 = static_cast<unsigned char>(v[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong, surrogates
    } else if (ok && len == 4) {
      auto c1 = static_cast<unsigned char>(v[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(v.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string SanitizeName(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 1);
  for (char ch : s) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    out.push_back(ok ? ch : '_');
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(out.begin(), '_');
  return out;
}

std::string FormatMilli(int64_t v) {
  std::string s;
  AppendScaledDown(s, v, 3);
  return s;
}

std::vector<ChannelSeries> PlanSeries(const Inventory& inv) {
  std::vector<ChannelSeries> out;
  out.reserve(inv.channels.size());
  for (const Channel& c : inv.channels) {
    if (c.Has(kFlagConstant)) continue;
    FieldMap fm = MapField(c.kind, c.field);
    auto [label, prefix] = KindNames(c.kind);
    ChannelSeries s;
    s.id = c.id;
    s.family = "edgemon_";
    if (c.kind == Kind::kThermal && c.field == Field::kTemp) {
      // edgemon_temperature_celsius{zone}
    } else if (c.kind == Kind::kBoard) {
      s.family += SanitizeName(c.name) + "_";
    } else {
      s.family += std::string(prefix) + "_";
    }
    s.family += fm.suffix;
    s.type = c.field == Field::kEnergy || c.Has(kFlagCounter) ? MetricType::kCounter
                                                              : MetricType::kGauge;
    s.name = s.type == MetricType::kCounter ? s.family + "_total" : s.family;
    s.unit = fm.unit;
    s.scale = static_cast<Scale>(fm.scale);
    s.help = std::string(fm.what) + " of each " + std::string(ToString(c.kind)) +
             " channel (edgemon " + std::string(ToString(c.kind)) + "/*/" +
             std::string(ToString(c.field));
    if (*fm.unit != '\0' && fm.scale != 0) s.help += ", read in " + std::string(ToString(c.unit));
    s.help += ")";
    if (c.kind == Kind::kCpu) s.help += "; cpu=\"cpu\" is all cores together";
    if (*label != '\0') s.labels.emplace_back(label, c.name);
    if (!c.device.empty() && c.device != c.name) s.labels.emplace_back("device", c.device);
    if (c.kind == Kind::kRail) {
      s.labels.emplace_back("input", c.Has(kFlagInputRail) ? "true" : "false");
      // "" on top-level rails: Prometheus reads an empty label as no label,
      // so {parent=""} selects exactly the rails nothing else contains.
      s.labels.emplace_back("parent", c.parent);
    }
    out.push_back(std::move(s));
  }
  return out;
}

double ScaledValue(Scale scale, double v) {
  switch (scale) {
    case Scale::kOne:
      return v;
    case Scale::kMilli:
      return v / 1000;
    case Scale::kKilo:
      return v * 1000;
    case Scale::kKibi:
      return v * 1024;
  }
  return v;
}

Exposition::Exposition(const Inventory& inv) : channels_(inv.channels.size()) {
  for (const Channel& c : inv.channels) {
    error_labels_.emplace_back(c.id, EscapeLabelValue(c.Key()));
    if (!c.Has(kFlagConstant) && c.kind == Kind::kBoard && c.name == "nvpmodel" &&
        c.field == Field::kMode) {
      nvpmodel_channel_ = c.id;
    }
  }
  std::vector<std::pair<std::string, size_t>> index;  // family name -> position
  for (ChannelSeries& s : PlanSeries(inv)) {
    size_t pos = families_.size();
    for (const auto& [n, p] : index) {
      if (n == s.family) pos = p;
    }
    if (pos == families_.size()) {
      index.emplace_back(s.family, pos);
      Family fam;
      fam.name = s.family;
      fam.unit = s.unit;
      fam.type = s.type;
      fam.scale = s.scale;
      fam.help = std::move(s.help);
      families_.push_back(std::move(fam));
    }
    std::string labels;
    for (const auto& [k, v] : s.labels) AppendLabel(labels, k, EscapeLabelValue(v));
    if (!labels.empty()) labels.push_back('}');
    AddLimits(inv, s, labels);
    families_[pos].samples.push_back({s.id, std::move(labels)});
  }

  const BoardInfo& b = inv.board;
  for (auto [key, value] :
       {std::pair{"model", &b.model}, std::pair{"soc", &b.soc}, std::pair{"l4t", &b.l4t},
        std::pair{"jetpack", &b.jetpack}, std::pair{"kernel", &b.kernel},
        std::pair{"cpu_model", &b.cpu_model}, std::pair{"hostname", &b.hostname}}) {
    if (!value->empty()) board_labels_.emplace_back(key, EscapeLabelValue(*value));
  }
  nvpmodel_name_ = EscapeLabelValue(b.nvpmodel);
  for (const auto& [id, mode] : b.nvpmodel_modes) {
    nvpmodel_modes_.emplace_back(id, EscapeLabelValue(mode));
  }
}

void Exposition::AddLimits(const Inventory& inv, const ChannelSeries& s,
                           const std::string& labels) {
  const Channel* c = nullptr;
  for (const Channel& x : inv.channels) {
    if (x.id == s.id) c = &x;
  }
  // Rails' gauges with a unit in their name: edgemon_rail_current_amperes
  // gives edgemon_rail_current_max_amperes and edgemon_rail_current_crit_amperes.
  const std::string tail = "_" + s.unit;
  if (c == nullptr || c->kind != Kind::kRail || s.type != MetricType::kGauge || s.unit.empty() ||
      !s.family.ends_with(tail)) {
    return;
  }
  const std::string base = s.family.substr(0, s.family.size() - tail.size());
  for (auto [which, limit] : {std::pair{"max", c->max}, std::pair{"crit", c->crit}}) {
    if (!limit) continue;
    const std::string name = base + "_" + which + tail;
    LimitFamily* lf = nullptr;
    for (LimitFamily& x : limits_) {
      if (x.name == name) lf = &x;
    }
    if (lf == nullptr) {
      lf = &limits_.emplace_back();
      lf->name = name;
      lf->unit = s.unit;
      lf->help = std::string("The sensor's ") +
                 (std::string_view(which) == "max" ? "warning" : "critical") +
                 " limit of each rail's " + std::string(ToString(c->field)) + " (edgemon rail/*/" +
                 std::string(ToString(c->field)) + " " + which + ")";
    }
    std::string value;
    AppendScaled(value, *limit, s.scale);
    lf->samples.emplace_back(labels, std::move(value));
  }
}

std::string Exposition::Render(const Frame* frame, const Health& h, Format f) const {
  std::string out;
  out.reserve(4096 + channels_ * 160);
  if (frame != nullptr) {
    for (const Family& fam : families_) {
      bool any = false;
      for (const Sample& s : fam.samples) {
        if (frame->Get(s.id)) {
          any = true;
          break;
        }
      }
      if (!any) continue;  // a family with no present value is left out whole
      AppendHeader(out, f, fam.name, fam.help,
                   fam.type == MetricType::kCounter ? "counter" : "gauge", fam.unit);
      std::string_view suffix = fam.type == MetricType::kCounter ? "_total" : "";
      for (const Sample& s : fam.samples) {
        Value v = frame->Get(s.id);
        if (!v) continue;
        AppendSampleStart(out, fam.name, suffix, s.labels);
        AppendScaled(out, *v, fam.scale);
        out.push_back('\n');
      }
    }
  }
  // Rails' sensor limits: constants of the inventory, whatever the frame.
  for (const LimitFamily& lf : limits_) {
    AppendHeader(out, f, lf.name, lf.help, "gauge", lf.unit);
    for (const auto& [labels, value] : lf.samples) {
      AppendSampleStart(out, lf.name, "", labels);
      out.append(value);
      out.push_back('\n');
    }
  }

  // Board identity: an info metric. The nvpmodel label follows the mode the
  // latest frame reports (it can change while the daemon runs).
  std::string labels;
  for (const auto& [k, v] : board_labels_) AppendLabel(labels, k, v);
  std::string_view nvp = nvpmodel_name_;
  if (frame != nullptr && nvpmodel_channel_) {
    if (Value mode = frame->Get(*nvpmodel_channel_)) {
      for (const auto& [id, name] : nvpmodel_modes_) {
        if (id == *mode) nvp = name;
      }
    }
  }
  if (!nvp.empty()) AppendLabel(labels, "nvpmodel", nvp);
  if (!labels.empty()) labels.push_back('}');
  AppendHeader(out, f, "edgemon_board", "Board identity (value 1): model, SoC, L4T, nvpmodel, ...",
               "info", "");
  AppendSampleStart(out, "edgemon_board", "_info", labels);
  out.append("1\n");

  // Daemon health.
  if (!h.version.empty()) {
    std::string l;
    AppendLabel(l, "version", EscapeLabelValue(h.version));
    l.push_back('}');
    AppendHeader(out, f, "edgemon_build", "edgemond's version (value 1)", "info", "");
    AppendSampleStart(out, "edgemon_build", "_info", l);
    out.append("1\n");
  }
  if (h.frames) {
    AppendSimple(out, f, "edgemon_samples", "counter", "", "Frames sampled since edgemond started",
                 UintText(*h.frames));
  }
  if (h.energy_samples) {
    AppendSimple(out, f, "edgemon_energy_samples", "counter", "",
                 "Rail samples taken between frames for energy integration",
                 UintText(*h.energy_samples));
  }
  if (h.deadline_misses) {
    AppendSimple(out, f, "edgemon_deadline_misses", "counter", "",
                 "Frame deadlines the sampler missed (skipped, never bunched)",
                 UintText(*h.deadline_misses));
  }
  if (h.frame_period_ns) {
    AppendSimple(out, f, "edgemon_frame_interval_seconds", "gauge", "seconds",
                 "Configured frame period", SecondsText(*h.frame_period_ns));
  }
  if (h.energy_period_ns) {
    AppendSimple(out, f, "edgemon_energy_interval_seconds", "gauge", "seconds",
                 "Effective rail sampling period for energy integration (boost included)",
                 SecondsText(*h.energy_period_ns));
  }
  if (frame != nullptr) {
    AppendSimple(out, f, "edgemon_last_frame_timestamp_seconds", "gauge", "seconds",
                 "Wall-clock time of the frame these values come from",
                 SecondsText(frame->realtime_ns));
  }
  AppendSimple(out, f, "edgemon_channels", "gauge", "", "Channels in the inventory",
               UintText(channels_));
  if (!h.read_errors.empty()) {
    AppendHeader(out, f, "edgemon_read_errors", "Failed reads per channel since edgemond started",
                 "counter", "");
    for (const auto& [id, key] : error_labels_) {
      out.append("edgemon_read_errors_total{channel=\"");
      out.append(key);
      out.append("\"} ");
      AppendUint(out, id < h.read_errors.size() ? h.read_errors[id] : 0);
      out.push_back('\n');
    }
  }
  if (h.store) {
    const StoreHealth& s = *h.store;
    AppendSimple(out, f, "edgemon_store_bytes", "gauge", "bytes",
                 "Size of the SQLite store on disk (database and WAL)", IntText(s.bytes));
    if (s.max_bytes > 0) {
      AppendSimple(out, f, "edgemon_store_max_bytes", "gauge", "bytes",
                   "Configured cap of the store's size", IntText(s.max_bytes));
    }
    if (s.frames) {
      AppendSimple(out, f, "edgemon_store_frames", "gauge", "", "Raw frames held in the store",
                   IntText(*s.frames));
    }
    AppendSimple(out, f, "edgemon_store_damaged", "gauge", "",
                 "1 once the store's file was found damaged (history is no longer written), else 0",
                 s.damaged ? "1" : "0");
    AppendSimple(out, f, "edgemon_store_dropped_frames", "counter", "",
                 "Frames the store could not keep (failed batches, queue overflow)",
                 UintText(s.dropped_frames));
    AppendSimple(out, f, "edgemon_store_failed_commits", "counter", "",
                 "Store commit attempts that failed", UintText(s.failed_commits));
  }
  if (h.control) {
    AppendSimple(out, f, "edgemon_control_changes", "counter", "",
                 "Leases edgemon-control granted (power mode, locked clocks, fan) since boot",
                 UintText(h.control->changes));
    AppendSimple(out, f, "edgemon_control_leases", "gauge", "",
                 "Changes edgemon-control holds now (restored when their lease ends)",
                 UintText(h.control->leases));
  }
  if (!h.gpu_processes.empty()) {
    AppendHeader(out, f, "edgemon_process_gpu_memory_bytes",
                 "GPU memory of the processes using the most (nvmap on Jetson, NVML)", "gauge",
                 "bytes");
    for (const ProcessGpuMemory& p : h.gpu_processes) {
      out.append("edgemon_process_gpu_memory_bytes{pid=\"");
      out.append(std::to_string(p.pid));
      out.append("\",process=\"");
      out.append(EscapeLabelValue(p.process));
      out.append("\"} ");
      AppendUint(out, p.kib * 1024);
      out.push_back('\n');
    }
  }
  if (!h.push.empty()) AppendPush(out, f, h.push);
  if (f == Format::kOpenMetrics) out.append("# EOF\n");
  return out;
}

std::string RenderExposition(const Inventory& inventory, const Frame* frame, const Health& health,
                             Format format) {
  return Exposition(inventory).Render(frame, health, format);
}

}  // namespace edgemon::metrics
