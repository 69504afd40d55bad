"""``streamlearn serve`` (issue 28): VW's daemon protocol over TCP. With one connection the daemon's
predictions equal ``streamlearn predict`` and learning through it leaves ``streamlearn train``'s model,
bit for bit; save lines, snapshots, signals, bad lines, several models, port and pid files, VW's own
daemon-test.sh, and 16 concurrent clients whose final model equals a sequential replay."""

import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from streamlearn.run.session import prepare_train
from streamlearn.serve.service import Registry, Service, save_command
from support.serving import ENV, free_port, wait_http
from support.vwsuite import extract

ROOT = Path(__file__).resolve().parents[2]
TRAIN = (ROOT / "data" / "samples" / "sparse.train.vw").read_bytes().splitlines()[:300]
TEST = (ROOT / "data" / "samples" / "sparse.test.vw").read_bytes().splitlines()[:100]
#: predictions only, among the learned lines of the concurrent test
UNLABELLED = [b" |" + line.split(b"|", 1)[1] for line in TEST]


def sl(*args, cwd, **kw):
    return subprocess.run([sys.executable, "-m", "streamlearn", *map(str, args)], cwd=cwd, env=ENV,
                          capture_output=True, timeout=300, **kw)


def write(path: Path, lines) -> Path:
    path.write_bytes(b"".join(x + b"\n" for x in lines))
    return path


# ----------------------------------------------------------------------------- the Service, in process

def test_service_equals_train_and_predict(tmp_path):
    write(tmp_path / "tr.vw", TRAIN)
    write(tmp_path / "te.vw", TEST)
    assert sl("train", "-d", "tr.vw", "-b", 18, "-f", "m.model", "-p", "tr.pred", "--quiet", cwd=tmp_path).returncode == 0
    assert sl("predict", "-i", "m.model", "-d", "te.vw", "-p", "te.pred", "--quiet", cwd=tmp_path).returncode == 0
    cfg, model = prepare_train({"bits": 18, "quiet": True, "final_model": str(tmp_path / "s.model")})
    s = Service(cfg)
    out = []
    for i in range(0, len(TRAIN), 7):       # requests of any size learn as one stream
        out += s.handle(TRAIN[i:i + 7])
    assert out == (tmp_path / "tr.pred").read_bytes().splitlines()
    assert s.save() == str(tmp_path / "s.model")
    assert (tmp_path / "s.model").read_bytes() == (tmp_path / "m.model").read_bytes()
    # learn=False predicts with the weights in force, as predict -i does
    assert s.handle(TEST, learn=False) == (tmp_path / "te.pred").read_bytes().splitlines()
    cfg, model = prepare_train({"initial_model": str(tmp_path / "m.model"), "testonly": True, "quiet": True})
    t = Service(cfg, model=model)
    assert t.handle(TEST) == (tmp_path / "te.pred").read_bytes().splitlines()
    st = t.stats()
    assert st["examples"] == len(TEST) and st["learned"] == 0 and st["requests"] == 1 and st["errors"] == 0
    assert s.stats()["learned"] == len(TRAIN)
    reg = Registry([s])
    assert reg.names() == ["default"] and reg.get("default") is s
    with pytest.raises(KeyError):
        reg.get("other")


def test_service_bad_lines_and_tags(tmp_path):
    cfg, _ = prepare_train({"bits": 18, "quiet": True})
    s = Service(cfg)
    out = s.handle([b"1 'a| x y", b"nonsense 2 | x", b"", b"-1 'b| z"])
    assert out[1].startswith(b"error: ") and b"nonsense" in out[1] and out[2] == b""
    assert out[0].endswith(b" a") and out[3].endswith(b" b")
    assert s.stats()["errors"] == 1 and s.stats()["examples"] == 2
    # the good lines learned as if the bad one was not there
    r = Service(cfg)
    assert r.handle([b"1 'a| x y", b"-1 'b| z"]) == [out[0], out[3]]



