// The board's identity for the push shipper (types.h Identity), read once at
// start through the SysFs seam (so --root applies).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "daemon/collect/sysfs.h"
#include "daemon/push/types.h"
#include "edgemon/channel.h"

namespace edgemon::push {

// host_name from the board info; host_id from /etc/machine-id, else the
// device tree's serial-number ("" when neither is readable); the model, SoC
// and L4T release from the board info; `labels` as configured.
Identity ReadIdentity(SysFs& fs, const BoardInfo& board,
                      std::vector<std::pair<std::string, std::string>> labels);

}  // namespace edgemon::push
