"""Serving under load (issue 28): streamlearn's daemon over TCP and HTTP against its peers.

Every server gets the same VW text examples from the load client (``bench/serve_load.py``: a blocking
socket per connection in its own thread, or asyncio streams with ``--client asyncio``; a closed loop per
connection) with 1, 8 and 64 concurrent connections, single-example requests
(examples per second; p50 / p99 / p99.9 latency per request, client-side) and requests of ``--batch``
lines (throughput). The servers, each in its own process started for the measurement:

* the echo server of each protocol (``bench/peers/echo.py``): the client's ceiling, and the client's own
  CPU time per request (its overhead);
* scikit-learn's ``SGDClassifier`` behind aiohttp (``bench/peers/sgd_http.py``), trained on the same
  training file with the same ``-b``;
* ``streamlearn serve`` (TCP: ``--serve-tcp``, HTTP: ``--serve-http``, command templates with ``{port}``
  and ``{model}``), with the model ``streamlearn train`` wrote from the training file; when the command is
  not there (``streamlearn serve --help`` fails), its rows say so and the same command fills them later.

Also ``streamlearn predict`` reading the request file from a pipe (examples per second over the wall time,
and without the start-up of a 1-line run): the upper bound of one process.

Usage: ``python -m bench run serve [--quick] [--seconds S] [--lines N] [--requests N] [-b B]
[--connections 1 8 64] [--batch 100] [--out bench/RESULTS.md]`` (``make bench-serve``; with ``--out`` the
results go between ``<!-- issue28_serve:start -->`` and ``<!-- issue28_serve:end -->``). The HTTP servers
need aiohttp (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.data import DEFAULT_SEED, ensure_data
from bench.harness import REPO, Case, Context, Section, machine_facts, say, shared, version

SECTION = Section("issue28_serve")
#: the streaming runs' connections (each streams 1/C of the lines)
STREAM_CONNECTIONS = (1, 2)

# --foreground: the server stays the process started (it forks to the background otherwise); --num-children 64:
# as many connections served at once as the most the load opens (10 by default: the rest would queue)
SERVE_TCP = "{python} -m streamlearn serve --foreground --num-children 64 --port {port} -i {model} -t --quiet"
SERVE_HTTP = ("{python} -m streamlearn serve --foreground --num-children 64 --port 0 --http-port {port} "
              "-i {model} -t --quiet")


def arguments(ap: argparse.ArgumentParser) -> None:
    shared(ap, "quick", help="1 s per run, 20,000 training lines")
    shared(ap, "lines", default=200_000, help="training lines (the benchmark stream)")
    ap.add_argument("--requests", type=int, default=50_000, help="lines of the request file (another seed)")
    ap.add_argument("-b", "--bits", type=int, default=18)
    ap.add_argument("--seconds", type=float, default=3.0, help="per load run")
    ap.add_argument("--connections", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument("--batch", type=int, default=100, help="lines per request of the throughput runs")
    ap.add_argument("--client", choices=("threads", "asyncio"), default="threads",
                    help="the load client's mode: a blocking socket per connection in its own thread, or asyncio")
    ap.add_argument("--pipe-runs", type=int, default=5, help="predict runs, each followed by the streaming runs")
    ap.add_argument("--pipe-copies", type=int, default=20, help="the request file this many times down the pipe")
    ap.add_argument("--serve-tcp", default=SERVE_TCP, help="streamlearn's TCP daemon (template)")
    ap.add_argument("--serve-http", default=SERVE_HTTP, help="streamlearn's HTTP endpoint (template)")
    shared(ap, "out")


def have(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def serve_available(argv: list[str]) -> bool:
    """The server command (``argv``, ``{port}`` still in it) answers ``--help``."""
    r = subprocess.run([a.replace("{port}", "0") for a in argv] + ["--help"], cwd=REPO, capture_output=True)
    return r.returncode == 0


def pipe_rate(model: Path, data: Path, lines: int, runs: int, copies: int, between=None) -> dict:
    """``streamlearn predict`` reading ``copies`` times ``data`` from a pipe (``cat``): wall times, and a
    1-line run's (start-up). ``between()``: called after each run (the other tool's run, alternated)."""
    cmd = [sys.executable, "-m", "streamlearn", "predict", "-i", str(model), "--quiet", "-p", "/dev/null"]

    def wall(payload_path: Path | None, payload: bytes | None = None) -> float:
        t0 = time.perf_counter()
        if payload_path is not None:
            cat = subprocess.Popen(["cat", *[str(payload_path)] * copies], stdout=subprocess.PIPE, cwd=REPO)
            subprocess.run(cmd, stdin=cat.stdout, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
            cat.stdout.close()
            cat.wait()
        else:
            subprocess.run(cmd, input=payload, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0

    first = REPO / data
    one_line = first.open("rb").readline()
    wall(None, one_line)  # warm: kernels loaded from the cache
    full, start = [], []
    if between is not None:
        between()       # the other tool's warm-up
    for _ in range(runs):
        full.append(wall(first))
        start.append(wall(None, one_line))
        if between is not None:
            between()
    fast, s = min(full), statistics.median(start)
    total = lines * copies
    return {"cmd": f"cat {data} (x{copies}) | " + shlex.join(["python", *cmd[1:]]), "walls": full,
            "lines": total, "startup": s, "rate": total / fast,
            "rate_steady": total / (fast - s) if fast > 2 * s else None}


def predict_lines(model: Path, lines: list[bytes]) -> list[bytes]:
    """``streamlearn predict``'s answer lines to ``lines`` (what the daemon must answer)."""
    r = subprocess.run([sys.executable, "-m", "streamlearn", "predict", "-i", str(model), "--quiet"],
                       input=b"".join(lines), cwd=REPO, capture_output=True, check=True)
    return r.stdout.splitlines()


