"""Memory of ``streamlearn serve`` under a flood of connections (issue 28: "memory stays bounded").

Starts a learning daemon (``--num-children``, ``--max-queue``), then for ``--seconds`` floods it: C client
threads, each connecting, sending ``--requests`` requests of ``--batch`` labelled lines (the next once the
last is answered), closing and connecting again; and H "hogs", each sending ``--hog-mib`` MiB without a
line break, again and again (the daemon cuts them off at its 1 MiB line limit). The daemon's RSS
(``/proc/PID/status`` VmRSS) is sampled every 50 ms until the clients are done (at most ``--grace``
seconds after the flood: clients beyond the listen backlog would wait on TCP's retransmissions); one line per
second is printed (RSS, examples answered, connections completed), then the start, peak and end RSS.

Run from the repository root: ``python -m bench.serve_memory [-c 256] [--hogs 8] [--seconds 20]``.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def examples(seed: int, n: int) -> bytes:
    rng = random.Random(seed)
    return b"".join(rng.choice((b"1", b"-1")) + b" |a " + b" ".join(
        b"f%d:%.3f" % (rng.randrange(1000), rng.uniform(-1, 1)) for _ in range(8)) + b"\n" for _ in range(n))


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-c", "--connections", type=int, default=256)
    ap.add_argument("--hogs", type=int, default=8)
    ap.add_argument("--hog-mib", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--num-children", type=int, default=4)
    ap.add_argument("--max-queue", type=int, default=4)
    ap.add_argument("--grace", type=float, default=10,
                    help="seconds after the flood to wait for the clients still waiting (TCP retransmissions)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        port_file = Path(tmp) / "port"
        proc = subprocess.Popen([sys.executable, "-m", "streamlearn", "serve", "--port", "0", "--foreground",
                                 "--port-file", str(port_file), "-b", "20", "--num-children", str(a.num_children),
                                 "--max-queue", str(a.max_queue)], stderr=subprocess.DEVNULL)
        try:
            while not (port_file.exists() and port_file.read_text().endswith("\n")):
                if proc.poll() is not None:
                    raise SystemExit("the daemon did not start")
                time.sleep(0.05)
            port = int(port_file.read_text())
            return flood(a, proc, port)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


def flood(a, proc, port: int) -> int:
    body = examples(1, a.batch)
    with socket.create_connection(("127.0.0.1", port)) as s:     # kernels loaded: the start RSS
        s.sendall(body)
        s.shutdown(socket.SHUT_WR)
        while s.recv(1 << 16):
            pass
    start = rss_mb(proc.pid)
    end_at = time.time() + a.seconds
    counts = {"examples": 0, "connections": 0, "cut": 0, "errors": 0}
    kinds: dict[str, int] = {}
    lock = threading.Lock()

    def client():
        while time.time() < end_at:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
                    for _ in range(a.requests):
                        s.sendall(body)
                        got = b""
                        while got.count(b"\n") < a.batch:
                            chunk = s.recv(1 << 16)
                            if not chunk:
                                raise ConnectionError("closed")
                            got += chunk
                        with lock:
                            counts["examples"] += a.batch
                with lock:
                    counts["connections"] += 1
            except OSError as exc:
                with lock:
                    counts["errors"] += 1
                    kinds[type(exc).__name__] = kinds.get(type(exc).__name__, 0) + 1

    def hog():
        chunk = b"7" * (1 << 20)
        while time.time() < end_at:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
                    for _ in range(a.hog_mib):
                        s.sendall(chunk)
            except OSError:
                with lock:
                    counts["cut"] += 1

    threads = [threading.Thread(target=client, daemon=True) for _ in range(a.connections)]
    threads += [threading.Thread(target=hog, daemon=True) for _ in range(a.hogs)]
    t0 = time.time()
    for t in threads:
        t.start()
    peak, samples, next_print = start, [], t0 + 1
    print(f"start RSS {start:.1f} MB; {a.connections} clients x {a.requests} requests x {a.batch} lines, "
          f"{a.hogs} hogs x {a.hog_mib} MiB without a line break; --num-children {a.num_children} "
          f"--max-queue {a.max_queue}")
    print(f"{'t (s)':>6} {'RSS (MB)':>9} {'examples':>10} {'connections':>12} {'hogs cut':>9}")
    while any(t.is_alive() for t in threads) and time.time() < end_at + a.grace:
        r = rss_mb(proc.pid)
        peak = max(peak, r)
        samples.append(r)
        if time.time() >= next_print:
            with lock:
                print(f"{time.time() - t0:6.1f} {r:9.1f} {counts['examples']:10d} {counts['connections']:12d} "
                      f"{counts['cut']:9d}", flush=True)
            next_print += 1
        time.sleep(0.05)
    end = rss_mb(proc.pid)
    alive = proc.poll() is None
    waiting = sum(t.is_alive() for t in threads)
    print(f"start {start:.1f} MB, peak {peak:.1f} MB (+{peak - start:.1f}), end {end:.1f} MB; "
          f"{counts['examples']} examples answered, {counts['connections']} connections completed, "
          f"{counts['cut']} hog connections cut off, {counts['errors']} client errors {kinds or ''}, {waiting} clients still waiting; daemon alive: {alive}")
    return 0 if alive else 1


if __name__ == "__main__":
    sys.exit(main())
