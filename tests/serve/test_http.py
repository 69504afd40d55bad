"""The HTTP endpoint of serving (issue 28, streamlearn/serve/http.py) against a fake Service with the
serving core's interface: routes, text and JSON bodies, errors, the Prometheus exposition (parsed
back), concurrency, back-pressure and the latency histogram."""

import asyncio
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

pytest.importorskip("aiohttp")
from aiohttp.test_utils import TestClient, TestServer  # noqa: E402

from streamlearn.features.expansion import FeatureSpec  # noqa: E402
from streamlearn.features.names import parse_features  # noqa: E402
from streamlearn.serve import http  # noqa: E402


class FakeService:
    """The serving core's Service interface: a prediction is len(line) / 10; lines starting with
    ``bad`` are bad lines, ``boom`` raises; ``gate`` (an Event) holds calls until set."""

    def __init__(self, name, delay=0.0, gate=None):
        self.name, self.delay, self.gate = name, delay, gate
        self.calls, self.threads = [], set()
        self.lock = threading.Lock()
        self.active = self.max_active = 0
        self._stats = {"examples": 0, "learned": 0, "loss_sum": 0.0, "weighted": 0.0, "requests": 0,
                       "errors": 0, "model_loaded_at": time.time() - 100.0, "last_save_at": None}

    def chunk(self, data, learn=None):
        """The fast path's contract: one bytes for plain lines, None when a line needs ``handle``."""
        assert data.endswith(b"\n")
        lines = data.split(b"\n")[:-1]
        if any(not ln.strip() or b"\r" in ln or ln.startswith(b"bad") for ln in lines):
            return None
        self.chunked = getattr(self, "chunked", 0) + 1
        return b"".join(out + b"\n" for out in self.handle(lines, learn))

    def handle(self, lines, learn=None, raw=False):
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.threads.add(threading.get_ident())
        try:
            if self.gate is not None:
                assert self.gate.wait(10)
            if self.delay:
                time.sleep(self.delay)
            out = []
            for line in lines:
                if line.startswith(b"boom"):
                    raise RuntimeError("the fake model broke")
                if line.startswith(b"bad"):
                    out.append(b"error: cannot parse " + line)
                    self._stats["errors"] += 1
                    continue
                out.append((b"raw " if raw else b"") + (b"%g" % (len(line) / 10)))
                self._stats["examples"] += 1
                if learn:
                    self._stats["learned"] += 1
                    self._stats["loss_sum"] += 0.5
                    self._stats["weighted"] += 1.0
            with self.lock:
                self.calls.append((list(lines), learn, raw))
                self._stats["requests"] += 1
            return out
        finally:
            with self.lock:
                self.active -= 1

    def save(self, path=None):
        self._stats["last_save_at"] = time.time() - 5.0
        return path or f"/models/{self.name}.slm"

    def reload(self):
        pass

    def stats(self):
        return dict(self._stats)


class FakeRegistry:
    def __init__(self, *services):
        self.services = {s.name: s for s in services}

    def get(self, name):
        return self.services[name]

    def names(self):
        return list(self.services)


def run(app, scenario, timeout=60):
    """``await scenario(client)`` against ``app`` on a local test server (failing after ``timeout`` s)."""
    async def main():
        async with TestClient(TestServer(app)) as client:
            return await asyncio.wait_for(scenario(client), timeout)
    return asyncio.run(main())


def parse_metrics(text):
    """Prometheus text exposition -> ({(name, frozenset(labels)): value}, {name: type})."""
    samples, types = {}, {}
    sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
        elif line.startswith("# HELP "):
            continue
        else:
            m = sample.match(line)
            assert m, f"not a sample line: {line!r}"
            labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
            key = (m.group(1), labels)
            assert key not in samples, f"duplicate sample {key}"
            samples[key] = float(m.group(4))
    return samples, types


def L(**labels):
    return frozenset(labels.items())


# --- JSON examples as VW text ------------------------------------------------------------------

SPEC = FeatureSpec.from_options()


def features_of(line):
    groups, fault = parse_features(line, SPEC, 18)
    assert not fault
    return sorted((f.ns_name, f.name, f.str_value, f.value) for _, fs in groups for f in fs)