class Server:
    """A server process on a free port, stopped on exit."""

    def __init__(self, name: str, protocol: str, argv: list[str]):
        from bench.serve_load import free_port
        self.name, self.protocol, self.port = name, protocol, free_port()
        self.argv = [a.replace("{port}", str(self.port)) for a in argv]
        self.proc = None

    @property
    def target(self) -> str:
        return (f"http://127.0.0.1:{self.port}/predict" if self.protocol == "http"
                else f"tcp://127.0.0.1:{self.port}")

    def __enter__(self) -> "Server":
        from bench.serve_load import wait_for_port
        self.proc = subprocess.Popen(self.argv, cwd=REPO, stdout=subprocess.DEVNULL)
        wait_for_port("127.0.0.1", self.port, timeout=120, alive=lambda: self.proc.poll() is None)
        return self

    def __exit__(self, *exc) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def probe(server: Server, lines: list[bytes], expected: list[bytes] | None) -> str:
    """The answers to the first lines, one request of 100 and one line a request: one per line, each a
    number (and the line itself from an echo server; ``expected``, ``predict``'s lines, when given)."""
    from bench.serve_load import run_load
    sample = lines[:100]
    for batch in (len(sample), 1):
        got = run_load(server.target, sample, connections=1, batch=batch, examples=len(sample), collect=True,
                       mode="threads").answers
        if server.name == "echo":
            want = [x.rstrip(b"\n") for x in sample]
        elif expected is not None:
            want = expected[:len(sample)]
        else:
            want = None
        if want is not None and got != want:
            bad = next(i for i, (g, w) in enumerate(zip(got + [b""] * len(want), want)) if g != w)
            raise RuntimeError(f"answer {bad + 1} is {got[bad] if bad < len(got) else None!r}, not {want[bad]!r}")
        for a in got:
            try:
                float(a.split()[0])
            except (ValueError, IndexError):
                raise RuntimeError(f"answer {a!r} is not a prediction") from None
    if server.name == "echo":
        return "the lines themselves"
    return "`predict`'s lines" if expected is not None else "numbers, one per line"


