// Protection and throttle events (kind "event").
//
//   soctherm over-current (Orin, Thor: NVIDIA's tegra23x-oc-event driver, an
//   hwmon chip named "soctherm_oc"):
//     ocN_event_cnt  decimal count kept by the BPMP since boot
//                    -> event/ocN/events (counter); ocN_throt_en -> attr "throttle"
//   INA3221 alerts (upstream hwmon driver, rails labelled as the power
//   collector labels them):
//     currK_crit_alarm / currK_max_alarm  0/1
//                    -> event/<rail>:crit/state and event/<rail>:warn/state,
//                       and .../events: the alerts edgemond saw begin (a
//                       derived counter from 0 at discovery)
//   INA238 (hwmon "ina238", named by its DT `label`, "VIN" on Thor's carrier):
//     every <sensor>_{min,max,crit}_alarm (in0, in1, power1, temp1 per the
//     kernel's ina238 documentation)
//                    -> event/<label>:<sensor>_<min|max|crit>/state and /events
//   Thermal throttling (kernel thermal sysfs, cooling devices that are not
//   fans):
//     cooling_deviceN/cur_state           0 = not throttling
//                    -> event/<type>/state (1 while cur_state > 0)
//     cooling_deviceN/stats/time_in_state_ms  "<state> <ms>" per line
//                    -> event/<type>/time: ms spent in states above 0 (counter)
//
// A counter that goes backwards (a reboot, stats/reset written) is a reset:
// the store keeps counters non-decreasing (ring_store.h, I8), so a window's
// count is still the difference of its edges.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "daemon/collect/collectors.h"
#include "daemon/collect/parse.h"
#include "edgemon/text.h"

namespace edgemon {
namespace {

// An alert flag and the count of its rising edges.
struct Alarm {
  FileId file = -1;
  ChannelId state = 0;
  ChannelId events = 0;
  std::optional<int64_t> last;  // the flag at the previous good read
  int64_t count = 0;
};

// A cooling device read as a throttle.
struct Throttle {
  FileId cur = -1;
  FileId stats = -1;
  ChannelId state = 0;
  ChannelId time = 0;
};

bool IsFanCoolingDevice(std::string_view type) {
  const std::string t = text::Lower(type);
  return t.find("fan") != std::string::npos;
}

class EventCollector final : public Collector {
 public:
  std::string_view Name() const override { return "events"; }

  std::vector<std::string> WatchedDirs() const override {
    return {SysPath("class/hwmon"), SysPath("class/thermal")};
  }

  void Discover(DiscoverContext& ctx) override {
    counters_.clear();
    for (const auto& a : alarms_) kept_[a.events] = {a.last, a.count};
    alarms_.clear();
    throttles_.clear();
    DiscoverHwmon(ctx);
    for (const auto& chip : FindIna3221Chips(ctx.fs())) DiscoverIna3221(ctx, chip);
    DiscoverCoolingDevices(ctx);
  }

  void Sample(SampleContext& ctx) override {
    SampleScaled(ctx, counters_);
    for (auto& a : alarms_) {
      auto v = ctx.ReadInt(a.file, a.state);
      if (!v) {
        ctx.Copy(a.state, a.events);
        continue;
      }
      if (*v != 0 && *v != 1) {
        ctx.Fail(a.state, ReadError::kRange);
        ctx.Copy(a.state, a.events);
        continue;
      }
      if (*v == 1 && a.last.value_or(0) == 0) ++a.count;
      a.last = *v;
      ctx.Set(a.state, *v);
      ctx.Set(a.events, a.count);
    }
    for (const auto& t : throttles_) {
      if (t.cur >= 0) {
        if (auto v = ctx.ReadInt(t.cur, t.state)) {
          if (*v < 0) {
            ctx.Fail(t.state, ReadError::kRange);
          } else {
            ctx.Set(t.state, *v > 0 ? 1 : 0);
          }
        }
      }
      if (t.stats >= 0) {
        auto text = ctx.Read(t.stats, t.time);
        if (!text) continue;
        if (auto ms = parse::TimeInStateAboveZero(*text)) {
          ctx.Set(t.time, *ms);
        } else {
          ctx.Fail(t.time, ReadError::kGarbage);
        }
      }
    }
  }

 private:
  void DiscoverHwmon(DiscoverContext& ctx) {
    const std::string klass = SysPath("class/hwmon");
    // hwmonN numbering is not stable: chips in the order of their device paths.
    std::vector<std::pair<std::string, std::string>> chips;  // resolved dir, name
    for (const auto& entry : ctx.fs().List(klass)) {
      const std::string dir = JoinPath(klass, entry);
      auto name = ctx.ReadLine(JoinPath(dir, "name"));
      if (!name || (*name != "soctherm_oc" && *name != "ina238")) continue;
      chips.emplace_back(ctx.fs().Resolve(dir).value_or(dir), *name);
    }
    std::sort(chips.begin(), chips.end());
    for (const auto& [dir, name] : chips) {
      if (name == "soctherm_oc") {
        DiscoverSocthermOc(ctx, dir);
      } else {
        DiscoverIna238(ctx, dir);
      }
    }
  }

