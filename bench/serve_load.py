"""The load client of issue 28's serving benchmark: any server speaking VW's daemon protocol over TCP or
``POST /predict`` over HTTP.

* TCP (``tcp://host:port`` or ``host:port``): newline-delimited VW text examples, one prediction line back
  per example (VW's ``--daemon`` protocol).
* HTTP (``http://host:port/predict``): each request is ``POST`` with VW text lines as its body, the answer
  one prediction per line (``text/plain``). The client speaks HTTP/1.1 with keep-alive itself (no HTTP
  library), and reads ``Content-Length`` or chunked answers.

``run_load(target, lines, connections=C, batch=B, examples=N | seconds=S, mode=M)`` opens C connections,
each (``mode="threads"``, the default) a blocking socket in its own thread, or (``mode="asyncio"``) all on
one event loop over asyncio streams. Each connection sends requests of B lines in a closed loop (the next
request once the answer to the last is read) until N examples were sent in all or S seconds passed. It returns a ``LoadResult``: examples, requests, wall
time, examples per second, and every request's latency in nanoseconds (``time.perf_counter_ns`` from the
first byte written to the last answer line read, client-side), with the client's own CPU time per request
(its overhead; run it against the echo servers of ``bench/peers/echo.py`` for the client's ceiling).

``percentile(values, q)`` is the nearest-rank percentile (the smallest value with at least ``q`` of the
values at or below it), as the report gives p50 / p99 / p99.9.

Run from the repository root: ``python -m bench.serve_load TARGET FILE [-c 1 8 64] [--batch 1]
[--examples N | --seconds S] [--mode threads|asyncio]``; the whole comparison is ``python -m bench run serve``.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit


# --------------------------------------------------------------------------- figures


def percentile(values, q: float) -> float:
    """The nearest-rank percentile of ``values`` (0 < q <= 1): the ceil(q * n)-th smallest value."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    if not 0.0 < q <= 1.0:
        raise ValueError(f"percentile rank {q} is not in (0, 1]")
    rank = max(1, math.ceil(q * len(ordered) - 1e-9))
    return ordered[rank - 1]


@dataclass
class LoadResult:
    """One load run: what was sent and how long it took."""
    target: str
    protocol: str
    connections: int
    batch: int
    examples: int = 0
    requests: int = 0
    seconds: float = 0.0
    client_cpu_s: float = 0.0
    latencies_ns: list[int] = field(default_factory=list)
    answers: list[bytes] | None = None  # the answer lines, in order per connection (when collected)

    @property
    def rate(self) -> float:
        """Examples per second."""
        return self.examples / self.seconds if self.seconds > 0 else 0.0

    def latency_us(self, q: float) -> float:
        return percentile(self.latencies_ns, q) / 1e3

    @property
    def client_us_per_request(self) -> float:
        return 1e6 * self.client_cpu_s / self.requests if self.requests else 0.0

    def summary(self) -> str:
        lat = ""
        if self.latencies_ns:
            lat = (f", latency p50 {self.latency_us(0.5):.0f} us, p99 {self.latency_us(0.99):.0f} us, "
                   f"p99.9 {self.latency_us(0.999):.0f} us")
        return (f"{self.protocol} C={self.connections} batch={self.batch}: {self.examples:,} examples in "
                f"{self.seconds:.3f} s = {self.rate:,.0f} ex/s{lat}; client CPU "
                f"{self.client_us_per_request:.0f} us/request")