def test_service_raw_predictions():
    cfg, _ = prepare_train({"bits": 18, "quiet": True, "loss": "logistic", "link": "logistic"})
    s = Service(cfg)
    s.handle([b"1 | x y", b"1 | x"] * 5)
    raw = float(s.handle([b"'q| x"], learn=False, raw=True)[0].split()[0])
    shown, tag = s.handle([b"'q| x"], learn=False)[0].split()
    assert raw > 0.5 and tag == b"q"
    assert abs(float(shown) - 1 / (1 + math.exp(-raw))) < 1e-6

    # strict: nothing after the first bad line is read
    k = Service(cfg)
    got = k.handle([b"1 | x", b"x1 | y", b"1 | z"], strict=True)
    assert got[1].startswith(b"error: ") and got[2] == b"" and k.stats()["learned"] == 1


def test_service_chunk_is_handle_without_lines(tmp_path):
    """The fast path (``Service.chunk``: complete plain lines as one bytes) answers and learns as
    ``handle``; a chunk with a line that is no plain example is left to ``handle`` (None, nothing done)."""
    for given in ({}, {"quadratic": ("ab",)}):      # parsed before the lock, and under it (-q expands)
        cfg, _ = prepare_train({"bits": 18, "quiet": True, **given})
        a, b = Service(cfg), Service(cfg)
        fast = b"".join(a.chunk(b"".join(x + b"\n" for x in TRAIN[i:i + 37])) for i in range(0, len(TRAIN), 37))
        assert fast.splitlines() == b.handle(TRAIN) and len(fast.splitlines()) == len(TRAIN)
        assert a.model_bytes() == b.model_bytes()
        assert a.chunk(b"".join(x + b"\n" for x in TEST), learn=False).splitlines() == b.handle(TEST, learn=False)
        before = a.model_bytes(), a.stats()
        for odd in (b"1 | x\n\n", b"1 | x\nx1 | y\n", b"1 | x\r\n", b"# a comment\n"):
            assert a.chunk(odd) is None
        assert (a.model_bytes(), a.stats()) == before
    cfg, model = prepare_train({"initial_model": str(_trained(tmp_path)), "testonly": True, "quiet": True})
    t = Service(cfg, model=model)
    assert t.chunk(b"".join(x + b"\n" for x in TEST)).splitlines() == t.handle(TEST)


