"""edgemon: telemetry and energy measurement from edgemond, for Python scripts.

    import edgemon
    client = edgemon.connect()               # $EDGEMON_CONNECT or the daemon's socket
    snap = client.latest()
    snap.rails["VDD_IN"].power_w, snap.temperatures["cpu"], snap.cpus[3].load

    with client.measure("resnet50-fp16", rate_hz=200) as m:
        run()
    print(m.result.total_energy_j, m.result.per_item(1000))

Values are in SI units with the unit in the name (``power_w``, ``freq_hz``);
a value the daemon could not read is None, never 0. Errors are
:class:`edgemon.Error` subclasses carrying the daemon's message.

Needs Python >= 3.6, grpcio >= 1.24 and protobuf >= 3.20; the package
imports them when a client is made, not at ``import edgemon``.
"""
from ._versions import installed as _installed

_installed()

from ._errors import Error, InvalidArgument, NotFound, PermissionDenied, Unavailable  # noqa: E402
from ._model import (Board, BucketRow, Channel, Clocked, Cpu, DeviceInfo, Engine,  # noqa: E402
                     Fan, Memory, Rail, RailSamples, Row, Rows, Run, Snapshot)
from ._client import DEFAULT_TARGET, Client, connect  # noqa: E402
from ._control import DEFAULT_CONTROL_TARGET, Control, Lease, control  # noqa: E402
from ._measure import (Baseline, Measurement, PerItem, Phase, RailEnergy, Result,  # noqa: E402
                       Spread, TempRange, LoadRange, measured, stats)

__version__ = "0.1.0"

__all__ = [
    "connect", "Client", "DEFAULT_TARGET", "measured", "stats",
    "control", "Control", "Lease", "DEFAULT_CONTROL_TARGET",
    "Error", "Unavailable", "PermissionDenied", "InvalidArgument", "NotFound",
    "Snapshot", "DeviceInfo", "Board", "Channel", "Rail", "Cpu", "Clocked", "Fan", "Engine",
    "Memory", "Rows", "Row", "BucketRow", "Run", "RailSamples",
    "Measurement", "Result", "RailEnergy", "TempRange", "LoadRange", "PerItem", "Phase",
    "Baseline", "Spread",
]
