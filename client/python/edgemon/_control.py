"""The power mode, locked clocks and fan through edgemon-control, as leases.

    import edgemon
    ctl = edgemon.control()                    # $EDGEMON_CONTROL or the helper's socket
    with ctl.lock_clocks():                    # held while the block runs
        run_benchmark()                        # ... then the clocks are restored
    lease = ctl.set_mode(0, duration_s=3600)   # detached: restored in an hour or on release
    ctl.release("mode")

A held lease also ends when this process exits or dies: the helper sees the
connection go and restores what the lease changed. Refusals raise
:class:`edgemon.PermissionDenied` (not in group edgemon-control),
:class:`edgemon.InvalidArgument` (unknown mode or fan, a lease held by another,
a mode that needs a reboot) or :class:`edgemon.Unavailable` (no helper).
"""
import os
from typing import Any, Dict, List, Optional

from . import _check
from ._errors import Error, InvalidArgument, PermissionDenied, Unavailable, from_rpc_error
from ._lazy import control_pb, control_pb_grpc, grpc  # imported on first use

# The packaged helper's socket; $EDGEMON_CONTROL overrides it (as for `edgemon control`).
DEFAULT_CONTROL_TARGET = "unix:/run/edgemon-control/edgemon-control.sock"


class Lease(object):
    """One granted change. ``id``, ``kind`` ("mode", "clocks", "fan"), ``detail``;
    ``end()`` (or leaving the ``with`` block) restores it."""

    def __init__(self, control: "Control", event: Any, call: Any) -> None:
        self._control = control
        self._call = call
        self.id = event.lease.id
        self.kind = event.lease.kind
        self.detail = event.lease.detail
        self.detached = event.lease.detached
        self.message = event.message
        self._ended = False

    def end(self) -> str:
        """Releases the lease; returns the helper's account ("...; restored")."""
        if self._ended:
            return self.message
        self._ended = True
        if self.detached:
            return self.message
        try:
            self.message = self._control._release(lease_id=self.id).message
        except Error as e:
            self.message = e.message
        self._call.cancel()
        return self.message

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.end()

    def __del__(self) -> None:
        try:
            self.end()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class Control(object):
    """A connection to edgemon-control (``address``: "unix:/path" or "/path")."""

    def __init__(self, address: Optional[str] = None) -> None:
        address = _check.optional_text("address", address)
        address = address or os.environ.get("EDGEMON_CONTROL") or DEFAULT_CONTROL_TARGET
        if address.startswith("/"):
            address = "unix:" + address
        if not address.startswith("unix:/"):
            raise InvalidArgument("edgemon: address: must be unix:/path or /path (the control "
                                  "helper's socket), got %r" % (address,))
        self.target = address
        self._pb = control_pb
        self._channel = grpc.insecure_channel(address)
        self._stub = control_pb_grpc.ControlStub(self._channel)

    def _error(self, what: str, err: Any) -> Error:
        e = from_rpc_error(what, self.target, err)
        from ._client import unix_socket_path
        path = unix_socket_path(self.target) or ""
        if isinstance(e, Unavailable) and not os.path.exists(path):
            return Unavailable(e.message + " (edgemon-control is off unless [control] enable = "
                               "true in edgemond.toml and its service is started)", e.code)
        if isinstance(e, (Unavailable, PermissionDenied)) and not os.access(path, os.R_OK | os.W_OK):
            try:
                import grp
                group = grp.getgrgid(os.stat(path).st_gid).gr_name
            except (ImportError, KeyError, OSError):
                group = "edgemon-control"
            return PermissionDenied(e.message + " (only root and members of group %s may change "
                                    "the power mode, clocks and fan)" % group, e.code)
        return e

    def _unary(self, what: str, fn: Any, req: Any) -> Any:
        try:
            return fn(req, timeout=30)
        except grpc.RpcError as err:
            raise self._error(what, err) from None

    def _lease(self, what: str, fn: Any, req: Any) -> Lease:
        call = fn(req)
        try:
            event = next(call)
        except grpc.RpcError as err:
            raise self._error(what, err) from None
        except StopIteration:
            raise Error("edgemon: %s: the helper ended the call without a lease" % what) from None
        return Lease(self, event, call)

    def _options(self, duration_s: float, detach: Optional[bool]) -> Any:
        duration_s = _check.real("duration_s", duration_s, 0.0, _check.MAX_CONTROL_LEASE_S,
                                 "seconds")
        if _check.optional_flag("detach", detach) is None:
            detach = duration_s > 0
        return self._pb.LeaseOptions(duration_s=duration_s, detach=detach)

    def _release(self, kind: str = "", lease_id: str = "") -> Any:
        return self._unary("release", self._stub.Release,
                           self._pb.ReleaseRequest(kind=kind, lease_id=lease_id))

    def modes(self) -> List[Dict[str, Any]]:
        """[{'id', 'name', 'default', 'current'}] from the board's nvpmodel.conf."""
        r = self._unary("modes", self._stub.ListModes, self._pb.ListModesRequest())
        cur = r.current_id if r.HasField("current_id") else None
        return [{"id": m.id, "name": m.name, "default": m.is_default, "current": m.id == cur}
                for m in r.modes]

    def state(self) -> Dict[str, Any]:
        """{'mode_id', 'mode_name', 'clocks_locked', 'fans': {name: pwm}, 'leases', 'changes'}."""
        s = self._unary("state", self._stub.GetState, self._pb.GetStateRequest())
        return {"mode_id": s.mode_id if s.HasField("mode_id") else None,
                "mode_name": s.mode_name or None,
                "clocks_locked": s.clocks_locked,
                "fans": {f.name: (f.pwm if f.HasField("pwm") else None) for f in s.fans},
                "leases": [{"id": l.id, "kind": l.kind, "detail": l.detail, "uid": l.uid,
                            "pid": l.pid} for l in s.leases],
                "changes": s.changes}

    def set_mode(self, mode_id: int, duration_s: float = 0,
                 detach: Optional[bool] = None) -> Lease:
        """Power mode ``mode_id``; held until ``end()`` unless a duration detaches it."""
        mode_id = _check.integer("mode_id", mode_id, _check.INT32_MIN, _check.INT32_MAX)
        return self._lease("set mode %d" % mode_id, self._stub.SetMode,
                           self._pb.SetModeRequest(id=mode_id,
                                                   lease=self._options(duration_s, detach)))

    def lock_clocks(self, duration_s: float = 0, detach: Optional[bool] = None) -> Lease:
        """The jetson_clocks effect (clocks at their maximum, fan full), restored after."""
        return self._lease("lock clocks", self._stub.LockClocks,
                           self._pb.LockClocksRequest(lease=self._options(duration_s, detach)))

    def set_fan(self, percent: float, fan: str = "", duration_s: float = 0,
                detach: Optional[bool] = None) -> Lease:
        """Fan duty in percent, 0 to 100 (every fan, or the one named)."""
        pct = int(round(_check.real("percent", percent, 0.0, 100.0, "%")))
        fan = _check.text("fan", fan)
        return self._lease("set fan %s%%" % percent, self._stub.SetFan,
                           self._pb.SetFanRequest(fan=fan, speed_percent=pct,
                                                  lease=self._options(duration_s, detach)))

    def release(self, kind: str) -> str:
        """Ends the lease of ``kind`` ("mode", "clocks", "fan"), whoever's it is (root) or ours."""
        return self._release(kind=_check.text("kind", kind, nonempty=True)).message

    def close(self) -> None:
        self._channel.close()


def control(address: Optional[str] = None) -> Control:
    """A :class:`Control` for ``address`` (default ``$EDGEMON_CONTROL``, else the helper's socket)."""
    return Control(address)