def test_json_example_becomes_the_vw_line_with_its_label_weight_tag_and_namespaces():
    line = http.example_to_line({"label": -1, "weight": 2.5, "tag": "r7", "namespace": "user",
                                 "features": {"age": 0.5, "x": 1, "color": "red"}})
    assert line == b"-1 2.5 'r7 |user age:0.5 x color=red"
    assert http.example_to_line({"features": {"a": 3}}) == b" | a:3"
    assert http.example_to_line({"label": "2", "namespaces": {"a": {"x": 1}, "b": {"y": -2.0}}}) \
        == b"2 |a x|b y:-2.0"
    assert features_of(b"2 |a x|b y:-2.0") == [("a", "x", None, 1.0), ("b", "y", None, -2.0)]


@given(st.dictionaries(st.text(min_size=1, max_size=8), st.floats(-1e3, 1e3).filter(lambda v: abs(v) > 1e-3),
                       min_size=1, max_size=5),
       st.text(max_size=5))
def test_json_names_reach_vw_escaped_one_to_one(features, namespace):
    """Every name arrives as one VW feature of that value, named by its escape, which undoes to it."""
    line = http.example_to_line({"label": 1, "namespace": namespace, "features": features})
    parsed = features_of(line)
    assert len(parsed) == len(features)
    want = sorted((http.escape_name(namespace), http.escape_name(name), None, value)
                  for name, value in features.items())
    assert [p[:3] for p in parsed] == [w[:3] for w in want]
    assert all(math.isclose(p[3], w[3], rel_tol=1e-6) for p, w in zip(parsed, want))
    for name in features:
        escaped = http.escape_name(name)
        assert not set(escaped) & set(" \t\r\n\v\f:|")
        assert urllib.parse.unquote(escaped) == name


def test_escaping_leaves_plain_names_alone():
    assert http.escape_name("plain_name-1.2^x=y") == "plain_name-1.2^x=y"
    assert http.escape_name("a b:c|d%e") == "a%20b%3Ac%7Cd%25e"


@pytest.mark.parametrize("bad, reason", [
    ({"label": 1}, "has no features"),
    ({"features": {"x": "1", "y": [1]}}, "must be a number"),
    ({"features": {"x": float("inf")}}, "finite"),
    ({"features": {"x": True}}, "must be a number"),
    ({"label": "1 | x", "features": {"x": 1}}, "bad label"),
    ({"tag": "save_/tmp/x", "features": {"x": 1}}, "tag"),
    ({"tag": "a b", "features": {"x": 1}}, "tag"),
    ({"weight": 2, "features": {"x": 1}}, "weight needs a label"),
    ({"features": {"x": 1}, "extra": 1}, "unknown field"),
    ([1, 2], "expected"),
    ({"examples": []}, "no examples"),
])
def test_bad_json_examples_are_refused_with_a_reason(bad, reason):
    with pytest.raises(http.BadRequest, match=reason):
        http.json_to_lines(bad)


def test_save_lines_are_recognised():
    for line in (b"save", b"'save_/tmp/m", b"save_x |", b"1 'save |a", b"save |a |b"):
        assert http.is_save_line(line), line
    for line in (b"1 |a x", b"save |a x", b"1 'save |a x", b"1 | save", b"1 2"):
        assert not http.is_save_line(line), line


# --- endpoints -----------------------------------------------------------------------------------

def test_text_predict_and_learn():
    svc = FakeService("m")
    app = http.make_app(FakeRegistry(svc))

    async def scenario(client):
        r = await client.post("/predict", data=b"1 |a x\r\n\n  \n-1 |a x y\n")
        assert r.status == 200 and r.content_type == "text/plain"
        assert await r.text() == "0.6\n0.9\n"
        r = await client.post("/learn?raw=1", data=b"1 |a x\n")
        assert await r.text() == "raw 0.6\n"
        r = await client.post("/models/m/learn", data=b"1 |a x\n")
        assert r.status == 200

    run(app, scenario)
    assert svc.calls == [([b"1 |a x", b"-1 |a x y"], False, False), ([b"1 |a x"], True, True),
                         ([b"1 |a x"], True, False)]


def test_json_bodies_and_the_answer_format_follows_accept_then_content_type():
    svc = FakeService("m")
    app = http.make_app(FakeRegistry(svc))
    body = {"examples": [{"label": 1, "features": {"x": 1}}, {"features": {"a b": 2}}]}

    async def scenario(client):
        r = await client.post("/learn", json=body)
        assert r.status == 200 and r.content_type == "application/json"
        assert await r.json() == {"predictions": [0.5, 1.0]}
        r = await client.post("/predict", json={"features": {"x": 1}}, headers={"Accept": "text/plain"})
        assert await r.text() == "0.4\n"
        r = await client.post("/predict", data=b"1 |a x\n", headers={"Accept": "application/json"})
        assert await r.json() == {"predictions": [0.6]}

    run(app, scenario)
    assert svc.calls[0] == ([b"1 | x", b" | a%20b:2"], True, False)


