"""Probe of issue 24's outputs and environment: what each output option does with a device node, a
directory or a socket as its target, with a file-size limit (EFBIG) or a full disk (ENOSPC) under it,
and what kill -9 during a large ``-f`` save leaves behind.

    python bench/probe_outputs.py [--tree DIR] [--kills N]

``--tree DIR`` runs the streamlearn package found in DIR (PYTHONPATH=DIR), e.g. an export of an older
commit, to compare. Needs root (``os.mknod``); every node, file and directory is made under a fresh
temporary directory, never in /dev. Prints the counts: tried, clean (exit 0 through a null device or
exactly one ``Error:`` line naming the target), crash (a signal), clobbered (the target's type or
device numbers changed), internal (an "internal error" or a traceback), silent (anything else)."""

from __future__ import annotations

import argparse
import os
import random
import resource
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUTS = [("-f", ""), ("--readable-model", ""), ("--invert-hash", ""), ("--trace", ""), ("--plot", ".png"),
           ("-p", ""), ("--cache-file", "")]


def _extra(opt: str) -> list[str]:
    return {"--cache-file": ["--passes", "2"], "--trace": ["--trace-every", "10"]}.get(opt, [])


class Counts(dict):
    def __init__(self):
        super().__init__(tried=0, clean=0, crash=0, clobbered=0, internal=0, silent=0)

    def judge(self, label, r, must_name, ok_exit0=False, clobbered=False):
        err = r.stderr.decode(errors="replace")
        errors = [line for line in err.splitlines() if line.startswith("Error")]
        self["tried"] += 1
        if r.returncode < 0:
            kind = "crash"
        elif clobbered:
            kind = "clobbered"
        elif "internal error" in err or "Traceback" in err:
            kind = "internal"
        elif (ok_exit0 and r.returncode == 0) or (r.returncode == 1 and len(errors) == 1 and must_name in errors[0]):
            kind = "clean"
        else:
            kind = "silent"
        self[kind] += 1
        if kind != "clean":
            print(f"  {kind:9s} {label}: exit {r.returncode} {errors[-1:] or ''}")


def probe_targets(run, data, work) -> Counts:
    c = Counts()
    for kind, dev in (("null", (1, 3)), ("full", (1, 7)), ("directory", None), ("socket", None)):
        for opt, suffix in OUTPUTS:
            d = tempfile.mkdtemp(dir=work)
            target = os.path.join(d, "t" + suffix)
            sock = None
            if dev:
                os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(*dev))
            elif kind == "directory":
                os.mkdir(target)
            else:
                sock = socket.socket(socket.AF_UNIX)
                sock.bind(target)
            before = os.lstat(target)
            r = run(["train", "-d", data, "--quiet", opt, target] + _extra(opt))
            after = os.lstat(target)
            changed = stat.S_IFMT(after.st_mode) != stat.S_IFMT(before.st_mode) or after.st_rdev != before.st_rdev
            c.judge(f"{kind} {opt}", r, target, ok_exit0=kind == "null", clobbered=changed)
            if sock is not None:
                sock.close()
    return c


def probe_environment(run, data, work) -> Counts:
    c = Counts()

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (256, 256))

    for opt, suffix in OUTPUTS:
        target = os.path.join(tempfile.mkdtemp(dir=work), "t" + suffix)
        c.judge(f"EFBIG {opt}", run(["train", "-d", data, "--quiet", opt, target] + _extra(opt), preexec_fn=limit),
                target)
    node = os.path.join(tempfile.mkdtemp(dir=work), "full")
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    for extra in (["--audit"], ["-p", "-"]):
        with open(node, "wb") as out:
            c.judge(f"ENOSPC stdout {' '.join(extra)}", run(["train", "-d", data, "--quiet"] + extra, stdout=out),
                    "standard output")
    return c


def probe_kills(run, work, kills: int) -> str:
    d = tempfile.mkdtemp(dir=work)
    rng = np.random.default_rng(0)
    big = os.path.join(d, "big.vw")
    ids = rng.integers(0, 1 << 22, size=(20000, 40))
    with open(big, "w") as f:
        for row, label in zip(ids, rng.choice([-1, 1], size=ids.shape[0])):
            f.write(f"{label} | " + " ".join(map(str, row)) + "\n")
    target = os.path.join(d, "big.model")
    args = ["train", "-d", big, "-b", "22", "--quiet", "-f", target]
    sys.path.insert(0, ROOT)
    from streamlearn.io.model_file import parse_model
    pick = random.Random(1)
    partial = during = 0
    for _ in range(kills):
        before = set(os.listdir(d))
        p = run(args, wait=False)
        while p.poll() is None:     # kill 0-60 ms after its temporary file appears (the save)
            if any(n.endswith(".part") for n in set(os.listdir(d)) - before):
                time.sleep(pick.uniform(0.0, 0.06))
                break
            time.sleep(0.001)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            during += 1
        p.wait()
        if os.path.exists(target):
            try:
                parse_model(open(target, "rb").read(), target)
            except Exception:
                partial += 1
    stray = [n for n in os.listdir(d) if n.endswith(".part")]
    size = sum(os.path.getsize(os.path.join(d, n)) for n in stray)
    run(args)
    after = [n for n in os.listdir(d) if n.endswith(".part")]
    return (f"{kills} runs, {during} killed during their save: {partial} partial models; {len(stray)} temporary "
            f"files ({size / 1e6:.0f} MB) before the next run, {len(after)} after it")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", default=ROOT, help="directory holding the streamlearn package to probe")
    ap.add_argument("--kills", type=int, default=12)
    a = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=os.path.abspath(a.tree))
    cwd = tempfile.gettempdir()     # not the checkout: "python -m" puts the working directory first

    def run(args, wait=True, stdout=subprocess.DEVNULL, preexec_fn=None):
        cmd = [sys.executable, "-m", "streamlearn"] + [str(x) for x in args]
        if not wait:
            return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
        return subprocess.run(cmd, env=env, stdout=stdout, stderr=subprocess.PIPE, preexec_fn=preexec_fn,
                              timeout=600, cwd=cwd)

    data = os.path.join(ROOT, "data", "samples", "sparse.train.vw")
    with tempfile.TemporaryDirectory(prefix="probe-outputs-") as work:
        print("targets (null and full devices, a directory, a socket) x", [o for o, _ in OUTPUTS])
        print("  ", dict(probe_targets(run, data, work)))
        print("file-size limit on every output, full disk under stdout (--audit, -p -)")
        print("  ", dict(probe_environment(run, data, work)))
        print("kill -9 during -f saves of a 20 MB model")
        print("  ", probe_kills(run, work, a.kills))


if __name__ == "__main__":
    main()
