"""``streamlearn-vw``: VW's whole command line (issue 27): bare words are data files, the rest is
``streamlearn train``'s; the same run gives the same outputs as ``streamlearn train``."""

import os
import shutil
import subprocess
import sys
from pathlib import Path


from streamlearn.cli import main
from streamlearn.vwcompat import translate
from support.helpers import cli

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "data" / "samples" / "sparse.train.vw"
EXE = shutil.which("streamlearn-vw", path=os.path.dirname(sys.executable))
VW = [EXE] if EXE else [sys.executable, "-m", "streamlearn.vwcompat"]
TRAIN_CMD = main.commands["train"]


def test_bare_words_are_data_files():
    assert translate(["train.dat", "-b", "18", "-f", "m"], TRAIN_CMD) == ["-d", "train.dat", "-b", "18", "-f", "m"]
    assert translate(["-b18", "x.vw"], TRAIN_CMD) == ["-b18", "-d", "x.vw"]
    assert translate(["--bit_precision=18", "x.vw"], TRAIN_CMD) == ["--bit_precision=18", "-d", "x.vw"]
    assert translate(["--quiet", "x.vw", "--", "-odd name"], TRAIN_CMD) == [
        "--quiet", "-d", "x.vw", "-d", "-odd name"]
    # a flag takes no value: the word after it is data; an option's value is not
    assert translate(["-t", "a.vw", "-i", "m"], TRAIN_CMD) == ["-t", "-d", "a.vw", "-i", "m"]
    assert translate(["--l1", "1e-3", "a.vw"], TRAIN_CMD) == ["--l1", "1e-3", "-d", "a.vw"]


def test_daemon_runs_serve_with_vws_options():
    # --daemon is streamlearn serve (issue 28): its options are serve's, checked as serve checks them
    r = subprocess.run([*VW, "--daemon", "--port", "70000", "--num_children", "1", "--foreground", "--quiet"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.strip().count("\n") == 0 and "--port 70000" in r.stderr


def test_same_run_as_train(tmp_path):
    """``streamlearn-vw FILE ARGS`` (as a process, the console script when installed) writes the
    predictions and the model ``streamlearn train -d FILE ARGS`` writes."""
    args = ["-b", "18", "--loss_function", "logistic", "--quiet"]
    cli("train", "-d", TRAIN, *args, "-p", tmp_path / "a.pred", "-f", tmp_path / "a.model")
    r = subprocess.run([*VW, str(TRAIN), *args, "-p", str(tmp_path / "b.pred"), "-f", str(tmp_path / "b.model")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "a.pred").read_text() == (tmp_path / "b.pred").read_text()
    assert (tmp_path / "a.model").read_bytes() == (tmp_path / "b.model").read_bytes()


def test_version_and_help():
    r = subprocess.run([*VW, "--version"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "streamlearn-vw" in r.stdout
    r = subprocess.run([*VW, "-h"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "streamlearn-vw" in r.stdout and "--passes" in r.stdout
