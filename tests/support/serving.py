"""What the serving tests share (tests/serve): a foreground ``streamlearn serve`` process (``Daemon``);
tests/serve/conftest.py's ``daemons`` fixture stops those a test leaves running."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the daemons' environment: this checkout first, no test mode unless a test asks for it
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
ENV.pop("STREAMLEARN_SERVE_ORDER_LOG", None)
ENV.pop("STREAMLEARN_SERVE_KEEP_SNAPSHOTS", None)


def read_all(s: socket.socket) -> bytes:
    data = b""
    while chunk := s.recv(1 << 16):
        data += chunk
    return data


class Daemon:
    """A foreground ``streamlearn serve`` on a free port (its port file read); its stderr in a file
    of ``cwd``, said when it does not start."""

    def __init__(self, cwd: Path, *args, env=None):
        self.cwd = cwd
        stamp = time.monotonic_ns()
        port_file, self.stderr_path = cwd / f"port-{stamp}", cwd / f"stderr-{stamp}"
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "streamlearn", "serve", "--port", "0", "--foreground",
                                          "--port-file", str(port_file), *map(str, args)], cwd=cwd,
                                         env=dict(ENV, **(env or {})), stderr=err)
        deadline = time.time() + 240
        while not (port_file.exists() and port_file.read_text().endswith("\n")):
            if self.proc.poll() is not None or time.time() > deadline:
                raise AssertionError(f"the daemon did not start: {self.stderr_path.read_text()}")
            time.sleep(0.02)
        self.port = int(port_file.read_text())

    def connect(self, timeout: float = 60) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def send(self, lines) -> list[bytes]:
        """One connection: the lines, then every answer line until the daemon closes it."""
        with self.connect() as s:
            s.sendall(b"".join(x + b"\n" for x in lines))
            s.shutdown(socket.SHUT_WR)
            return read_all(s).splitlines()

    def rss_kb(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

    def stop(self, sig=signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(60)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(port: int, method: str = "GET", path: str = "/healthz", body: bytes | None = None,
              seconds: float = 60) -> None:
    """Until the daemon's HTTP endpoint on ``port`` answers ``method path`` (with ``body``) with 200."""
    import http.client
    deadline = time.time() + seconds
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request(method, path, body=body)
            assert c.getresponse().status == 200
            c.close()
            return
        except OSError:
            assert time.time() < deadline, "the HTTP endpoint did not start"
            time.sleep(0.1)
