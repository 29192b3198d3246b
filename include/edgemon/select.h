// Channel selection: the one grammar every surface takes for "which
// channels" (edgemon's --channels, the API's Query/Watch/Summarize channel
// lists, Python's channels=).
#pragma once

#include <string>
#include <vector>

#include "edgemon/channel.h"
#include "edgemon/status.h"

namespace edgemon {

// Channels matching any of `patterns`, ascending ids without repeats: a key
// "kind/name/field", a channel id ("12"), or a shell glob over keys
// ("rail/*", "thermal/cpu*", "*/power", "rail/*/power"; `*` also matches
// "/"). Only named channels are selected (a slot whose kind this build does
// not know stays out). An empty list selects every named channel. A pattern
// that matches nothing is INVALID_ARGUMENT naming it (one line).
Result<std::vector<ChannelId>> SelectChannels(const Inventory& inventory,
                                              const std::vector<std::string>& patterns);

}  // namespace edgemon
