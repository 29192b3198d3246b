#!/usr/bin/env python3
"""TCP transports of edgemond: a non-loopback listener without TLS is refused
at start-up with one clear line (exit 2); with a certificate and key it
serves TLS, and a plain-text client is turned away. Traffic goes to
127.0.0.1 only.

  tls_test.py --edgemond B --protoc P --plugin G --proto-dir proto --fixtures F
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import interop_test  # stub generation, shared with the interop test
from harness import free_port  # noqa: E402 (shared by the e2e scripts)


def main():
    ap = argparse.ArgumentParser()
    for a in ("--edgemond", "--protoc", "--plugin", "--proto-dir", "--fixtures"):
        ap.add_argument(a, required=True)
    ap.add_argument("--edgemon", help="the edgemon command, to check --token-file")
    args = ap.parse_args()
    interop_test.ARGS = args
    passed, failures = 0, []

    def check(cond, what):
        nonlocal passed
        if cond:
            passed += 1
        else:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="edgemon-tls-") as tmp:
        m = interop_test.generate_stubs(os.path.join(tmp, "stubs"))
        import grpc
        pb, rpc = m["edgemon_pb2"], m["edgemon_pb2_grpc"]
        root = os.path.join(args.fixtures, "agx-orin")
        port = free_port()
        base = [args.edgemond, "--root", root, "--db", os.path.join(tmp, "e.db"),
                "--listen", "unix:" + os.path.join(tmp, "api.sock")]

        # 1. Plain TCP on every interface: refused before anything starts.
        cfg = os.path.join(tmp, "plain.toml")
        with open(cfg, "w") as f:
            f.write(f'[daemon]\ntcp_listen = "0.0.0.0:{port}"\n')
        r = subprocess.run(base + ["--config", cfg], capture_output=True, text=True, timeout=30)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2, f"plain non-loopback TCP: exit {r.returncode}, want 2")
        check(len(lines) == 1 and "daemon.tcp_listen" in lines[0] and "TLS" in lines[0].upper(),
              f"plain non-loopback TCP: message {lines}")
        check(not os.path.exists(os.path.join(tmp, "e.db")), "a refused start wrote the store")

        # 2. The same address with a certificate and key: TLS.
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                        "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                       check=True, capture_output=True)
        cfg = os.path.join(tmp, "tls.toml")
        with open(cfg, "w") as f:
            f.write(f'[daemon]\ntcp_listen = "0.0.0.0:{port}"\n'
                    f'tls_cert = "{cert}"\ntls_key = "{key}"\n')
        log = open(os.path.join(tmp, "tls.log"), "w")
        d = subprocess.Popen(base + ["--config", cfg], stdout=subprocess.DEVNULL, stderr=log)
        try:
            with open(cert, "rb") as f:
                creds = grpc.ssl_channel_credentials(root_certificates=f.read())
            secure = grpc.secure_channel(f"127.0.0.1:{port}", creds)
            info = None
            deadline = time.time() + 20
            while info is None and time.time() < deadline:
                try:
                    info = rpc.TelemetryStub(secure).GetDeviceInfo(pb.GetDeviceInfoRequest(),
                                                                   timeout=2)
                except grpc.RpcError:
                    time.sleep(0.2)
            check(info is not None and len(info.channels) > 100,
                  "TLS client could not read the device info")
            plain = grpc.insecure_channel(f"127.0.0.1:{port}")
            try:
                rpc.TelemetryStub(plain).GetDeviceInfo(pb.GetDeviceInfoRequest(), timeout=3)
                check(False, "a plain-text client was served on the TLS port")
            except grpc.RpcError as e:
                check(e.code() in (grpc.StatusCode.UNAVAILABLE,
                                   grpc.StatusCode.DEADLINE_EXCEEDED),
                      f"plain-text client: unexpected {e.code()}")
            if args.edgemon:
                # The edgemon command names the remedy: --tls/--tls-ca for a
                # TLS listener reached in plain text or with untrusted roots.
                for flags, want in (([], "if the daemon listens with TLS, add --tls"),
                                    (["--tls"], "the TLS handshake failed")):
                    r = subprocess.run([args.edgemon, "--connect", f"127.0.0.1:{port}", *flags,
                                        "now"], capture_output=True, text=True, timeout=30)
                    lines = r.stderr.strip().splitlines()
                    check(r.returncode == 69 and len(lines) == 1 and want in lines[0]
                          and "--tls-ca" in lines[0],
                          f"edgemon {flags} to a TLS port: exit {r.returncode} {r.stderr!r}")
            secure.close()
            plain.close()
        finally:
            d.terminate()
            rc = d.wait(timeout=30)
            log.close()
        check(rc == 0, f"edgemond with TLS exited {rc}")

        # 3. A bearer token on loopback TCP: calls without it or with a wrong
        # one get UNAUTHENTICATED; the unix socket needs none.
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write("s3cret-token-0123456789\n")
        os.chmod(token, 0o644)
        port = free_port()
        cfg = os.path.join(tmp, "token.toml")
        with open(cfg, "w") as f:
            f.write(f'[daemon]\ntcp_listen = "127.0.0.1:{port}"\ntcp_token_file = "{token}"\n')
        r = subprocess.run(base + ["--config", cfg], capture_output=True, text=True, timeout=30)
        check(r.returncode == 2 and f"{token}: is open to group or others" in r.stderr,
              f"world-readable token file: exit {r.returncode}, {r.stderr.strip()}")
        os.chmod(token, 0o600)
        log = open(os.path.join(tmp, "token.log"), "w")
        d = subprocess.Popen(base + ["--config", cfg], stdout=subprocess.DEVNULL, stderr=log)
        try:
            chan = grpc.insecure_channel(f"127.0.0.1:{port}")
            stub = rpc.TelemetryStub(chan)
            good = [("authorization", "Bearer s3cret-token-0123456789")]
            info = None
            deadline = time.time() + 20
            while info is None and time.time() < deadline:
                try:
                    info = stub.GetDeviceInfo(pb.GetDeviceInfoRequest(), timeout=2, metadata=good)
                except grpc.RpcError:
                    time.sleep(0.2)
            check(info is not None and len(info.channels) > 100, "the right token was refused")
            for what, md in (("no token", None),
                             ("a wrong token", [("authorization", "Bearer s3cret-token-012345678X")]),
                             ("a token prefix", [("authorization", "Bearer s3cret")])):
                try:
                    stub.GetLatest(pb.GetLatestRequest(), timeout=3, metadata=md)
                    check(False, f"a call with {what} was served")
                except grpc.RpcError as e:
                    check(e.code() == grpc.StatusCode.UNAUTHENTICATED,
                          f"{what}: {e.code()}, want UNAUTHENTICATED")
            try:
                frames = stub.Watch(pb.WatchRequest(), timeout=3)
                next(iter(frames))
                check(False, "a Watch stream without the token was served")
            except grpc.RpcError as e:
                check(e.code() == grpc.StatusCode.UNAUTHENTICATED, f"Watch without token: {e.code()}")
            local = grpc.insecure_channel("unix:" + os.path.join(tmp, "api.sock"))
            latest = rpc.TelemetryStub(local).GetLatest(pb.GetLatestRequest(), timeout=5)
            check(len(latest.ids) > 100, "the unix socket should not need the token")
            if args.edgemon:
                base_cli = [args.edgemon, "--connect", f"127.0.0.1:{port}"]
                r = subprocess.run(base_cli + ["--token-file", token, "sensors", "--json"],
                                   capture_output=True, text=True, timeout=30)
                check(r.returncode == 0 and "VDD_CPU_CV" in r.stdout,
                      f"edgemon --token-file: exit {r.returncode} {r.stderr.strip()}")
                r = subprocess.run(base_cli + ["sensors"], capture_output=True, text=True,
                                   timeout=30)
                check(r.returncode == 77 and "wants a bearer token" in r.stderr
                      and "--token-file" in r.stderr and r.stderr.count("\n") == 1,
                      f"edgemon without the token: exit {r.returncode} {r.stderr.strip()}")
                wrong = os.path.join(tmp, "wrong-token")
                with open(wrong, "w") as f:
                    f.write("s3cret-token-012345678X\n")
                os.chmod(wrong, 0o600)  # a secret file: the caller's, mode 0600
                r = subprocess.run(base_cli + ["--token-file", wrong, "sensors"],
                                   capture_output=True, text=True, timeout=30)
                check(r.returncode == 77 and "refused the bearer token" in r.stderr
                      and "--token-file" in r.stderr,
                      f"edgemon with a wrong token: exit {r.returncode} {r.stderr.strip()}")
            chan.close()
            local.close()
        finally:
            d.terminate()
            rc = d.wait(timeout=30)
            log.close()
        check(rc == 0, f"edgemond with a token exited {rc}")
    for f in failures:
        print("FAIL", f)
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
