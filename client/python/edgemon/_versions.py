"""The oldest grpcio and protobuf the generated stubs accept: that both are
installed is checked at import, without importing either; their versions on
first use (edgemon._lazy), when they are imported."""
import importlib.util
from typing import Tuple

# google.protobuf.internal.builder, which protoc 3.21's Python output imports,
# first shipped in protobuf 3.20 (the Python package numbers it 3.20 and 4.x).
MIN_PROTOBUF = (3, 20)
# The stubs use only grpc.unary_unary / unary_stream channels and metadata;
# grpcio 1.24 is the oldest with everything this package calls.
MIN_GRPCIO = (1, 24)


def _parse(version: str) -> Tuple[int, ...]:
    out = []
    for part in version.split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


_NEED = "edgemon needs grpcio >= %d.%d and protobuf >= %d.%d" % (MIN_GRPCIO + MIN_PROTOBUF)
_INSTALL = "(Debian/Ubuntu: apt install python3-grpcio python3-protobuf; or pip install grpcio " \
    "protobuf)"


def installed() -> None:
    """Raises ImportError with one line when grpcio or protobuf is not
    installed; imports neither (``google``, protobuf's namespace, at most)."""
    for module in ("grpc", "google.protobuf"):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise ImportError("%s: no module named '%s' %s" % (_NEED, module, _INSTALL))


def check() -> None:
    """Raises ImportError with one line when grpcio or protobuf is missing or
    too old (imports both)."""
    try:
        import grpc
        import google.protobuf
    except ImportError as e:
        raise ImportError("%s: %s %s" % (_NEED, e, _INSTALL)) from None
    have_grpc = _parse(getattr(grpc, "__version__", "0"))
    have_pb = _parse(getattr(google.protobuf, "__version__", "0"))
    if have_grpc < MIN_GRPCIO or have_pb < MIN_PROTOBUF:
        raise ImportError("%s; this Python has grpcio %s and protobuf %s" %
                          (_NEED, getattr(grpc, "__version__", "?"),
                           getattr(google.protobuf, "__version__", "?")))
