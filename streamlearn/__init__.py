"""streamlearn: a Vowpal-Wabbit-style streaming learner for sparse online learning with L1 sparsity."""

__version__ = "0.1.0"

from streamlearn._cache import check_cache as _check_cache  # noqa: E402

_check_cache()
