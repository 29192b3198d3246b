"""The exceptions of the edgemon package: one per kind of failure, each
carrying the daemon's own message, never a raw gRPC traceback."""
import os
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


_START = ("start edgemond (`sudo systemctl start edgemond`, or as yourself: `edgemond --listen "
          "unix:$XDG_RUNTIME_DIR/edgemon.sock`), or set EDGEMON_CONNECT (or connect(target)) to "
          "the socket or host:port of the daemon that runs")


def _unix_socket_advice(path: str, denied: bool, details: str) -> Optional[str]:
    """Why the unix socket at ``path`` failed us, and what to do (the edgemon
    command says the same: client/first_contact.h)."""
    import grp
    import stat
    try:
        st = os.stat(path)
    except PermissionError:
        try:
            st = os.stat(os.path.dirname(path))  # a directory on the way shuts us out
        except OSError:
            st = None
    except OSError:
        return "no socket there (edgemond is not running, or listens elsewhere): " + _START
    if st is not None and not stat.S_ISSOCK(st.st_mode) and not denied:
        return ("that path is not a socket: set EDGEMON_CONNECT (or connect(target)) to "
                "edgemond's socket (`listen` in /etc/edgemon/edgemond.toml, default "
                "unix:/run/edgemon/edgemond.sock)")
    if denied:
        try:
            group = grp.getgrgid(st.st_gid).gr_name if st is not None else ""
        except KeyError:
            group = ""
        if not group or os.getuid() == 0:
            return "permission denied on the socket: ask the administrator for access to it"
        import pwd
        try:
            user = pwd.getpwuid(os.getuid()).pw_name
            listed = st.st_gid in os.getgrouplist(user, os.getgid())
        except (KeyError, OSError):
            listed = False
        if listed and st.st_gid not in os.getgroups() and st.st_gid != os.getegid():
            return ("permission denied: you are in the `%s` group, but not in this login "
                    "session yet: log out and in again (or run `newgrp %s`)" % (group, group))
        return ("permission denied: only members of the `%s` group may connect: join it "
                "(`sudo usermod -aG %s $USER`), then log out and in again" % (group, group))
    if "Connection refused" in details:
        return "nothing listens on that socket (edgemond stopped?): " + _START
    return None


def advice(target: str, code_name: str, details: str) -> Optional[str]:
    """What a failed first call to ``target`` means and what to do next, in one
    line; None where the status names no first-contact failure."""
    if code_name == "UNAUTHENTICATED":
        if "wrong bearer token" in details:
            return ("the daemon refused the bearer token: give the token in the daemon's "
                    "`tcp_token_file` with token_file= (or EDGEMON_TOKEN_FILE)")
        return ("the daemon wants a bearer token on this listener: pass token_file= (or set "
                "EDGEMON_TOKEN_FILE) with the token in the daemon's `tcp_token_file`")
    if code_name == "UNIMPLEMENTED":
        return ("the daemon is older than this client and lacks this call: upgrade edgemond to "
                "the same version as the client (see edgemon.__version__)")
    if code_name not in ("UNAVAILABLE", "PERMISSION_DENIED", "DEADLINE_EXCEEDED"):
        return None
    denied = code_name == "PERMISSION_DENIED" or "Permission denied" in details
    if target.startswith("unix:"):
        if code_name == "DEADLINE_EXCEEDED":
            return ("the daemon did not answer in time (overloaded or stopped?): check "
                    "`systemctl status edgemond`, or raise timeout=")
        return _unix_socket_advice(target[5:], denied, details)
    if any(k in details for k in ("andshake", "SSL", "ssl", "ertificate", "TLS")):
        return ("the TLS handshake failed: trust the daemon's certificate with tls=CA_FILE, "
                "check the name it was issued for (tls_server_name=), or drop tls for a "
                "plain listener")
    if any(k in details for k in ("DNS", "resolve", "Name or service not known")):
        return ("the host name does not resolve: check the address given to connect() or "
                "EDGEMON_CONNECT")
    if "Connection refused" in details:
        return ("nothing listens on that host and port: check the address given to connect() "
                "or EDGEMON_CONNECT, and that edgemond runs with `tcp_listen` set to it")
    if any(k in details for k in ("Socket closed", "Connection reset", "EOF")):
        return ("the connection was closed at once: if the daemon listens with TLS, pass "
                "tls=True or tls=CA_FILE; else check the address given to connect() or "
                "EDGEMON_CONNECT")
    if code_name == "DEADLINE_EXCEEDED":
        return ("no answer in time: check the address given to connect() or EDGEMON_CONNECT, "
                "the network and any firewall, or raise timeout=")
    return None


def from_status(what: str, target: str, code: "object", details: Optional[str]) -> Error:
    """The edgemon exception for a failure of ``what`` with gRPC status ``code``
    (a grpc.StatusCode, None when unknown) and the daemon's message; where the
    failure is one of first contact, the message says what to do next."""
    import grpc
    name = code.name if code is not None else "UNKNOWN"
    hint = advice(target, name, details or "")
    if hint:
        message = "edgemon: %s at %s: %s (%s)" % (what, target, hint, name)
    else:
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
