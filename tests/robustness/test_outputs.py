"""Outputs (issue 24): a device, FIFO or socket given as an output is never replaced by a regular file,
every OS error on an output is one line naming the path and the cause, temporary files of killed
saves are removed by the next successful save, and a kill -9 never leaves a partial model.

Device nodes are made with ``os.mknod`` in a temporary directory (root only; skipped otherwise): the
machine's own /dev is never written to."""

from __future__ import annotations

import fcntl
import os
import random
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from support.helpers import cli, vw_dataset, write_lines
from streamlearn.errors import ModelError, StreamlearnError
from streamlearn.io import atomic
from streamlearn.io.model_file import load_model, parse_model

NULL = (1, 3)
FULL = (1, 7)
STREAMLEARN = [sys.executable, "-m", "streamlearn"]

#: every output option of train, with a file name it accepts
OUTPUTS = [("-f", "out"), ("--readable-model", "out"), ("--invert-hash", "out"), ("--trace", "out"),
           ("--plot", "out.png"), ("-p", "out")]


def _node(path: Path, dev) -> Path:
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(*dev))
    except (PermissionError, AttributeError, OSError) as exc:
        pytest.skip(f"cannot make a device node here ({exc})")
    return path


def _is_device(path: Path, dev) -> bool:
    st = os.lstat(path)
    return stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == dev[0] and os.minor(st.st_rdev) == dev[1]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_lines(tmp_path_factory.mktemp("data") / "train.vw", vw_dataset(300, seed=3))


def _error_line(res) -> str:
    """The one error line of a failed run (and that it is the only "Error" line, not a bug's)."""
    text = res.output
    errors = [line for line in text.splitlines() if line.startswith("Error")]
    assert len(errors) == 1, text
    assert "internal error" not in text and "Traceback" not in text, text
    return errors[0]


def test_a_null_device_given_to_every_output_is_still_that_device(tmp_path, data):
    """-f /dev/null is "no model": each output writes through the node; none is renamed over it."""
    nodes = {opt: _node(tmp_path / f"null{i}{Path(name).suffix}", NULL) for i, (opt, name) in enumerate(OUTPUTS)}
    args = ["train", "-d", data, "--quiet"]
    for opt, node in nodes.items():
        args += [opt, node]
    cli(*args)
    for opt, node in nodes.items():
        assert _is_device(node, NULL), opt
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(n.name for n in nodes.values())


@pytest.mark.parametrize("opt,name", OUTPUTS)
def test_a_full_device_is_one_line_naming_the_path(tmp_path, data, opt, name):
    node = _node(tmp_path / f"full{Path(name).suffix}", FULL)
    res = cli("train", "-d", data, "--quiet", opt, node, expect_ok=False)
    assert res.exit_code == 1
    line = _error_line(res)
    assert str(node) in line and "No space left on device" in line, line
    assert _is_device(node, FULL)


def test_a_device_as_cache_file_is_refused_and_kept(tmp_path, data):
    node = _node(tmp_path / "cache", NULL)
    res = cli("train", "-d", data, "--quiet", "--passes", "2", "--cache-file", node, expect_ok=False)
    assert res.exit_code == 1
    assert str(node) in _error_line(res)
    assert _is_device(node, NULL)
    assert os.listdir(tmp_path) == ["cache"]


@pytest.mark.parametrize("opt,name", OUTPUTS)
def test_a_directory_or_socket_target_is_refused_and_kept(tmp_path, data, opt, name):
    folder = tmp_path / f"dir{Path(name).suffix}"
    folder.mkdir()
    res = cli("train", "-d", data, "--quiet", opt, folder, expect_ok=False)
    assert res.exit_code == 1
    assert str(folder) in _error_line(res)
    assert folder.is_dir() and not any(folder.iterdir())
    sock_path = tmp_path / f"s{Path(name).suffix}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(sock_path))
        res = cli("train", "-d", data, "--quiet", opt, sock_path, expect_ok=False)
    assert res.exit_code == 1
    assert str(sock_path) in _error_line(res)
    assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)


