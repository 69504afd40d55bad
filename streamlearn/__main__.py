"""``python -m streamlearn`` and the ``streamlearn`` console script (``run``)."""

import os
import sys


def process_defaults() -> None:
    """Settings of a command line process, made before numpy is imported: OpenBLAS starts a thread a
    core when numpy loads it (0.1 s and more of wall time on a loaded 2-core machine), and nothing a
    command runs is BLAS work that threads would speed up, so one thread unless the user set
    ``OPENBLAS_NUM_THREADS``. A Python program importing streamlearn keeps its own settings."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def run() -> None:
    process_defaults()
    from streamlearn.cli import main
    main()


if __name__ == "__main__":
    run()
