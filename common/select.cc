#include "edgemon/select.h"

#include <fnmatch.h>

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "edgemon/text.h"

namespace edgemon {

Result<std::vector<ChannelId>> SelectChannels(const Inventory& inventory,
                                              const std::vector<std::string>& patterns) {
  std::vector<ChannelId> ids;
  if (patterns.empty()) {
    for (const Channel& c : inventory.channels) {
      if (!c.name.empty()) ids.push_back(c.id);
    }
    return ids;
  }
  for (const auto& p : patterns) {
    const size_t before = ids.size();
    if (text::AllDigits(p)) {
      uint64_t id = 0;
      const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), id);
      if (ec == std::errc() && end == p.data() + p.size() && id < inventory.channels.size() &&
          !inventory.channels[id].name.empty()) {
        ids.push_back(static_cast<ChannelId>(id));
      }
    } else {
      for (const Channel& c : inventory.channels) {
        if (c.name.empty()) continue;
        const std::string key = c.Key();
        if (key == p || fnmatch(p.c_str(), key.c_str(), 0) == 0) ids.push_back(c.id);
      }
    }
    if (ids.size() == before) {
      return Status::InvalidArgument(
          "no channel matches \"" + p +
          "\" (expected a key kind/name/field, an id, or a pattern such as rail/* or "
          "*/power; see edgemon sensors)");
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace edgemon