@pytest.mark.parametrize("opt", ["-f", "--readable-model", "-p"])
def test_a_missing_directory_is_one_line(tmp_path, data, opt):
    target = tmp_path / "no" / "such" / "out"
    res = cli("train", "-d", data, "--quiet", opt, target, expect_ok=False)
    assert res.exit_code == 1
    line = _error_line(res)
    assert str(target) in line and ("does not exist" in line or "No such file" in line), line


def test_a_fifo_target_is_written_through(tmp_path, data):
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    got = []

    def reader():
        with open(fifo, "rb") as f:
            got.append(f.read())

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    cli("train", "-d", data, "--quiet", "-f", fifo)
    t.join(timeout=30)
    assert not t.is_alive() and got, "the model did not go through the FIFO"
    header, index, rows = parse_model(got[0], "fifo")
    assert index.shape[0] > 0
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_target_keeps_the_link_and_replaces_its_file(tmp_path, data):
    real = tmp_path / "real.model"
    real.write_bytes(b"old")
    os.chmod(real, 0o640)
    link = tmp_path / "link.model"
    link.symlink_to(real)
    cli("train", "-d", data, "--quiet", "-f", link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    load_model(str(real))
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640      # an existing file keeps its mode
    assert sorted(os.listdir(tmp_path)) == ["link.model", "real.model"]


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_temporary_files_of_the_target_only_are_removed(tmp_path):
    dead = _dead_pid()
    target = tmp_path / "m.model"
    ours = tmp_path / f".m.model.{dead}.abcd_123.part"            # a killed save of this target
    keep = [tmp_path / f".m.model.{os.getpid()}.abcdefgh.part",  # a live writer
            tmp_path / f".m.model.{dead}.abcdefgh.cache",         # another kind of output
            tmp_path / f".other.{dead}.abcdefgh.part",            # another target
            tmp_path / f".m.model.{dead}.abc.part",               # not our pattern
            tmp_path / f"m.model.{dead}.abcdefgh.part",
            tmp_path / ".tmp-abcdefgh.part",                      # an older version's name: not ours to judge
            tmp_path / f".m.model.{dead}.zzzzzzzz.part"]          # locked: a writer in another pid namespace
    for p in [ours] + keep:
        p.write_bytes(b"x")
    link = tmp_path / f".m.model.{dead}.llllllll.part"            # a symlink with our name: not a file of ours
    link.symlink_to(tmp_path / f".other.{dead}.abcdefgh.part")
    keep.append(link)
    fd = os.open(keep[-2], os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        atomic.write_atomic(str(target), [b"new"], "model", ModelError)
    finally:
        os.close(fd)
    assert target.read_bytes() == b"new"
    assert not ours.exists()
    assert all(os.path.lexists(p) for p in keep)
    # a failed write removes nothing and leaves no file of its own
    (tmp_path / f".m.model.{dead}.qqqqqqqq.part").write_bytes(b"x")
    with pytest.raises(RuntimeError):
        atomic.write_atomic(str(target), _failing())
    assert (tmp_path / f".m.model.{dead}.qqqqqqqq.part").exists()
    assert target.read_bytes() == b"new"


def _failing():
    yield b"part"
    raise RuntimeError("boom")


def test_os_errors_are_one_line_with_path_and_cause(tmp_path, monkeypatch):
    def denied(*a, **k):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(atomic.tempfile, "mkstemp", denied)
    with pytest.raises(ModelError, match=r"^cannot write model .*m\.model: Permission denied$"):
        atomic.write_atomic(str(tmp_path / "m.model"), [b"x"], "model", ModelError)
    with pytest.raises(StreamlearnError, match=r"is a directory$"):
        atomic.write_atomic(str(tmp_path), [b"x"])


def test_a_cache_build_removes_stale_cache_temporaries(tmp_path, data):
    dead = _dead_pid()
    stale = tmp_path / f".c.cache.{dead}.abcdefgh.cache"
    stale.write_bytes(b"x")
    cli("train", "-d", data, "--quiet", "--passes", "2", "--cache-file", tmp_path / "c.cache")
    assert sorted(os.listdir(tmp_path)) == ["c.cache"]


def _big_data(path: Path, n: int = 8000, k: int = 40) -> Path:
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 1 << 22, size=(n, k))
    labels = rng.choice([-1, 1], size=n)
    with open(path, "w") as f:
        for i in range(n):
            f.write(f"{labels[i]} | " + " ".join(map(str, ids[i])) + "\n")
    return path


def test_kill_9_during_a_large_save_never_leaves_a_partial_model(tmp_path):
    """Runs saving a model of ~300k rows are killed at random moments of their save (as soon as the
    temporary file appears, plus 0-60 ms): the target is absent, the old model or a complete new one,
    and the next successful run leaves no temporary file."""
    data = _big_data(tmp_path / "big.vw")
    target = tmp_path / "big.model"
    args = STREAMLEARN + ["train", "-d", str(data), "-b", "22", "--quiet", "-f", str(target)]
    old = None
    rng = random.Random(24)
    killed = 0
    for trial in range(3):
        # a different model each time (a different learning rate), so "old" and "new" differ
        before = set(os.listdir(tmp_path))
        p = subprocess.Popen(args + ["-l", str(0.1 + 0.1 * trial)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while p.poll() is None and time.monotonic() < deadline:
            if any(n.startswith(".big.model.") for n in set(os.listdir(tmp_path)) - before):     # its save
                time.sleep(rng.uniform(0.0, 0.06))
                break
            time.sleep(0.001)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed += 1
        p.wait()
        now = target.read_bytes() if target.exists() else None
        if now != old:
            parse_model(now, "big.model")       # complete and valid, or this raises
            old = now
    leftovers = [n for n in os.listdir(tmp_path) if n.startswith(".big.model.")]
    subprocess.run(args, check=True, capture_output=True, timeout=300)
    load_model(str(target))
    assert [n for n in os.listdir(tmp_path) if n.startswith(".big.model.")] == []
    assert killed, "no run was killed during its save"
    print(f"killed {killed} of 3 runs; {len(leftovers)} temporary files left by them, 0 after the next run")


def _lines(n: int) -> bytes:
    return b"".join(b"1 | a b c\n" for _ in range(n))


@pytest.mark.parametrize("command", ["predict", "audit"])
def test_a_closed_pipe_ends_quietly(tmp_path, data, command):
    """``streamlearn predict ... | head -1``: no traceback, no error line."""
    big = tmp_path / "many.vw"
    big.write_bytes(_lines(40000))
    model = tmp_path / "m"
    cli("train", "-d", data, "--quiet", "-f", model)
    if command == "predict":
        args = STREAMLEARN + ["predict", "-i", str(model), "-d", str(big), "--quiet"]
    else:
        args = STREAMLEARN + ["train", "-d", str(big), "--quiet", "--audit"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait(timeout=120)
    assert first
    assert "Traceback" not in err and "Error" not in err and "internal" not in err, err
    assert p.returncode in (0, 1)


@pytest.mark.parametrize("opt,name", OUTPUTS)
def test_a_block_device_target_is_refused_and_kept(tmp_path, data, opt, name):
    """A block device is a disk: written through as root, -f /dev/sdX would overwrite it, so every
    output refuses it in one line (the node, made in a temporary directory, is never opened)."""
    node = tmp_path / f"disk{Path(name).suffix}"
    try:
        os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 250))
    except (PermissionError, AttributeError, OSError) as exc:
        pytest.skip(f"cannot make a device node here ({exc})")
    res = cli("train", "-d", data, "--quiet", opt, node, expect_ok=False)
    assert res.exit_code == 1
    line = _error_line(res)
    assert str(node) in line and "block device" in line, line
    st = os.lstat(node)
    assert stat.S_ISBLK(st.st_mode) and os.major(st.st_rdev) == 7 and os.minor(st.st_rdev) == 250
    assert os.listdir(tmp_path) == [node.name]


@pytest.mark.parametrize("opt,name", [o for o in OUTPUTS if o[0] != "-p"])
def test_a_target_that_will_be_refused_is_refused_before_training(tmp_path, data, opt, name):
    """A directory, or a path in a missing directory, is refused before any example is read (not
    after a long run, when the output is written)."""
    folder = tmp_path / f"dir{Path(name).suffix}"
    folder.mkdir()
    for target in (folder, tmp_path / "no" / f"out{Path(name).suffix}"):
        res = cli("train", "-d", data, opt, target, expect_ok=False)
        assert res.exit_code == 1
        line = _error_line(res)
        assert str(target) in line, line
        assert "number of examples" not in res.output and "average" not in res.output, res.output