def test_bad_input_is_a_one_line_400_and_the_server_stays_up():
    svc = FakeService("m")

    async def scenario(client):
        r = await client.post("/predict", data=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status == 400
        assert (await r.json())["error"].startswith("invalid JSON")
        r = await client.post("/predict", data=b"\n\n")
        assert r.status == 400 and await r.text() == "no example lines\n"
        r = await client.post("/predict", data=b"bad one\nbad two\n")  # every line bad: 400
        assert r.status == 400 and await r.text() == "line 1: cannot parse bad one (2 bad lines)\n"
        r = await client.post("/predict", data=b"1 |a x\nbad x\n")  # not strict: the error in its place
        assert r.status == 200 and await r.text() == "0.6\nerror: cannot parse bad x\n"
        r = await client.post("/predict", data=b"1 |a x\nbad x\n", headers={"Accept": "application/json"})
        assert await r.json() == {"predictions": [0.6, None],
                                  "errors": [{"line": 2, "error": "cannot parse bad x"}]}
        r = await client.post("/learn", data=b"save_/tmp/evil\n1 |a x\n")
        assert await r.text() == "error: save lines are refused over HTTP (POST /save)\n0.6\n"
        r = await client.post("/predict", data=b"boom\n")
        assert r.status == 500 and (await r.text()).count("\n") == 1
        assert "the fake model broke" in await r.text()
        r = await client.post("/predict", data=b"x" * (2 << 20))
        assert r.status == 413
        r = await client.get("/predict")
        assert r.status == 405
        r = await client.post("/models/nope/predict", data=b"1 |a x\n")
        assert r.status == 404 and "unknown model 'nope'" in await r.text()
        r = await client.get("/healthz")
        assert r.status == 200 and await r.text() == "ok\n"

    run(http.make_app(FakeRegistry(svc), max_body=1 << 20), scenario)
    assert [c[0] for c in svc.calls] == [[b"bad one", b"bad two"], [b"1 |a x", b"bad x"], [b"1 |a x", b"bad x"],
                                         [b"1 |a x"]]  # the save line never reached the model


def test_strict_refuses_a_request_with_a_bad_line():
    app = http.make_app(FakeRegistry(FakeService("m")), strict=True)

    async def scenario(client):
        r = await client.post("/learn", data=b"1 |a x\nbad x\n")
        assert r.status == 400
        assert await r.text() == "line 2: cannot parse bad x; the 1 other lines were applied\n"

    run(app, scenario)


def test_several_models_are_routed_by_name():
    a, b = FakeService("a"), FakeService("b")

    async def scenario(client):
        r = await client.post("/predict", data=b"1 |a x\n")
        assert r.status == 404 and "2 models" in await r.text()
        assert (await client.post("/models/b/learn", data=b"1 |a x\n")).status == 200
        assert (await client.post("/models/a/predict", data=b"1 |a\n")).status == 200
        r = await client.get("/healthz", headers={"Accept": "application/json"})
        assert await r.json() == {"status": "ok", "models": ["a", "b"]}

    run(http.make_app(FakeRegistry(a, b)), scenario)
    assert a.calls == [([b"1 |a"], False, False)] and b.calls == [([b"1 |a x"], True, False)]

    async def default(client):
        assert await (await client.post("/predict", data=b"1 |a x\n")).text() == "0.6\n"

    run(http.make_app(FakeRegistry(a, b), default="b"), default)
    assert b.calls[-1] == ([b"1 |a x"], False, False)


def test_save_endpoint():
    svc = FakeService("m")

    async def scenario(client):
        r = await client.post("/save")
        assert r.status == 200 and await r.text() == "saved /models/m.slm\n"
        r = await client.post("/models/m/save", headers={"Accept": "application/json"})
        assert await r.json() == {"saved": "/models/m.slm"}

    run(http.make_app(FakeRegistry(svc)), scenario)


# --- metrics -------------------------------------------------------------------------------------

def test_metrics_in_prometheus_text_format():
    a, b = FakeService("a"), FakeService("b")

    async def scenario(client):
        await client.post("/models/a/learn", data=b"1 |a x\n-1 |a y\nbad\n")
        await client.post("/models/a/predict", data=b"1 |a x\n")
        await client.post("/models/b/predict", data=b"bad\n")
        await client.post("/models/b/save")
        r = await client.get("/metrics")
        assert r.status == 200 and r.content_type == "text/plain" and "version=0.0.4" in r.headers["Content-Type"]
        return await r.text()

    samples, types = parse_metrics(run(http.make_app(FakeRegistry(a, b)), scenario))
    assert samples["streamlearn_examples_total", L(model="a")] == 3
    assert samples["streamlearn_learned_total", L(model="a")] == 2
    assert samples["streamlearn_loss_sum", L(model="a")] == 1.0
    assert samples["streamlearn_average_loss", L(model="a")] == 0.5
    assert math.isnan(samples["streamlearn_average_loss", L(model="b")])
    assert samples["streamlearn_errors_total", L(model="a")] == 1
    assert samples["streamlearn_errors_total", L(model="b")] == 1
    assert samples["streamlearn_model_requests_total", L(model="a")] == 2
    assert 100 <= samples["streamlearn_model_age_seconds", L(model="a")] < 160
    assert ("streamlearn_last_snapshot_age_seconds", L(model="a")) not in samples
    assert 5 <= samples["streamlearn_last_snapshot_age_seconds", L(model="b")] < 65
    req = "streamlearn_http_requests_total"
    assert samples[req, L(endpoint="/models/{name}/learn", status="200")] == 1
    assert samples[req, L(endpoint="/models/{name}/predict", status="200")] == 1
    assert samples[req, L(endpoint="/models/{name}/predict", status="400")] == 1
    assert samples[req, L(endpoint="/models/{name}/save", status="200")] == 1
    assert types == {**types, "streamlearn_examples_total": "counter", "streamlearn_model_age_seconds": "gauge",
                     "streamlearn_http_request_duration_seconds": "histogram", req: "counter"}
    hist = "streamlearn_http_request_duration_seconds"
    assert samples[hist + "_count", L(endpoint="/models/{name}/predict")] == 2
    buckets = sorted((float(dict(k[1])["le"]), v) for k, v in samples.items()
                     if k[0] == hist + "_bucket" and dict(k[1])["endpoint"] == "/models/{name}/predict")
    assert [le for le, _ in buckets] == [*http.LATENCY_BUCKETS, math.inf]
    counts = [v for _, v in buckets]
    assert counts == sorted(counts) and counts[-1] == 2


def test_histogram_counts_each_value_in_the_first_bucket_that_holds_it():
    h = http.Histogram((0.001, 0.01, 0.1))
    for v in (0.0005, 0.001, 0.0011, 0.01, 0.05, 0.1, 0.5, 7.0):
        h.observe(v)
    assert h.cumulative() == [("0.001", 2), ("0.01", 4), ("0.1", 6), ("+Inf", 8)]
    assert math.isclose(h.sum, sum((0.0005, 0.001, 0.0011, 0.01, 0.05, 0.1, 0.5, 7.0)))
    assert http.LATENCY_BUCKETS[0] < 0.0001 and 0.001 in http.LATENCY_BUCKETS


def test_latency_histogram_counts_slow_requests_above_their_time():
    svc = FakeService("m", delay=0.12)

    async def scenario(client):
        for _ in range(3):
            assert (await client.post("/learn", data=b"1 |a x\n")).status == 200
        return await (await client.get("/metrics")).text()

    samples, _ = parse_metrics(run(http.make_app(FakeRegistry(svc)), scenario))
    hist = "streamlearn_http_request_duration_seconds"
    for le in http.LATENCY_BUCKETS:
        got = samples[hist + "_bucket", L(endpoint="/learn", le=repr(le))]
        if le <= 0.1:
            assert got == 0, le
        if le >= 10:
            assert got == 3
    assert samples[hist + "_count", L(endpoint="/learn")] == 3
    assert samples[hist + "_sum", L(endpoint="/learn")] >= 0.36


# --- concurrency and back-pressure -----------------------------------------------------------------

def test_many_simultaneous_requests_run_in_the_pool_and_each_gets_its_own_answers():
    svc = FakeService("m", delay=0.005)
    n = 200

    async def scenario(client):
        loop_thread = threading.get_ident()

        async def one(i):
            lines = [b"1 |a " + b"x" * (i % 7), b"|b " + b"y" * (i % 5)]
            r = await client.post("/predict", data=b"\n".join(lines))
            return r.status, await r.text(), lines

        results = await asyncio.gather(*(one(i) for i in range(n)))
        return loop_thread, results

    loop_thread, results = run(http.make_app(FakeRegistry(svc), workers=4, max_pending=n), scenario)
    for status, text, lines in results:
        assert status == 200
        assert text == "".join("%g\n" % (len(line) / 10) for line in lines)
    assert len(svc.calls) == n
    assert loop_thread not in svc.threads and 1 < svc.max_active <= 4


def test_the_event_loop_answers_while_the_model_is_busy():
    gate = threading.Event()
    svc = FakeService("m", gate=gate)

    async def scenario(client):
        slow = asyncio.ensure_future(client.post("/learn", data=b"1 |a x\n"))
        while svc.active == 0 and not slow.done():
            await asyncio.sleep(0.001)
        assert not slow.done()
        start = time.perf_counter()
        r = await client.get("/healthz")
        assert r.status == 200 and time.perf_counter() - start < 1.0 and not slow.done()
        gate.set()
        assert (await slow).status == 200

    run(http.make_app(FakeRegistry(svc)), scenario)


def test_back_pressure_answers_503_beyond_max_pending():
    gate = threading.Event()
    svc = FakeService("m", gate=gate)

    async def scenario(client):
        held = [asyncio.ensure_future(client.post("/predict", data=b"1 |a x\n")) for _ in range(2)]
        while True:  # both admitted: one running (one worker), one waiting for the thread
            samples, _ = parse_metrics(await (await client.get("/metrics")).text())
            if samples["streamlearn_http_in_flight", frozenset()] == 2:
                break
            await asyncio.sleep(0.001)
        refused = await asyncio.gather(*(client.post("/predict", data=b"1 |a x\n") for _ in range(3)))
        assert [r.status for r in refused] == [503] * 3
        assert all(r.headers["Retry-After"] == "1" for r in refused)
        assert (await client.get("/healthz")).status == 200  # not counted: it does not call the model
        gate.set()
        assert [(await r).status for r in held] == [200, 200]
        return await (await client.get("/metrics")).text()

    samples, _ = parse_metrics(run(http.make_app(FakeRegistry(svc), workers=1, max_pending=2), scenario))
    assert samples["streamlearn_http_rejected_total", frozenset()] == 3
    assert samples["streamlearn_http_requests_total", L(endpoint="/predict", status="503")] == 3
    assert samples["streamlearn_http_in_flight", frozenset()] == 0
    assert len(svc.calls) == 2


def test_serve_http_listens_in_a_thread_of_its_own_until_stopped():
    svc = FakeService("m")
    server = http.serve_http(FakeRegistry(svc), "127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{server.port}"
        with urllib.request.urlopen(url + "/healthz", timeout=10) as r:
            assert r.read() == b"ok\n"
        req = urllib.request.Request(url + "/learn", data=json.dumps({"label": 1, "features": {"x": 1}}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert json.loads(r.read()) == {"predictions": [0.5]}
    finally:
        server.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/healthz", timeout=2)
    with pytest.raises(Exception, match="cannot serve HTTP"):
        busy = http.serve_http(FakeRegistry(svc), "127.0.0.1", 0)
        try:
            http.serve_http(FakeRegistry(svc), "127.0.0.1", busy.port)
        finally:
            busy.stop()


def test_without_aiohttp_the_import_says_what_to_install_in_one_line():
    code = ("import sys; sys.modules['aiohttp'] = None\n"
            "try:\n    import streamlearn.serve.http\n"
            "except Exception as e:\n    print(type(e).__name__, e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])))
    assert out.stdout == ("OptionError the HTTP endpoint (--http-port) needs aiohttp: "
                          "pip install 'streamlearn[serve]'\n")


RUN_HTTP = """
import sys, time
from streamlearn.serve import http
class Service:
    def chunk(self, data, learn=None):
        return None
    def handle(self, lines, learn=None, raw=False):
        return [b"1" for _ in lines]
    def stats(self):
        return {"examples": 0, "learned": 0, "loss_sum": 0.0, "weighted": 0.0, "requests": 0, "errors": 0,
                "model_loaded_at": time.time(), "last_save_at": None}
class Registry:
    def get(self, name):
        return Service()
    def names(self):
        return ["m"]
http.run_http(Registry(), "127.0.0.1", int(sys.argv[1]))
print("stopped")
"""


def test_run_http_serves_in_the_foreground_until_sigterm():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-c", RUN_HTTP, str(port)], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/predict", data=b"|a x\n|a y\n",
                                            timeout=5) as r:
                    assert r.read() == b"1\n1\n"
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0 and proc.stdout.read() == "stopped\n"
    finally:
        proc.kill()
