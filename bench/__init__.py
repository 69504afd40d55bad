"""streamlearn's benchmarks and reproductions: one harness (``bench/harness.py``, with the data cache in
``bench/data.py`` and timing and peers in ``bench/timing.py``) and the cases registered to it, one module
each in ``bench/cases/``. Run from the repository root: ``python -m bench list``,
``python -m bench run CASE [ARGS]``, ``python -m bench suite bench`` (``make bench``) or
``python -m bench suite repro`` (``make repro``)."""