def measure(server: Server, lines: list[bytes], args: argparse.Namespace, seconds: float) -> list:
    from bench.serve_load import run_load
    rows = []
    for batch in (1, args.batch):
        for c in args.connections:
            r = run_load(server.target, lines, connections=c, batch=batch, seconds=seconds, warmup=20,
                         mode=args.client)
            say(f"{server.name}: {r.summary()}")
            rows.append(r)
    return rows


def argv_of(template: str, fill: dict) -> list[str]:
    """A server command template's words, its {python} and {model} filled."""
    out = []
    for a in shlex.split(template):
        for k, v in fill.items():
            a = a.replace(k, v)
        out.append(a)
    return out


def us(x: float) -> str:
    return f"{x:,.0f}"


def run(args: argparse.Namespace, ctx: Context) -> int:
    from bench.serve_load import read_examples
    seconds = min(1.0, args.seconds) if args.quick else args.seconds
    n_train = 20_000 if args.quick else args.lines
    train_path, _ = ensure_data(n_train, DEFAULT_SEED)
    req_path, _ = ensure_data(args.requests, DEFAULT_SEED + 1)
    model = REPO / "bench" / "data" / f"serve-{n_train}-b{args.bits}.model"
    python = sys.executable
    train_cmd = [python, "-m", "streamlearn", "train", "-d", str(train_path), "-b", str(args.bits),
                 "--loss", "logistic", "--quiet", "-f", str(model.relative_to(REPO))]
    subprocess.run(train_cmd, cwd=REPO, check=True)
    lines = read_examples(REPO / req_path)
    facts_before = machine_facts()
    fill = {"{python}": python, "{model}": str(model.relative_to(REPO))}
    serve = serve_available(argv_of(args.serve_tcp, fill))
    streams: dict[int, list] = {c: [] for c in STREAM_CONNECTIONS}
    if serve:
        # streaming through the daemon (``cat FILE | nc``), alternated with predict over the pipe
        payload = (REPO / req_path).read_bytes() * args.pipe_copies
        with Server("streamlearn serve", "tcp", argv_of(args.serve_tcp, fill)) as server:
            def one_round():
                from bench.serve_load import stream
                for c in STREAM_CONNECTIONS:
                    r = stream(server.target, payload[:len(payload) // c], c) if c > 1 else stream(server.target, payload)
                    streams[c].append(r)
            pipe = pipe_rate(model.relative_to(REPO), req_path, len(lines), args.pipe_runs, args.pipe_copies,
                             between=one_round)
        for c in STREAM_CONNECTIONS:
            streams[c] = streams[c][1:]     # the first round warmed up
    else:
        pipe = pipe_rate(model.relative_to(REPO), req_path, len(lines), args.pipe_runs, args.pipe_copies)
    say(f"predict over a pipe: {pipe['rate']:,.0f} ex/s")

    servers = [("echo", "tcp", [python, "-m", "bench.peers.echo", "--protocol", "tcp", "--port", "{port}"])]
    missing: list[str] = []
    http_ok = have("aiohttp")
    if http_ok:
        servers.append(("echo", "http", [python, "-m", "bench.peers.echo", "--protocol", "http", "--port", "{port}"]))
        if have("sklearn"):
            servers.append(("SGDClassifier (aiohttp)", "http",
                            [python, "-m", "bench.peers.sgd_http", "--train", str(train_path), "-b",
                             str(args.bits), "--port", "{port}"]))
        else:
            missing.append("SGDClassifier: scikit-learn is not installed")
    else:
        missing.append("the HTTP servers: aiohttp is not installed (`pip install -e '.[bench]'`)")
    if serve:
        servers.append(("streamlearn serve", "tcp", argv_of(args.serve_tcp, fill)))
        if http_ok:
            servers.append(("streamlearn serve", "http", argv_of(args.serve_http, fill)))
    else:
        missing.append("streamlearn serve: its command with `--help` fails on this commit (the daemon is "
                       "not there yet); its rows are filled by rerunning this command once it is")
    results: dict[tuple[str, str], list] = {}
    commands, checked = {}, {}
    expected = predict_lines(model.relative_to(REPO), lines[:100])
    for name, protocol, argv in servers:
        commands[(name, protocol)] = " ".join("python" if a == python else a for a in argv)
        try:
            with Server(name, protocol, argv) as server:
                checked[(name, protocol)] = probe(server, lines, expected if name == "streamlearn serve" else None)
                results[(name, protocol)] = measure(server, lines, args, seconds)
        except (RuntimeError, TimeoutError, OSError) as e:
            missing.append(f"{name} ({protocol}): {e}")
            say(f"{name} ({protocol}) failed: {e}")
    facts = machine_facts()
    facts["load"] = f"{facts_before['load']} at the start, {facts['load']} at the end"
    facts["aiohttp"], facts["scikit-learn"] = version("aiohttp"), version("scikit-learn")
    text = report(args, ctx, seconds, n_train, train_path, req_path, len(lines), pipe, results, commands,
                  checked, missing, facts, serve, " ".join(shlex.quote(a) for a in ["python", *train_cmd[1:]]),
                  streams)
    print(text)
    if args.out:
        SECTION.write(Path(args.out), SECTION.wrap(text))
    return 0


def report(args, ctx, seconds, n_train, train_path, req_path, n_req, pipe, results, commands, checked,
           missing, facts, serve, train_cmd, streams) -> str:
    out = ["## Serving under load: TCP and HTTP against `predict` over a pipe and SGDClassifier (issue 28)", "",
           f"- Produced by: {ctx.produced_by()} (`make bench-serve`)",
           f"- Data: trained on the first {n_train:,} lines of the benchmark stream (`{train_path}`, -b "
           f"{args.bits}, logistic loss: `{train_cmd}`); requests cycle through `{req_path}` ({n_req:,} lines, "
           f"seed {DEFAULT_SEED + 1}), labels sent as they are (`-t`: nothing learns)",
           f"- Load: `bench/serve_load.py`, one client process ({'a blocking socket per connection, each in its own thread' if args.client == 'threads' else 'asyncio streams'}), a closed loop per connection; each run "
           f"{seconds:g} s after 20 untimed requests; latency per request from the first byte written to the "
           f"last answer line read (`time.perf_counter_ns`), nearest-rank percentiles; client CPU = the "
           f"client process's CPU time per request (its overhead: against the echo servers it is the ceiling)",
           "- Machine: " + ", ".join(f"{k} {v}" for k, v in facts.items()), "",
           "### `streamlearn predict` over a pipe", "",
           f"- `{pipe['cmd']}`, {pipe['lines']:,} lines: fastest of {len(pipe['walls'])} runs "
           f"{min(pipe['walls']):.3f} s (all: {', '.join(f'{w:.3f}' for w in pipe['walls'])}) = "
           f"**{pipe['rate']:,.0f} examples/s**, start-up included; start-up (a 1-line run, median) "
           f"{pipe['startup']:.3f} s" + (f", so {pipe['rate_steady']:,.0f} examples/s without it"
                                         if pipe["rate_steady"] else ""), "",
           "### Streaming through the daemon, alternated with the pipe", ""]
    if any(streams.values()):
        out += [f"After each `predict` run above, the same {pipe['lines']:,} lines streamed through `streamlearn "
                f"serve` over TCP (`bench.serve_load.stream`: as `cat FILE | nc`, a thread writes, another reads "
                f"the answers as they come; with C connections each streams 1/C of the lines at once; the daemon "
                f"started once, its start-up not counted; a warm-up round first):", "",
                "| connections | runs | fastest (s) | median (s) | examples/s (fastest) | against the pipe's "
                "fastest, start-up included | against the pipe without start-up |", "|---|---|---|---|---|---|---|"]
        for c, rs in streams.items():
            walls = [r.seconds for r in rs]
            rate = max(r.rate for r in rs)
            steady = f"{100 * rate / pipe['rate_steady']:.0f}%" if pipe["rate_steady"] else "-"
            out.append(f"| {c} | {len(rs)} | {min(walls):.3f} | {statistics.median(walls):.3f} | {rate:,.0f} | "
                       f"{100 * rate / pipe['rate']:.0f}% | {steady} |")
    else:
        out.append("- not measured (no `streamlearn serve`)")
    out += ["",
           "### Servers (closed loop: each connection sends a request, waits for its answers, sends the next)", "",
           "| server | protocol | connections | lines / request | examples/s | p50 (us) | p99 (us) | p99.9 (us) "
           "| client CPU (us / request) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for (name, protocol), rows in results.items():
        for r in rows:
            out.append(f"| {name} | {protocol} | {r.connections} | {r.batch} | {r.rate:,.0f} | "
                       f"{us(r.latency_us(0.5))} | {us(r.latency_us(0.99))} | {us(r.latency_us(0.999))} | "
                       f"{r.client_us_per_request:.0f} |")
    if not serve:
        for protocol in ("tcp", "http"):
            out.append(f"| streamlearn serve | {protocol} | - | - | not measured yet | | | | |")
    out += ["", "### Goals (issue 28)", ""]

    def best(key, batch):
        rows = results.get(key)
        return max((r for r in rows if r.batch == batch), key=lambda r: r.rate) if rows else None

    tcp_b, tcp_1 = best(("streamlearn serve", "tcp"), args.batch), results.get(("streamlearn serve", "tcp"))
    sgd_b, http_b = best(("SGDClassifier (aiohttp)", "http"), args.batch), best(("streamlearn serve", "http"), args.batch)
    if any(streams.values()):
        # judged against predict's rate without its start-up when known (the stricter), else with it
        base = pipe["rate_steady"] or pipe["rate"]
        c, rate = max(((c, max(r.rate for r in rs)) for c, rs in streams.items() if rs), key=lambda x: x[1])
        out.append(f"- TCP throughput at least 80% of `predict` over a pipe (the same lines streamed, fastest "
                   f"runs): {rate:,.0f} examples/s ({c} connection{'s' if c > 1 else ''}) = "
                   f"{100 * rate / pipe['rate']:.0f}% of {pipe['rate']:,.0f} (start-up included)"
                   + (f", {100 * rate / base:.0f}% of {base:,.0f} (without)" if pipe["rate_steady"] else "")
                   + f": {'met' if rate / base >= 0.8 else 'not met'}")
    if tcp_b:
        out.append(f"- Closed loop of {tcp_b.batch}-line requests (each waits for its answers): best "
                   f"{tcp_b.rate:,.0f} examples/s ({tcp_b.connections} connection{'s' if tcp_b.connections > 1 else ''}) = "
                   f"{100 * tcp_b.rate / pipe['rate']:.0f}% of the pipe (start-up included)")
        one = [r for r in tcp_1 if r.batch == 1 and r.connections == 1]
        if one:
            p99 = one[0].latency_us(0.99)
            out.append(f"- p99 under 1 ms for one-line requests on localhost (TCP, 1 connection): "
                       f"{p99:,.0f} us: {'met' if p99 < 1000 else 'not met'}")
    else:
        out.append("- TCP throughput at least 80% of `predict` over a pipe; p99 under 1 ms for one-line "
                   "requests: not measured yet (no `streamlearn serve`)")
    if http_b and sgd_b:
        out.append(f"- Several times the SGDClassifier service (HTTP, {args.batch} lines a request, best over "
                   f"connections): {http_b.rate:,.0f} against {sgd_b.rate:,.0f} examples/s = "
                   f"{http_b.rate / sgd_b.rate:.1f}x")
    else:
        out.append("- Several times the SGDClassifier service: not measured yet")
    if missing:
        out += ["", "Not measured:", ""] + [f"- {m}" for m in missing]
    out += ["", "Server commands (`{port}`: a free port) and what their answers to the first 100 request lines "
                "were checked to be (one request of 100 lines, then a line a request):", ""]
    out += [f"- {name} ({protocol}): `{cmd}`" + (f"; answers: {checked[(name, protocol)]}"
                                                  if (name, protocol) in checked else "")
            for (name, protocol), cmd in commands.items()]
    return "\n".join(out)


CASE = Case("serve", arguments, run, __doc__)
