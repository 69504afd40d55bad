"""What the reproduction scripts (bench/repro_*.py) share: progress with a time estimate, and a line
describing the machine and the commit a report was made on."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class Progress:
    """Runs of a known count. On a terminal, a bar redrawn in place on stderr with the runs done, the
    time so far and the ETA (the mean time per run so far times the runs left); otherwise a line every
    ``every`` runs (and at the last)."""

    def __init__(self, total: int, what: str = "", every: int = 10):
        self.total, self.what, self.every = max(int(total), 1), what, every
        self.done, self.start = 0, time.time()
        self.tty = sys.stderr.isatty()

    def step(self, label: str = "") -> None:
        self.done += 1
        spent = time.time() - self.start
        left = spent / self.done * (self.total - self.done)
        msg = (f"{self.what} {self.done}/{self.total} {label[:40]} {spent:.0f} s so far, "
               f"ETA {int(left) // 60}:{int(left) % 60:02d}")
        if self.tty:
            bar = "#" * int(30 * self.done / self.total)
            end = "\n" if self.done >= self.total else ""
            sys.stderr.write(f"\r[{bar:<30}] {msg:<100}{end}")
            sys.stderr.flush()
        elif self.done % self.every == 0 or self.done >= self.total:
            print(msg, file=sys.stderr, flush=True)


def machine() -> str:
    """Cores, CPU model, load averages, Python and NumPy versions, and the repository's commit."""
    import numpy as np

    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                text=True).stdout.strip() or "?"
    except OSError:
        commit = "?"
    return (f"{os.cpu_count()} cores ({cpu}), load {'/'.join(f'{x:.2f}' for x in os.getloadavg())}, "
            f"Python {platform.python_version()}, NumPy {np.__version__}, repo commit {commit}")
