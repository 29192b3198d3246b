// Protection and throttle events, as counters that only go up:
//   soctherm_oc   the highest-numbered ocN_event_cnt of each soctherm_oc hwmon
//                 chip: fixture count + 2 per burst, a burst at t = 1 s and then
//                 every 2 x period_s (bursts(t) = 0 before 1 s, else
//                 1 + floor((t - 1) / (2 x period_s))).
//   cooling devices with stats/time_in_state_ms (not fans): throttling in the
//                 second half of every 2 x period_s: cur_state = 1 then, else
//                 0; state 1's ms grow by the throttled time, state 0's by the
//                 rest; the other states keep their fixture ms.
#include "daemon/sim/sources/sources.h"

#include <cmath>

#include "edgemon/text.h"

namespace edgemon::sim {
namespace {

struct Throttle {
  int cur = -1;
  int stats = -1;
  std::vector<std::pair<int64_t, int64_t>> base;  // state, fixture ms
};

struct EventSource final : SimSource {
  struct Counter {
    int file = -1;
    int64_t base = 0;
  };
  std::vector<Counter> counters;
  std::vector<Throttle> throttles;
  double period_s = 10;

  void Discover(SimTree& tree) override {
    period_s = tree.model.period_s > 0 ? tree.model.period_s : 10;
    const std::string hwmon = SysPath("class/hwmon");
    for (const auto& entry : tree.fs.List(hwmon)) {
      const std::string dir = JoinPath(hwmon, entry);
      if (tree.ReadLine(JoinPath(dir, "name")).value_or("") != "soctherm_oc") continue;
      int64_t best = -1;
      for (const auto& f : tree.fs.List(dir)) {
        if (!f.starts_with("oc") || !f.ends_with("_event_cnt")) continue;
        if (auto n = parse::Int(std::string_view(f).substr(2, f.size() - 12)); n && *n > best) {
          best = *n;
        }
      }
      if (best < 0) continue;
      const std::string path = JoinPath(dir, "oc" + std::to_string(best) + "_event_cnt");
      counters.push_back({tree.OpenValue(path), tree.ReadInt(path).value_or(0)});
    }
    const std::string thermal = SysPath("class/thermal");
    for (const auto& entry : tree.fs.List(thermal)) {
      if (!entry.starts_with("cooling_device")) continue;
      const std::string dir = JoinPath(thermal, entry);
      auto type = tree.ReadLine(JoinPath(dir, "type"));
      if (!type || text::Lower(*type).find("fan") != std::string::npos) continue;
      auto stats = tree.fs.ReadText(JoinPath(dir, "stats/time_in_state_ms"), 4096);
      if (!stats) continue;
      Throttle t;
      for (auto line : parse::Words(*stats, "\n")) {
        auto w = parse::Words(line);
        if (w.size() != 2) continue;
        auto st = parse::Int(w[0]);
        auto ms = parse::Int(w[1]);
        if (st && ms) t.base.emplace_back(*st, *ms);
      }
      if (t.base.size() < 2) continue;
      t.cur = tree.OpenValue(JoinPath(dir, "cur_state"));
      t.stats = tree.OpenValue(JoinPath(dir, "stats/time_in_state_ms"));
      throttles.push_back(std::move(t));
    }
  }

  void Step(SimTree& tree, double t) override {
    const int64_t bursts =
        t < 1 ? 0 : 1 + static_cast<int64_t>(std::floor((t - 1) / (2 * period_s)));
    for (const auto& c : counters) tree.writer.PutInt(c.file, c.base + 2 * bursts);
    const double cycle = 2 * period_s;
    const double n = std::floor(t / cycle);
    const double rem = t - n * cycle;
    const bool throttled = rem >= period_s;
    const auto throttled_ms =
        static_cast<int64_t>(1000 * (n * period_s + std::max(0.0, rem - period_s)));
    const auto total_ms = static_cast<int64_t>(1000 * t);
    for (const auto& th : throttles) {
      tree.writer.PutInt(th.cur, throttled ? 1 : 0);
      std::string text;
      for (const auto& [st, ms] : th.base) {
        int64_t v = ms;
        if (st == 0) v += total_ms - throttled_ms;
        if (st == 1) v += throttled_ms;
        text += std::to_string(st) + " " + std::to_string(v) + "\n";
      }
      tree.writer.Put(th.stats, text);
    }
  }
};

}  // namespace

std::unique_ptr<SimSource> MakeEventSource() {
  return std::make_unique<EventSource>();
}

}  // namespace edgemon::sim
