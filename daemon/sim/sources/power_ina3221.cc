// INA3221 through hwmon (JetPack 5+): currK_input = round(P(t) * 1000 /
// inK_input); inK_input stays; the shunt channels in4..6, in7 (sum) and
// curr4 (sum) stay consistent where present.
#include "daemon/collect/collectors.h"
#include "daemon/sim/sources/sources.h"

namespace edgemon::sim {
namespace {

struct Ina3221Source final : SimSource {
  struct InaChannel {
    int rail = -1;  // -1: a fixed channel (NC, disabled, unreadable)
    double voltage_mv = 0;
    int64_t fixed_ma = 0;
    int64_t fixed_shunt = 0;
    int64_t shunt_uohm = 0;
    int curr_file = -1;
    int shunt_file = -1;
  };
  struct InaChip {
    std::vector<InaChannel> channels;
    int sum_curr_file = -1;   // curr4_input
    int sum_shunt_file = -1;  // in7_input
  };
  std::vector<InaChip> ina_chips;

  void Discover(SimTree& tree) override {
    // The chips as edgemon's INA3221 collector finds them.
    for (const auto& d : FindIna3221Chips(tree.fs)) {
      InaChip chip;
      bool any = false;
      for (int k = 1; k <= 3; ++k) {
        const std::string n = std::to_string(k);
        InaChannel c;
        auto label = tree.ReadLine(JoinPath(d.dir, "in" + n + "_label"));
        auto enable = tree.ReadInt(JoinPath(d.dir, "in" + n + "_enable"));
        auto mv = tree.ReadInt(JoinPath(d.dir, "in" + n + "_input"));
        auto ma = tree.ReadInt(JoinPath(d.dir, "curr" + n + "_input"));
        auto shunt = tree.ReadInt(JoinPath(d.dir, "shunt" + n + "_resistor"));
        const std::string shunt_path = JoinPath(d.dir, "in" + std::to_string(k + 3) + "_input");
        c.fixed_ma = ma.value_or(0);
        c.fixed_shunt = tree.ReadInt(shunt_path).value_or(0);
        if (label && !parse::IsUnusedInaLabel(*label) && (!enable || *enable != 0) && mv &&
            *mv > 0 && ma) {
          c.curr_file = tree.OpenValue(JoinPath(d.dir, "curr" + n + "_input"));
        }
        if (c.curr_file >= 0) {
          c.voltage_mv = static_cast<double>(*mv);
          c.rail = tree.AddRail(*label, "ina3221", "ina3221 " + d.bus_addr,
                                static_cast<double>(*mv) * static_cast<double>(*ma) / 1000,
                                c.voltage_mv);
          if (shunt && *shunt > 0) {
            c.shunt_uohm = *shunt;
            c.shunt_file = tree.OpenValue(shunt_path);
          }
          any = true;
        }
        chip.channels.push_back(c);
      }
      if (!any) continue;
      chip.sum_curr_file = tree.OpenValue(JoinPath(d.dir, "curr4_input"));
      if (tree.ReadLine(JoinPath(d.dir, "in7_label")).value_or("").find("sum") !=
          std::string::npos) {
        chip.sum_shunt_file = tree.OpenValue(JoinPath(d.dir, "in7_input"));
      }
      ina_chips.push_back(std::move(chip));
    }
  }

  void Step(SimTree& tree, double t) override {
    for (const auto& chip : ina_chips) {
      int64_t sum_ma = 0, sum_shunt = 0;
      for (const auto& c : chip.channels) {
        int64_t ma = c.fixed_ma;
        int64_t shunt = c.fixed_shunt;
        if (c.rail >= 0) {
          ma = Round(tree.PowerAt(c.rail, t) * 1000 / c.voltage_mv);
          tree.writer.PutInt(c.curr_file, ma);
          if (c.shunt_file >= 0) {
            shunt = ma * c.shunt_uohm / 1000;
            tree.writer.PutInt(c.shunt_file, shunt);
          }
        }
        sum_ma += ma;
        sum_shunt += shunt;
      }
      tree.writer.PutInt(chip.sum_curr_file, sum_ma);
      tree.writer.PutInt(chip.sum_shunt_file, sum_shunt);
    }
  }
};

}  // namespace

std::unique_ptr<SimSource> MakeIna3221Source() {
  return std::make_unique<Ina3221Source>();
}

}  // namespace edgemon::sim
