"""grpc and the generated edgemon.v1 modules (with protobuf), imported on
first use: a client made, a request built, an error mapped. ``import
edgemon`` imports none of them, so a script pays for them (most of the
package's import time) only once it talks to a daemon.

The first use of any of them checks the installed grpcio and protobuf
(:mod:`edgemon._versions`) before importing anything generated, so a too
old one fails with one line, not a traceback from deep inside protobuf."""
import importlib
from types import ModuleType
from typing import Any, Optional

from . import _versions

_checked = False


def load(name: str) -> ModuleType:
    """The module ``name`` (".v1.edgemon_pb2" is this package's), imported
    now if it was not, after the version check."""
    global _checked
    if not _checked:
        _versions.check()
        _checked = True
    return importlib.import_module(name, __package__)


class Module(object):
    """Stands for a module, imported on first use of one of its names:
    ``pb.QueryRequest``, ``grpc.RpcError`` (an ``except`` clause reads its
    class only when an exception reaches it)."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module = None  # type: Optional[ModuleType]

    def __getattr__(self, attr: str) -> Any:  # names the proxy itself lacks
        module = self._module
        if module is None:
            module = self._module = load(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return "<edgemon lazy module %s%s>" % (
            self._name, "" if self._module is not None else " (not imported yet)")


grpc = Module("grpc")
pb = Module(".v1.edgemon_pb2")
pb_grpc = Module(".v1.edgemon_pb2_grpc")
control_pb = Module(".v1.control_pb2")
control_pb_grpc = Module(".v1.control_pb2_grpc")
