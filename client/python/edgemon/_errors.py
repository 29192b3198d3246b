"""The exceptions of the edgemon package: one per kind of failure, each
carrying the daemon's own message, never a raw gRPC traceback."""
from typing import Optional


class Error(Exception):
    """Base of every edgemon error. ``code`` is the gRPC status name
    ("UNAVAILABLE", ...) or None for errors raised by this package itself."""

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class Unavailable(Error):
    """The daemon cannot be reached (not running, wrong address, timed out)."""


class PermissionDenied(Error):
    """The daemon refused us: a wrong or missing token, socket permissions."""


class InvalidArgument(Error, ValueError):
    """A bad argument: an unknown channel, a malformed address or time, a
    number out of range, nan or inf (refused before anything is sent, the
    message naming the argument and its range), ... Also a ValueError."""


class NotFound(Error):
    """The daemon has no such thing (a window id, ...)."""


def from_rpc_error(what: str, target: str, err: "object") -> Error:
    """The edgemon exception for a grpc.RpcError raised by call ``what``."""
    code = err.code() if hasattr(err, "code") else None
    details = err.details() if hasattr(err, "details") else str(err)
    return from_status(what, target, code, details)


def from_status(what: str, target: str, code: "object", details: Optional[str]) -> Error:
    """The edgemon exception for a failure of ``what`` with gRPC status ``code``
    (a grpc.StatusCode, None when unknown) and the daemon's message."""
    import grpc
    name = code.name if code is not None else "UNKNOWN"
    message = "edgemon: %s at %s: %s: %s" % (what, target, name, details or "(no message)")
    # A unix socket whose mode shuts the caller out fails at connect(2), which
    # gRPC reports as UNAVAILABLE: it is a refusal, as the edgemon command says.
    if code == grpc.StatusCode.UNAVAILABLE and "Permission denied" in (details or ""):
        return PermissionDenied(message, name)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return Unavailable(message, name)
    if code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED):
        return PermissionDenied(message, name)
    if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.OUT_OF_RANGE,
                grpc.StatusCode.FAILED_PRECONDITION):
        return InvalidArgument(message, name)
    if code == grpc.StatusCode.NOT_FOUND:
        return NotFound(message, name)
    return Error(message, name)
