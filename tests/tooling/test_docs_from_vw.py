"""docs/from-vw.md's worked example runs as written (issue 29): its shell block, with ``bash -e``, in a
temporary directory holding the repository's data/ (``streamlearn`` and ``streamlearn-vw`` are this
Python's, so the test does not depend on the installed console scripts)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "from-vw.md"


def _shell_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_worked_example_runs_as_written(tmp_path):
    blocks = _shell_blocks(PAGE.read_text())
    assert len(blocks) == 1 and "streamlearn train" in blocks[0] and "streamlearn-vw" in blocks[0]
    work = tmp_path / "work"
    work.mkdir()
    (work / "data").symlink_to(ROOT / "data")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shims = {"streamlearn": f'exec "{sys.executable}" -m streamlearn "$@"\n',
             "streamlearn-vw": f'exec "{sys.executable}" -c "from streamlearn.vwcompat import main; main()" "$@"\n'}
    for name, body in shims.items():
        (bin_dir / name).write_text("#!/bin/sh\n" + body)
        (bin_dir / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    before = sorted(p.name for p in (ROOT / "data" / "samples").iterdir())
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", blocks[0]], cwd=work, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert sorted(p.name for p in (ROOT / "data" / "samples").iterdir()) == before    # wrote nothing there
    # what the page says to expect
    assert "options: --power_t 0.400000005960464" in r.stdout
    assert "finished run" in r.stderr and "learner = gravity" in r.stderr
    for name in ("model.slm", "model.txt", "predictions.txt", "again.slm", "model.vw", "quadratic.slm"):
        assert (work / name).stat().st_size > 0, name
    predictions = (work / "predictions.txt").read_text().split()
    assert len(predictions) == 500 and "-0" not in predictions and "-0.000000" not in predictions
    assert "line 1: " in (work / "cap.txt").read_text()
