"""Inputs that are not regular files (issue 24): a FIFO given as -d is read once, as a stream (the
start-up check must not open it: opening and closing a FIFO ends its writer, and the real open would
then wait forever for another); a socket is one line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from support.helpers import cli, vw_dataset, write_lines


def test_a_fifo_as_data_is_read_once_as_a_stream(tmp_path):
    data = write_lines(tmp_path / "d.vw", vw_dataset(200, seed=5))
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["/bin/sh", "-c", f"cat '{data}' > '{fifo}'"])
    try:
        run = subprocess.run([sys.executable, "-m", "streamlearn", "train", "-d", str(fifo), "-f",
                              str(tmp_path / "from_fifo")], capture_output=True, text=True, timeout=120,
                             cwd=tmp_path)
    finally:
        writer.kill()
        writer.wait()
    assert run.returncode == 0, run.stderr
    assert "number of examples = 200" in run.stderr, run.stderr
    cli("train", "-d", data, "-f", tmp_path / "from_file")      # printing rows, as the FIFO's run
    assert (tmp_path / "from_fifo").read_bytes() == (tmp_path / "from_file").read_bytes()


def test_a_socket_as_data_is_one_line(tmp_path):
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(path))
        res = cli("train", "-d", path, "--quiet", expect_ok=False)
    assert res.exit_code == 1
    assert f"cannot read {path}: it is a socket" in res.output