  void DiscoverSocthermOc(DiscoverContext& ctx, const std::string& dir) {
    std::vector<std::string> files = ctx.fs().List(dir);
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      // ocN_event_cnt
      if (f.size() < 13 || f.rfind("oc", 0) != 0 || !f.ends_with("_event_cnt")) continue;
      const std::string oc = f.substr(0, f.size() - 10);
      if (!parse::Int(std::string_view(oc).substr(2))) continue;
      Channel c;
      c.kind = Kind::kEvent;
      c.name = oc;
      c.field = Field::kEvents;
      c.device = "hwmon soctherm_oc";
      c.flags = kFlagCounter;
      c.attrs.emplace_back("source", "over-current");
      if (auto en = ctx.ReadLine(JoinPath(dir, oc + "_throt_en"))) {
        c.attrs.emplace_back("throttle", *en);
      }
      if (AddScaled(ctx, std::move(c), JoinPath(dir, f), 1, 1, counters_)) {
        counters_.back().lo = 0;  // a count is never negative
      }
    }
  }

  void DiscoverIna238(DiscoverContext& ctx, const std::string& dir) {
    std::string label = ctx.ReadLine(JoinPath(dir, "label")).value_or("");
    if (label.empty()) label = "ina238 " + std::string(BaseName(dir));
    std::vector<std::string> files = ctx.fs().List(dir);
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      if (!f.ends_with("_alarm")) continue;
      const std::string what = f.substr(0, f.size() - 6);  // "power1_max"
      if (what.empty()) continue;
      AddAlarm(ctx, label + ":" + what, "ina238", JoinPath(dir, f));
    }
  }

  void DiscoverIna3221(DiscoverContext& ctx, const InaDeviceDir& chip) {
    for (int k = 1; k <= 3; ++k) {
      const std::string n = std::to_string(k);
      auto label = ctx.ReadLine(JoinPath(chip.dir, "in" + n + "_label"));
      if (!label || parse::IsUnusedInaLabel(*label)) continue;
      auto enable = ctx.ReadInt(JoinPath(chip.dir, "in" + n + "_enable"));
      if (enable && *enable == 0) continue;
      const std::string device = "ina3221 " + chip.bus_addr;
      AddAlarm(ctx, *label + ":crit", device, JoinPath(chip.dir, "curr" + n + "_crit_alarm"));
      AddAlarm(ctx, *label + ":warn", device, JoinPath(chip.dir, "curr" + n + "_max_alarm"));
    }
  }

  void AddAlarm(DiscoverContext& ctx, const std::string& name, const std::string& device,
                const std::string& path) {
    Alarm a;
    a.file = ctx.Open(path);
    if (a.file < 0) return;
    Channel c;
    c.kind = Kind::kEvent;
    c.name = name;
    c.device = device;
    c.attrs.emplace_back("source", "alarm");
    c.attrs.emplace_back("file", std::string(BaseName(path)));
    Channel state = c;
    state.field = Field::kState;
    a.state = ctx.Add(std::move(state));
    c.field = Field::kEvents;
    c.flags = kFlagCounter | kFlagDerived;
    a.events = ctx.Add(std::move(c));
    // A rediscovery keeps the count: the channel id is stable.
    auto it = kept_.find(a.events);
    if (it != kept_.end()) std::tie(a.last, a.count) = it->second;
    alarms_.push_back(a);
  }

  void DiscoverCoolingDevices(DiscoverContext& ctx) {
    const std::string base = SysPath("class/thermal");
    std::vector<std::pair<int64_t, std::string>> found;
    for (const auto& entry : ctx.fs().List(base)) {
      if (entry.rfind("cooling_device", 0) != 0) continue;
      if (auto n = parse::Int(std::string_view(entry).substr(14))) found.emplace_back(*n, entry);
    }
    std::sort(found.begin(), found.end());  // device 2 before device 10
    for (const auto& [n, entry] : found) {
      const std::string dir = JoinPath(base, entry);
      auto type = ctx.ReadLine(JoinPath(dir, "type"));
      if (!type || IsFanCoolingDevice(*type)) continue;
      Throttle t;
      t.cur = ctx.Open(JoinPath(dir, "cur_state"));
      t.stats = ctx.Open(JoinPath(dir, "stats/time_in_state_ms"));
      if (t.cur < 0 && t.stats < 0) continue;
      Channel c;
      c.kind = Kind::kEvent;
      c.name = *type;
      c.device = entry;
      c.attrs.emplace_back("source", "throttle");
      if (auto max = ctx.ReadInt(JoinPath(dir, "max_state"))) {
        c.attrs.emplace_back("max_state", std::to_string(*max));
      }
      if (t.cur >= 0) {
        Channel s = c;
        s.field = Field::kState;
        t.state = ctx.Add(std::move(s));
      }
      if (t.stats >= 0) {
        c.field = Field::kTime;
        c.flags = kFlagCounter;
        t.time = ctx.Add(std::move(c));
      }
      throttles_.push_back(t);
    }
  }

  std::vector<ScaledFile> counters_;
  std::vector<Alarm> alarms_;
  std::vector<Throttle> throttles_;
  // Alarm flags and counts across rediscoveries.
  std::map<ChannelId, std::pair<std::optional<int64_t>, int64_t>> kept_;
};

}  // namespace

std::unique_ptr<Collector> MakeEventCollector() {
  return std::make_unique<EventCollector>();
}

}  // namespace edgemon
