"""The oldest grpcio and protobuf the generated stubs accept, checked at import."""
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


def check() -> None:
    """Raises ImportError with one line when grpcio or protobuf is missing or too old."""
    need = "edgemon needs grpcio >= %d.%d and protobuf >= %d.%d" % (MIN_GRPCIO + MIN_PROTOBUF)
    try:
        import grpc
        import google.protobuf
    except ImportError as e:
        raise ImportError("%s: %s (Debian/Ubuntu: apt install python3-grpcio python3-protobuf;"
                          " or pip install grpcio protobuf)" % (need, e)) from None
    have_grpc = _parse(getattr(grpc, "__version__", "0"))
    have_pb = _parse(getattr(google.protobuf, "__version__", "0"))
    if have_grpc < MIN_GRPCIO or have_pb < MIN_PROTOBUF:
        raise ImportError("%s; this Python has grpcio %s and protobuf %s" %
                          (need, getattr(grpc, "__version__", "?"),
                           getattr(google.protobuf, "__version__", "?")))
