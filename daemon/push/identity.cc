#include "daemon/push/identity.h"

#include "edgemon/text.h"

namespace edgemon::push {

Identity ReadIdentity(SysFs& fs, const BoardInfo& board,
                      std::vector<std::pair<std::string, std::string>> labels) {
  Identity id;
  id.host_name = board.hostname;
  id.board_model = board.model;
  id.soc = board.soc;
  id.l4t = board.l4t;
  id.labels = std::move(labels);
  for (const std::string& path :
       {EtcPath("machine-id"), SysPath("firmware/devicetree/base/serial-number"),
        ProcPath("device-tree/serial-number")}) {
    if (auto text = fs.ReadText(path, 256)) {
      std::string_view v = text::Trim(*text);  // the device tree's ends in NUL
      if (!v.empty()) {
        id.host_id = TerminalSafe(v);
        break;
      }
    }
  }
  return id;
}

}  // namespace edgemon::push
