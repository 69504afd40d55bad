"""streamlearn's benchmarks and reproductions: one harness and the cases registered to it.

* ``bench/harness.py``: ``Case``, ``Context``, ``Section``, the shared arguments, the machine facts,
  progress, the suites; ``bench/data.py``: the data cache; ``bench/timing.py``: timing and the peers (VW).
* ``bench/cases/NAME.py``: one case each (``bench_core.py`` became ``cases/core.py``, and so on).

Run from the repository root: ``python -m bench list``, ``python -m bench run CASE [ARGS]``,
``python -m bench suite bench`` (``make bench``) or ``python -m bench suite repro`` (``make repro``).

A new case is one module in ``bench/cases/``: a docstring (its first paragraph is the case's summary),
``arguments(ap)`` (``harness.shared(ap, "out", ...)`` for the shared ones), ``run(args, ctx)`` and
``CASE = Case("NAME", arguments, run, __doc__)``; ``list`` and ``run`` find it by itself. Its results go
between its markers with ``Section("KEY").write(path, text)``. Shared code comes from the harness's
modules, never from another case.
"""
