"""Pieces shared by the end-to-end test scripts: a check runner that reports
every failure and goes on, `expect`, and a free loopback port."""
import socket
import traceback


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = []

    def run(self, name, fn, *args):
        try:
            fn(*args)
            self.passed += 1
            print(f"PASS {name}", flush=True)
        except Exception as e:  # noqa: BLE001 - report every failure and go on
            self.failed.append(name)
            # grpc.RpcError carries its message in details()
            detail = e.details() if hasattr(e, "details") and callable(e.details) else ""
            print(f"FAIL {name}: {type(e).__name__}: {e} {detail}".rstrip(), flush=True)
            if not isinstance(e, AssertionError):
                traceback.print_exc(limit=3)


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
