// INA3221 through NVIDIA's ina3221x iio driver (JetPack 4): in_powerK_input
// = round(P(t)); in_currentK_input = round(P * 1000 / V); ui_input_K and
// in_current_sum_input.
#include "daemon/collect/collectors.h"
#include "daemon/sim/sources/sources.h"

namespace edgemon::sim {
namespace {

constexpr int kIioMaxChannels = 8;

struct Ina3221IioSource final : SimSource {
  struct IioChannel {
    int rail = -1;
    double voltage_mv = 0;
    int64_t fixed_ma = 0;
    int power_file = -1;
    int curr_file = -1;
    int ui_file = -1;
  };
  struct IioDevice {
    std::vector<IioChannel> channels;
    int sum_file = -1;
  };
  std::vector<IioDevice> iio_devices;

  void Discover(SimTree& tree) override {
    // The devices as edgemon's ina3221x collector finds them.
    for (const auto& d : FindIna3221IioDevices(tree.fs)) {
      IioDevice dev;
      bool any = false;
      for (int k = 0; k < kIioMaxChannels; ++k) {
        const std::string n = std::to_string(k);
        auto label = tree.ReadLine(JoinPath(d.dir, "rail_name_" + n));
        if (!label) continue;
        IioChannel c;
        auto mv = tree.ReadInt(JoinPath(d.dir, "in_voltage" + n + "_input"));
        auto mw = tree.ReadInt(JoinPath(d.dir, "in_power" + n + "_input"));
        c.fixed_ma = tree.ReadInt(JoinPath(d.dir, "in_current" + n + "_input")).value_or(0);
        if (!parse::IsUnusedInaLabel(*label) && mv && *mv > 0 && mw && *mw >= 0) {
          c.power_file = tree.OpenValue(JoinPath(d.dir, "in_power" + n + "_input"));
        }
        if (c.power_file >= 0) {
          c.voltage_mv = static_cast<double>(*mv);
          c.rail = tree.AddRail(*label, "ina3221x", "ina3221x " + d.bus_addr,
                                static_cast<double>(*mw), c.voltage_mv);
          c.curr_file = tree.OpenValue(JoinPath(d.dir, "in_current" + n + "_input"));
          c.ui_file = tree.OpenValue(JoinPath(d.dir, "ui_input_" + n));
          any = true;
        }
        dev.channels.push_back(c);
      }
      if (!any) continue;
      dev.sum_file = tree.OpenValue(JoinPath(d.dir, "in_current_sum_input"));
      iio_devices.push_back(std::move(dev));
    }
  }

  void Step(SimTree& tree, double t) override {
    char buf[64];
    for (const auto& dev : iio_devices) {
      int64_t sum_ma = 0;
      for (const auto& c : dev.channels) {
        int64_t ma = c.fixed_ma;
        if (c.rail >= 0) {
          const double mw = tree.PowerAt(c.rail, t);
          ma = Round(mw * 1000 / c.voltage_mv);
          tree.writer.PutInt(c.power_file, Round(mw));
          tree.writer.PutInt(c.curr_file, ma);
          if (c.ui_file >= 0) {
            // "mV mA", as the driver prints it.
            auto r = std::to_chars(buf, buf + 30, Round(c.voltage_mv));
            *r.ptr++ = ' ';
            r = std::to_chars(r.ptr, buf + 60, ma);
            *r.ptr++ = '\n';
            tree.writer.Put(c.ui_file, std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
          }
        }
        sum_ma += ma;
      }
      tree.writer.PutInt(dev.sum_file, sum_ma);
    }
  }
};

}  // namespace

std::unique_ptr<SimSource> MakeIna3221IioSource() {
  return std::make_unique<Ina3221IioSource>();
}

}  // namespace edgemon::sim
