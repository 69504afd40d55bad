"""What the tests share (on pytest's ``pythonpath``, pyproject.toml): test modules import from here and
never from one another.

* ``helpers``: the CLI in-process, small generated VW data, models and predictions read back;
* ``cli_checks``: the train / -i / predict round trip every learner passes;
* ``kernels``: a learner's compiled block kernel run directly (settings, state, counters, finalize);
* ``streams``: random example streams (hypothesis strategies and seeded ones) and the update rules;
* ``reference``, ``reference_eg``, ``reference_smidas``: slow dense NumPy references of the kernels;
* ``objective``: the ``--objective`` report's line and the loss recomputed in NumPy;
* ``compare``: ``allclose``, the tolerance the kernel-vs-reference tests compare arrays with.
"""