def test_predictions_on_several_threads(tmp_path):
    """Predictions run outside the learner's lock, each thread on its twin of the predictor (the same
    weights, its own counters): 8 threads at once answer as one, and the counters add up."""
    cfg, model = prepare_train({"initial_model": str(_trained(tmp_path)), "testonly": True, "quiet": True})
    t = Service(cfg, model=model)
    data = b"".join(x + b"\n" for x in TEST)
    want = t.chunk(data)
    loss = t.stats()["loss_sum"]
    got, start = [], threading.Barrier(8)

    def client():
        start.wait()
        got.extend(t.chunk(data) for _ in range(20))
    threads = [threading.Thread(target=client) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert got == [want] * 160
    st = t.stats()
    assert st["examples"] == 161 * len(TEST) and st["requests"] == 161
    assert abs(st["loss_sum"] - 161 * loss) < 1e-6 * 161 * loss
    # a learning model: predictions (learn=False) read the weights in force, learning goes on between them
    cfg, _ = prepare_train({"bits": 18, "quiet": True})
    a, b = Service(cfg), Service(cfg)
    for i in range(0, len(TRAIN), 50):
        part = b"".join(x + b"\n" for x in TRAIN[i:i + 50])
        assert a.chunk(part) == b.chunk(part)
        assert a.chunk(data, learn=False).splitlines() == b.handle(TEST, learn=False)


def _trained(tmp_path: Path) -> Path:
    write(tmp_path / "tr.vw", TRAIN)
    assert sl("train", "-d", "tr.vw", "-b", 18, "-f", "m.model", "--quiet", cwd=tmp_path).returncode == 0
    return tmp_path / "m.model"


def test_save_command_lines():
    assert save_command(b"save") == "" and save_command(b"save_/tmp/m.model") == "/tmp/m.model"
    assert save_command(b"'save_x|") == "x" and save_command(b"1 | save") is None


# ----------------------------------------------------------------------------- the daemon over TCP

def test_daemon_equals_train_and_predict(tmp_path, daemons):
    write(tmp_path / "tr.vw", TRAIN)
    write(tmp_path / "te.vw", TEST)
    assert sl("train", "-d", "tr.vw", "-b", 18, "-f", "m.model", "-p", "tr.pred", "--quiet", cwd=tmp_path).returncode == 0
    assert sl("predict", "-i", "m.model", "-d", "te.vw", "-p", "te.pred", "--quiet", cwd=tmp_path).returncode == 0
    d = daemons(tmp_path, "-b", 18, "-f", "final.model", "--pid-file", "pid")
    assert int((tmp_path / "pid").read_text()) == d.proc.pid
    assert d.send(TRAIN + [b"save_snap.model"]) == (tmp_path / "tr.pred").read_bytes().splitlines()
    assert (tmp_path / "snap.model").read_bytes() == (tmp_path / "m.model").read_bytes()
    assert d.stop() == 0            # SIGTERM: final save, exit 0
    assert (tmp_path / "final.model").read_bytes() == (tmp_path / "m.model").read_bytes()
    t = daemons(tmp_path, "-t", "-i", "m.model")
    assert t.send(TEST) == (tmp_path / "te.pred").read_bytes().splitlines()
    assert t.stop(signal.SIGINT) == 0


def test_daemon_stream_of_many_chunks(tmp_path, daemons):
    """A client streaming far more than one read (the connection's next chunk parsed while the model
    answers the last), with a bad line and a save line inside: train's predictions and models."""
    lines = (TRAIN * 60)[:18000]          # about 1.5 MB: several reads of the connection
    stream = lines[:9000] + [b"x1 | bad label"] + lines[9000:12000] + [b"save_mid.model"] + lines[12000:]
    write(tmp_path / "all.vw", lines)
    write(tmp_path / "head.vw", lines[:12000])
    for name in ("all", "head"):
        assert sl("train", "-d", f"{name}.vw", "-b", 18, "-f", f"{name}.model", "-p", f"{name}.pred", "--quiet",
                  cwd=tmp_path).returncode == 0
    d = daemons(tmp_path, "-b", 18, "-f", "final.model")
    out = d.send(stream)
    want = (tmp_path / "all.pred").read_bytes().splitlines()
    assert len(out) == len(want) + 1 and out[9000].startswith(b"error: ")
    assert out[:9000] + out[9001:] == want
    assert (tmp_path / "mid.model").read_bytes() == (tmp_path / "head.model").read_bytes()
    assert d.stop() == 0
    assert (tmp_path / "final.model").read_bytes() == (tmp_path / "all.model").read_bytes()


def test_bad_lines_and_strict(tmp_path, daemons):
    d = daemons(tmp_path, "-b", 18)
    out = d.send([b"1 | a", b"x1 | a", b"-1 | b"])
    assert len(out) == 3 and out[1].startswith(b"error: ") and not out[2].startswith(b"error")
    s = daemons(tmp_path, "-b", 18, "--strict", "-f", "strict.model")
    out = s.send([b"1 | a", b"x1 | a", b"-1 | b"])
    assert len(out) == 2 and out[1].startswith(b"error: ")
    assert s.send([b"1 | a"]) and s.proc.poll() is None     # the daemon stays up
    with socket.create_connection(("127.0.0.1", d.port), timeout=30) as c:
        c.sendall(b"x1 | a\n")
        assert c.recv(1000).startswith(b"error: ")
        c.sendall(b"1 | a\n")                                  # the connection stays up
        got = c.recv(1000)
        assert got.endswith(b"\n") and float(got) > 0
    # --strict: nothing after the bad line was learned
    assert s.stop() == 0
    write(tmp_path / "s.vw", [b"1 | a", b"1 | a"])
    assert sl("train", "-d", "s.vw", "-b", 18, "-f", "s.ref", "--quiet", cwd=tmp_path).returncode == 0
    assert (tmp_path / "strict.model").read_bytes() == (tmp_path / "s.ref").read_bytes()


def test_snapshots_and_sighup(tmp_path, daemons):
    write(tmp_path / "tr.vw", TRAIN[:100])
    assert sl("train", "-d", "tr.vw", "-b", 18, "-f", "a.model", "--quiet", cwd=tmp_path).returncode == 0
    d = daemons(tmp_path, "-t", "-i", "a.model")
    before = d.send(TEST[:5])
    write(tmp_path / "tr2.vw", TRAIN[100:300])
    assert sl("train", "-d", "tr2.vw", "-b", 18, "-f", "a.model.new", "--quiet", cwd=tmp_path).returncode == 0
    with socket.create_connection(("127.0.0.1", d.port), timeout=30) as c:   # kept across the reload
        c.sendall(TEST[0] + b"\n")
        assert c.recv(1000).splitlines()[0] == before[0]
        os.replace(tmp_path / "a.model.new", tmp_path / "a.model")
        d.proc.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        c.sendall(TEST[0] + b"\n")
        after = c.recv(1000).splitlines()[0]
    write(tmp_path / "te.vw", TEST[:1])
    sl("predict", "-i", "a.model", "-d", "te.vw", "-p", "te.pred", "--quiet", cwd=tmp_path)
    assert after == (tmp_path / "te.pred").read_bytes().strip() and after != before[0]
    # --save-every N: a snapshot after each N examples, atomic (no temporary left)
    s = daemons(tmp_path, "-b", 18, "-f", "every.model", "--save-every", 50)
    s.send(TRAIN[:120])
    assert (tmp_path / "every.model").exists()
    assert not [p for p in os.listdir(tmp_path) if p.startswith("every.model") and p != "every.model"]
    assert s.stop() == 0
    # --save-every-seconds S: a snapshot every S seconds, the model between two requests
    t = daemons(tmp_path, "-b", 18, "-f", "timed.model", "--save-every-seconds", 0.3)
    t.send(TRAIN[:40])
    time.sleep(1.5)
    write(tmp_path / "t.vw", TRAIN[:40])
    assert sl("train", "-d", "t.vw", "-b", 18, "-f", "t.ref", "--quiet", cwd=tmp_path).returncode == 0
    assert (tmp_path / "timed.model").read_bytes() == (tmp_path / "t.ref").read_bytes()
    t.proc.kill()


def test_several_models_routed(tmp_path, daemons):
    d = daemons(tmp_path, "-b", 18, "--model", f"a={tmp_path / 'a.model'}", "--model", f"b={tmp_path / 'b.model'}")
    d.send([b"model: a"] + TRAIN[:50])
    d.send([b"model: b"] + TRAIN[50:60])
    assert d.send([b"model: c", b"1 | a"])[0].startswith(b"error: no model named")
    assert d.send([b"1 | a"])[0].startswith(b"error: several models")
    assert d.stop() == 0
    write(tmp_path / "a.vw", TRAIN[:50])
    write(tmp_path / "b.vw", TRAIN[50:60])
    for n in "ab":
        assert sl("train", "-d", f"{n}.vw", "-b", 18, "-f", f"{n}.ref", "--quiet", cwd=tmp_path).returncode == 0
        assert (tmp_path / f"{n}.model").read_bytes() == (tmp_path / f"{n}.ref").read_bytes()


def test_concurrent_clients_replay(tmp_path, daemons):
    """16 clients learning (labelled lines) and predicting (unlabelled ones) at once, through 4 workers
    and a queue of 4: the final model equals a sequential train over the examples in the order the
    daemon applied them (logged in the test mode)."""
    d = daemons(tmp_path, "-b", 18, "-f", "final.model", "--num-children", 4, "--max-queue", 4,
                env={"STREAMLEARN_SERVE_ORDER_LOG": str(tmp_path / "order.vw")})
    failures = []

    def client(k):
        try:
            lines = TRAIN[k::16] + UNLABELLED[k::16]
            for i in range(0, len(lines), 3):
                out = d.send(lines[i:i + 3])
                assert len(out) == len(lines[i:i + 3]) and not any(x.startswith(b"error") for x in out)
        except Exception as exc:    # noqa: BLE001 (reported below)
            failures.append(repr(exc))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert d.stop() == 0
    order = (tmp_path / "order.vw").read_bytes().splitlines()
    assert order[-1] == b"#snapshot 1"     # the final save's marker
    order = order[:-1]
    assert sorted(order) == sorted(TRAIN + UNLABELLED) and order != TRAIN + UNLABELLED
    write(tmp_path / "order.vw", order)
    assert sl("train", "-d", "order.vw", "-b", 18, "-f", "replay.model", "--quiet", cwd=tmp_path).returncode == 0
    assert (tmp_path / "final.model").read_bytes() == (tmp_path / "replay.model").read_bytes()


# ----------------------------------------------------------------------------- VW's daemon-test.sh

NC = """#!{py}
import socket, sys
args = sys.argv[1:]
if args[:1] == ["-w"]:
    args = args[2:]
s = socket.create_connection((args[0], int(args[1])), timeout=10)
s.sendall(sys.stdin.buffer.read())
s.shutdown(socket.SHUT_WR)
while True:
    d = s.recv(65536)
    if not d:
        break
    sys.stdout.buffer.write(d)
"""

VW = """#!{py}
import sys
from streamlearn.vwcompat import main
main()
"""


@pytest.mark.parametrize("foreground", [False, True])
def test_vw_daemon_test_sh(tmp_path, foreground):
    test, _ = extract(tmp_path, [], ["daemon-test.sh"])
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, text in (("nc", NC), ("vw", VW)):
        (bin_ / name).write_text(text.format(py=sys.executable))
        (bin_ / name).chmod(0o755)
    port = free_port()
    env = dict(ENV, PATH=f"{bin_}{os.pathsep}{os.environ['PATH']}")
    args = ["bash", str(test / "daemon-test.sh"), "--vw", str(bin_ / "vw"), "--port", str(port)]
    r = subprocess.run(args + (["--foreground"] if foreground else []), cwd=test, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "vw-daemon-test: OK" in r.stdout, r.stdout + r.stderr


def _post(port: int, path: str, body: bytes, accept: str = "text/plain") -> tuple[int, bytes]:
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request("POST", path, body=body, headers={"Content-Type": "text/plain", "Accept": accept})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def test_http_port_serves_the_same_model(tmp_path, daemons):
    """--http-port beside the TCP protocol, over the real Service: /learn gives train's predictions and
    leaves its model (the final save), /predict equals streamlearn predict and learns nothing, /metrics
    counts what was learned."""
    pytest.importorskip("aiohttp")
    import http.client
    write(tmp_path / "tr.vw", TRAIN)
    write(tmp_path / "te.vw", TEST)
    assert sl("train", "-d", "tr.vw", "-b", 18, "-f", "m.model", "-p", "tr.pred", "--quiet", cwd=tmp_path).returncode == 0
    assert sl("predict", "-i", "m.model", "-d", "te.vw", "-p", "te.pred", "--quiet", cwd=tmp_path).returncode == 0
    port = free_port()
    d = daemons(tmp_path, "-b", 18, "-f", "final.model", "--http-port", port, "--save-every", 100)
    wait_http(port)
    status, body = _post(port, "/learn", b"".join(x + b"\n" for x in TRAIN))
    assert status == 200 and body.splitlines() == (tmp_path / "tr.pred").read_bytes().splitlines()
    # --save-every counts HTTP's learned examples too: a snapshot of train's model (300 learned)
    assert (tmp_path / "final.model").read_bytes() == (tmp_path / "m.model").read_bytes()
    status, body = _post(port, "/predict", b"".join(x + b"\n" for x in TEST))
    assert status == 200 and body.splitlines() == (tmp_path / "te.pred").read_bytes().splitlines()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics")
    metrics = c.getresponse().read().decode()
    c.close()
    learned = [line for line in metrics.splitlines() if line.startswith("streamlearn_learned") and "{" in line]
    assert learned and float(learned[0].rsplit(" ", 1)[1]) == len(TRAIN), metrics[:2000]
    assert d.stop() == 0
    assert (tmp_path / "final.model").read_bytes() == (tmp_path / "m.model").read_bytes()


def test_http_port_errors_name_the_option(tmp_path):
    r = sl("serve", "--http-port", 70000, "--foreground", "--port", 0, cwd=tmp_path)
    assert r.returncode != 0
    assert b"--http-port 70000: a port is 0 (any free port) to 65535" in r.stderr
