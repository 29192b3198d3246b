// The packaged addresses, one copy for the programs that listen on them
// (edgemond, edgemon-control: their configuration's defaults) and the ones
// that connect (edgemon, edgetop, the C++ client library).
#pragma once

namespace edgemon {

// edgemond's unix socket (`[daemon] listen`); edgemon and edgetop connect
// here unless $EDGEMON_CONNECT or --connect says otherwise.
inline constexpr const char* kDefaultTarget = "unix:/run/edgemon/edgemond.sock";
// edgemon-control's unix socket (`[control] listen`); $EDGEMON_CONTROL or
// --control overrides it for the clients.
inline constexpr const char* kDefaultControlTarget =
    "unix:/run/edgemon-control/edgemon-control.sock";

}  // namespace edgemon