# --------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    protocol: str  # "tcp" or "http"
    host: str
    port: int
    path: str = "/predict"

    @classmethod
    def parse(cls, spec: str) -> "Target":
        if "://" not in spec:
            spec = "tcp://" + spec
        parts = urlsplit(spec)
        if parts.scheme not in ("tcp", "http") or not parts.hostname or not parts.port:
            raise ValueError(f"target {spec!r}: want host:port, tcp://host:port or http://host:port/path")
        return cls(parts.scheme, parts.hostname, parts.port, parts.path or "/predict")

    def request(self, payload: bytes) -> bytes:
        """The bytes that send ``payload`` (VW lines): as they are over TCP, a ``POST`` over HTTP."""
        if self.protocol != "http":
            return payload
        return (f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: text/plain\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload

    def __str__(self) -> str:
        tail = self.path if self.protocol == "http" else ""
        return f"{self.protocol}://{self.host}:{self.port}{tail}"


class ProtocolError(RuntimeError):
    pass


async def _read_lines(reader: asyncio.StreamReader, want: int, keep: list | None) -> None:
    """Read until ``want`` newline-terminated answer lines came (TCP)."""
    got, pending = 0, b""
    while got < want:
        chunk = await reader.read(1 << 16)
        if not chunk:
            raise ProtocolError(f"the server closed the connection after {got} of {want} answer lines")
        got += chunk.count(b"\n")
        if keep is not None:
            pending += chunk
    if got > want:
        raise ProtocolError(f"{got} answer lines for {want} examples")
    if keep is not None:
        keep.extend(pending.split(b"\n")[:-1])


async def _read_http(reader: asyncio.StreamReader) -> bytes:
    """One HTTP/1.1 response's body (Content-Length or chunked); a status other than 200 is an error."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or parts[1] != "200":
        raise ProtocolError(f"HTTP answer {status_line!r}")
    headers = {}
    for h in header_lines:
        if ":" in h:
            k, v = h.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        return await reader.readexactly(int(headers["content-length"]))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return body
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    raise ProtocolError("HTTP answer without Content-Length or chunked encoding")


def _requests_of(lines: list[bytes], batch: int) -> list[bytes]:
    """The request payloads: ``batch`` consecutive lines each, cycling through the file."""
    n = len(lines)
    count = n // batch if n >= batch else 1
    out = []
    for r in range(count):
        out.append(b"".join(lines[(r * batch + i) % n] for i in range(batch)))
    return out


async def _connection(target: Target, payloads: list[bytes], batch: int, offset: int, budget: dict,
                      deadline_ns: int | None, latencies: list[int], keep: list | None) -> tuple[int, int]:
    reader, writer = await asyncio.open_connection(target.host, target.port, limit=1 << 24)
    requests = examples = 0
    i = offset
    try:
        while True:
            if deadline_ns is not None:
                if time.perf_counter_ns() >= deadline_ns:
                    break
            else:
                if budget["left"] <= 0:
                    break
                budget["left"] -= batch
            payload = payloads[i % len(payloads)]
            i += 1
            data = target.request(payload)
            t0 = time.perf_counter_ns()
            writer.write(data)
            if target.protocol == "http":
                body = await _read_http(reader)
                t1 = time.perf_counter_ns()
                got = body.count(b"\n") + (1 if body and not body.endswith(b"\n") else 0)
                if got != batch:
                    raise ProtocolError(f"{got} answer lines for {batch} examples")
                if keep is not None:
                    keep.extend(body.rstrip(b"\n").split(b"\n"))
            else:
                await _read_lines(reader, batch, keep)
                t1 = time.perf_counter_ns()
            latencies.append(t1 - t0)
            requests += 1
            examples += batch
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, OSError):
            pass
    return requests, examples


async def _run(target: Target, lines: list[bytes], connections: int, batch: int, examples: int | None,
               seconds: float | None, collect: bool) -> LoadResult:
    payloads = _requests_of(lines, batch)
    budget = {"left": examples if examples is not None else 0}
    latencies: list[int] = []
    keeps = [[] if collect else None for _ in range(connections)]
    cpu0 = time.process_time()
    t0 = time.perf_counter_ns()
    deadline = t0 + int(seconds * 1e9) if seconds is not None else None
    step = max(1, len(payloads) // connections)
    done = await asyncio.gather(*(
        _connection(target, payloads, batch, c * step, budget, deadline, latencies, keeps[c])
        for c in range(connections)))
    t1 = time.perf_counter_ns()
    result = LoadResult(str(target), target.protocol, connections, batch,
                        examples=sum(e for _, e in done), requests=sum(r for r, _ in done),
                        seconds=(t1 - t0) / 1e9, client_cpu_s=time.process_time() - cpu0,
                        latencies_ns=latencies)
    if collect:
        result.answers = [a for k in keeps for a in k]
    return result


def _read_http_blocking(rfile) -> bytes:
    """``_read_http`` over a blocking socket's buffered file."""
    status_line = rfile.readline().decode("latin-1").rstrip("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or parts[1] != "200":
        raise ProtocolError(f"HTTP answer {status_line!r}")
    headers = {}
    while (h := rfile.readline()) not in (b"\r\n", b"\n", b""):
        k, _, v = h.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        body = rfile.read(int(headers["content-length"]))
        if len(body) != int(headers["content-length"]):
            raise ProtocolError("the server closed the connection in an answer")
        return body
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while (size := int(rfile.readline().split(b";")[0], 16)) != 0:
            body += rfile.read(size)
            rfile.readline()
        rfile.readline()
        return body
    raise ProtocolError("HTTP answer without Content-Length or chunked encoding")


def _thread_connection(target: Target, payloads: list[bytes], batch: int, offset: int, budget: dict,
                       clock: dict, latencies: list[int], keep: list | None, start, out: list,
                       slot: int) -> None:
    """One connection on a blocking socket in its own thread (``mode="threads"``)."""
    import socket
    requests = examples = 0
    try:
        sock = socket.create_connection((target.host, target.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        rfile = sock.makefile("rb", buffering=1 << 16)
        own: list[int] = []
        i = offset
        start.wait()
        deadline_ns = clock["deadline"]
        while True:
            if deadline_ns is not None:
                if time.perf_counter_ns() >= deadline_ns:
                    break
            else:
                with budget["lock"]:
                    if budget["left"] <= 0:
                        break
                    budget["left"] -= batch
            payload = payloads[i % len(payloads)]
            i += 1
            payload = target.request(payload)
            t0 = time.perf_counter_ns()
            sock.sendall(payload)
            if target.protocol == "http":
                body = _read_http_blocking(rfile)
                t1 = time.perf_counter_ns()
                answers = body.rstrip(b"\n").split(b"\n") if body else []
                if len(answers) != batch:
                    raise ProtocolError(f"{len(answers)} answer lines for {batch} examples")
            else:
                answers = []
                for _ in range(batch):
                    line = rfile.readline()
                    if not line.endswith(b"\n"):
                        raise ProtocolError(f"the server closed the connection after {len(answers)} of "
                                            f"{batch} answer lines")
                    answers.append(line[:-1])
                t1 = time.perf_counter_ns()
            own.append(t1 - t0)
            if keep is not None:
                keep.extend(answers)
            requests += 1
            examples += batch
        latencies.extend(own)
        rfile.close()
        sock.close()
        out[slot] = (requests, examples)
    except BaseException as e:  # noqa: BLE001 -- handed to the caller
        out[slot] = e
        start.abort()


def _run_threads(target: Target, lines: list[bytes], connections: int, batch: int, examples: int | None,
                 seconds: float | None, collect: bool) -> LoadResult:
    import threading
    payloads = _requests_of(lines, batch)
    budget = {"left": examples if examples is not None else 0, "lock": threading.Lock()}
    latencies: list[int] = []
    keeps = [[] if collect else None for _ in range(connections)]
    out: list = [None] * connections
    clock: dict = {}

    def go() -> None:  # every connection open: the clock starts
        clock["cpu0"], clock["t0"] = time.process_time(), time.perf_counter_ns()
        clock["deadline"] = clock["t0"] + int(seconds * 1e9) if seconds is not None else None

    start = threading.Barrier(connections + 1, action=go)
    step = max(1, len(payloads) // connections)
    threads = [threading.Thread(target=_thread_connection, daemon=True,
                                args=(target, payloads, batch, c * step, budget, clock, latencies, keeps[c],
                                      start, out, c)) for c in range(connections)]
    for th in threads:
        th.start()
    try:
        start.wait()
    except threading.BrokenBarrierError:
        pass
    for th in threads:
        th.join()
    t1 = time.perf_counter_ns()
    errors = [o for o in out if isinstance(o, BaseException)]
    if errors:  # the first cause, not the broken barrier it left the others
        raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0])
    result = LoadResult(str(target), target.protocol, connections, batch,
                        examples=sum(e for _, e in out), requests=sum(r for r, _ in out),
                        seconds=(t1 - clock["t0"]) / 1e9, client_cpu_s=time.process_time() - clock["cpu0"],
                        latencies_ns=latencies)
    if collect:
        result.answers = [a for k in keeps for a in k]
    return result


def read_examples(path: Path, limit: int | None = None) -> list[bytes]:
    """The non-empty lines of a VW text file, each ending in a newline."""
    out = []
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                out.append(line if line.endswith(b"\n") else line + b"\n")
                if limit is not None and len(out) >= limit:
                    break
    if not out:
        raise ValueError(f"{path}: no examples")
    return out


def run_load(target: str | Target, lines: list[bytes], connections: int = 1, batch: int = 1,
             examples: int | None = None, seconds: float | None = None, warmup: int = 0,
             collect: bool = False, mode: str = "threads") -> LoadResult:
    """One load run (see the module's doc). ``examples`` is rounded up to whole requests; ``warmup``
    requests are sent first on one connection, untimed. ``mode``: ``asyncio`` (one event loop, streams)
    or ``threads`` (a blocking socket per connection, each in its own thread)."""
    if (examples is None) == (seconds is None):
        raise ValueError("give either examples or seconds")
    if connections < 1 or batch < 1:
        raise ValueError("connections and batch must be at least 1")
    t = target if isinstance(target, Target) else Target.parse(target)
    if mode == "threads":
        if warmup:
            _run_threads(t, lines, 1, batch, warmup * batch, None, False)
        return _run_threads(t, lines, connections, batch, examples, seconds, collect)
    if mode != "asyncio":
        raise ValueError(f"mode {mode!r}: asyncio or threads")
    if warmup:
        asyncio.run(_run(t, lines, 1, batch, warmup * batch, None, False))
    return asyncio.run(_run(t, lines, connections, batch, examples, seconds, collect))


def stream(target: str | Target, data: bytes, connections: int = 1) -> LoadResult:
    """Stream ``data`` (complete VW text lines) through each of ``connections`` TCP connections at once, as
    ``cat FILE | nc host port`` does with VW's daemon: a thread writes the whole of it and then half-closes,
    another reads the answers as they come; the clock runs from the first byte written to the last answer
    read on every connection. The answers are counted (one line per example) and the connections' answers
    checked equal. Examples per second over all connections; no per-request latency (there is no request)."""
    import socket
    import threading
    t = target if isinstance(target, Target) else Target.parse(target)
    if t.protocol != "tcp":
        raise ValueError("stream: a TCP target")
    want = data.count(b"\n")
    socks = []
    for _ in range(connections):
        sock = socket.create_connection((t.host, t.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(sock)
    got = [0] * connections
    digests: list = [None] * connections
    errors: list = []

    def send(sock) -> None:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError as e:
            errors.append(e)

    def receive(k: int, sock) -> None:
        import hashlib
        h, n = hashlib.blake2b(), 0
        while chunk := sock.recv(1 << 20):
            n += chunk.count(b"\n")
            h.update(chunk)
        got[k], digests[k] = n, h.hexdigest()
        sock.close()

    cpu0, t0 = time.process_time(), time.perf_counter_ns()
    threads = [threading.Thread(target=send, args=(s,)) for s in socks]
    threads += [threading.Thread(target=receive, args=(k, s)) for k, s in enumerate(socks)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    t1 = time.perf_counter_ns()
    if errors:
        raise errors[0]
    if got != [want] * connections:
        raise ProtocolError(f"answer lines {got} for {want} examples a connection")
    if len(set(digests)) != 1:
        raise ProtocolError("the connections' answers to the same lines differ")
    return LoadResult(str(t), "tcp", connections, want, examples=want * connections, requests=connections,
                      seconds=(t1 - t0) / 1e9, client_cpu_s=time.process_time() - cpu0)


def wait_for_port(host: str, port: int, timeout: float = 30.0, alive=None) -> None:
    """Block until ``host:port`` accepts a TCP connection; ``alive()`` false (a server that died) or
    ``timeout`` seconds raise."""
    import socket
    end = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            if alive is not None and not alive():
                raise RuntimeError(f"the server meant for {host}:{port} exited")
            if time.monotonic() > end:
                raise TimeoutError(f"nothing listens on {host}:{port} after {timeout:.0f} s")
            time.sleep(0.05)


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.serve_load", description=__doc__.split("\n\n")[0])
    ap.add_argument("target", help="host:port or tcp://host:port (VW's daemon protocol), http://host:port/predict")
    ap.add_argument("data", type=Path, help="VW text examples (cycled)")
    ap.add_argument("-c", "--connections", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument("--batch", type=int, default=1, help="lines per request")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--examples", type=int)
    group.add_argument("--seconds", type=float)
    ap.add_argument("--warmup", type=int, default=100, help="untimed requests first")
    ap.add_argument("--mode", choices=("threads", "asyncio"), default="threads")
    args = ap.parse_args(argv)
    lines = read_examples(args.data)
    seconds = args.seconds if args.examples is None and args.seconds is not None else None
    examples = args.examples if seconds is None else None
    if examples is None and seconds is None:
        seconds = 5.0
    for c in args.connections:
        print(run_load(args.target, lines, c, args.batch, examples, seconds, warmup=args.warmup,
                       mode=args.mode).summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
