#include "daemon/collect/energy.h"

#include <cmath>

namespace edgemon {

void EnergyIntegrator::Discover(ChannelTable& table) {
  for (const auto& r : rails_) carried_[r.key] = r;
  rails_.clear();
  // Snapshot first: Add() may grow the table while we walk it.
  std::vector<Channel> powers;
  for (ChannelId id = 0; id < table.channels().size(); ++id) {
    const Channel& c = table.channels()[id];
    if (!table.Live(id) || c.kind != Kind::kRail || c.field != Field::kPower) continue;
    bool has_energy = false;
    for (ChannelId j = 0; j < table.channels().size(); ++j) {
      const Channel& e = table.channels()[j];
      if (table.Live(j) && e.kind == Kind::kRail && e.field == Field::kEnergy && e.name == c.name) {
        has_energy = true;
        break;
      }
    }
    if (!has_energy) powers.push_back(c);
  }
  for (const Channel& p : powers) {
    Channel e;
    e.kind = Kind::kRail;
    e.name = p.name;
    e.field = Field::kEnergy;
    e.unit = Unit::kMillijoule;
    e.device = p.device;
    e.parent = p.parent;
    e.flags = kFlagCounter | kFlagDerived | (p.flags & kFlagInputRail);
    Rail r;
    r.power = p.id;
    r.key = e.Key();
    r.energy = table.Add(std::move(e));
    auto it = carried_.find(r.key);
    if (it != carried_.end() && it->second.power == r.power) {
      r.mj = it->second.mj;
      r.last_t = it->second.last_t;
      r.last_mw = it->second.last_mw;
      r.have_last = it->second.have_last;
    } else if (it != carried_.end()) {
      r.mj = it->second.mj;
    }
    rails_.push_back(std::move(r));
  }
}

void EnergyIntegrator::Seed(const std::map<std::string, int64_t>& mj_by_key) {
  for (const auto& [key, mj] : mj_by_key) carried_[key].mj = static_cast<double>(mj);
  for (auto& r : rails_) {
    auto it = mj_by_key.find(r.key);
    if (it != mj_by_key.end()) r.mj = static_cast<double>(it->second);
  }
}

void EnergyIntegrator::Observe(int64_t t_ns, const std::vector<Value>& values) {
  for (auto& r : rails_) {
    const Value& p = r.power < values.size() ? values[r.power] : std::nullopt;
    if (!p || *p < 0) continue;  // a gap: keep the last good reading
    if (r.have_last) {
      int64_t dt = t_ns - r.last_t;
      if (dt <= 0) continue;  // same instant (or clock anomaly): nothing to add
      if (dt > max_gap_ns_) {
        ++gaps_;
      } else {
        // mW * ns = 1e-12 J = 1e-9 mJ
        r.mj += 0.5 * static_cast<double>(r.last_mw + *p) * static_cast<double>(dt) * 1e-9;
      }
    }
    r.last_t = t_ns;
    r.last_mw = *p;
    r.have_last = true;
  }
}

std::optional<double> EnergyIntegrator::Mj(ChannelId energy) const {
  for (const auto& r : rails_) {
    if (r.energy == energy) {
      if (!r.have_last && r.mj == 0) return std::nullopt;
      return r.mj;
    }
  }
  return std::nullopt;
}

void EnergyIntegrator::Fill(std::vector<Value>& values) const {
  for (const auto& r : rails_) {
    if (!r.have_last && r.mj == 0) continue;  // never measured: absent, not 0
    if (r.energy < values.size()) values[r.energy] = static_cast<int64_t>(std::floor(r.mj));
  }
}

}  // namespace edgemon
