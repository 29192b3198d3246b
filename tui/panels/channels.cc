#include "tui/panels/channels.h"

namespace edgemon::tui {

std::vector<Source> Sources(const Inventory& inv, Kind kind) {
  std::vector<Source> out;
  std::map<std::string, size_t> index;
  for (const Channel& c : inv.channels) {
    if (c.kind != kind || c.name.empty()) continue;
    auto [it, inserted] = index.emplace(c.name, out.size());
    if (inserted) out.push_back({c.name, {}});
    out[it->second].fields.emplace(c.field, &c);
  }
  return out;
}

Value Get(const Telemetry& t, const Channel* c) {
  return c != nullptr ? t.Get(c->id) : std::nullopt;
}

}  // namespace edgemon::tui
