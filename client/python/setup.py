"""pip install client/python: the edgemon and jtop packages.

The gRPC stubs (edgemon/v1/edgemon_pb2*.py) are generated while building,
from proto/edgemon/v1/edgemon.proto of this source tree (or $EDGEMON_PROTO_DIR),
with protoc and grpc_python_plugin (Debian: protobuf-compiler,
protobuf-compiler-grpc) or, failing those, pip's grpcio-tools. Offline, in a
venv made with --system-site-packages (Debian's python3-grpcio and
python3-protobuf):

    python3 -m venv --system-site-packages venv
    venv/bin/pip install --no-index client/python
"""
import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def proto_root():
    for d in (os.environ.get("EDGEMON_PROTO_DIR"), os.path.join(HERE, "..", "..", "proto")):
        if d and os.path.isfile(os.path.join(d, "edgemon", "v1", "edgemon.proto")):
            return os.path.abspath(d)
    return None


def generate(out_dir):
    root = proto_root()
    if root is None:
        if os.path.isfile(os.path.join(HERE, "edgemon", "v1", "edgemon_pb2.py")):
            return  # a source tree that carries generated stubs
        sys.exit("edgemon: proto/edgemon/v1/edgemon.proto not found: build from the edgemon "
                 "source tree or set EDGEMON_PROTO_DIR")
    proto = os.path.join(root, "edgemon", "v1", "edgemon.proto")
    protoc, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
    if protoc and plugin:
        cmd = [protoc, "-I", root, "--python_out=" + out_dir, "--grpc_out=" + out_dir,
               "--plugin=protoc-gen-grpc=" + plugin, proto]
    else:
        try:
            import grpc_tools  # noqa: F401
        except ImportError:
            sys.exit("edgemon: generating the gRPC stubs needs protoc and grpc_python_plugin "
                     "(apt install protobuf-compiler protobuf-compiler-grpc) or "
                     "pip install grpcio-tools")
        cmd = [sys.executable, "-m", "grpc_tools.protoc", "-I", root,
               "--python_out=" + out_dir, "--grpc_python_out=" + out_dir, proto]
    subprocess.check_call(cmd)


def copy_report(out_dir):
    """edgemon/report.html (Result.save()'s report) from client/report/ of
    the source tree (this one, or the one holding $EDGEMON_PROTO_DIR), or
    the copy a source tree may carry in the package."""
    tops = [os.path.join(HERE, "..", "..")]
    if proto_root() is not None:
        tops.append(os.path.dirname(proto_root()))
    candidates = [os.path.join(t, "client", "report", "report.html") for t in tops]
    for src in candidates + [os.path.join(HERE, "edgemon", "report.html")]:
        if os.path.isfile(src):
            shutil.copyfile(src, os.path.join(out_dir, "edgemon", "report.html"))
            return
    sys.exit("edgemon: client/report/report.html not found: build from the edgemon source tree "
             "or set EDGEMON_PROTO_DIR to its proto/")


class BuildWithStubs(build_py):
    """build_py that also writes edgemon/v1/edgemon_pb2.py and _pb2_grpc.py,
    and edgemon/report.html."""

    def run(self):
        build_py.run(self)
        generate(self.build_lib)
        copy_report(self.build_lib)


setup(
    name="edgemon",
    version="0.1.0",
    description="Python client of edgemond (telemetry, energy windows) and a jtop-compatible API",
    packages=["edgemon", "edgemon.v1", "jtop"],
    python_requires=">=3.6",
    install_requires=["grpcio>=1.24", "protobuf>=3.20"],
    cmdclass={"build_py": BuildWithStubs},
)
