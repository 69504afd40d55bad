"""streamlearn: a Vowpal-Wabbit-style streaming learner for sparse online learning with L1 sparsity."""

from streamlearn._version import __version__  # noqa: F401 (the package's version)

from streamlearn._cache import check_cache as _check_cache  # noqa: E402

_check_cache()

#: the public Python API, imported when first used (``import streamlearn`` compiles and prints nothing,
#: and needs neither scikit-learn nor matplotlib): name -> module
_LAZY = {
    "SparseLinearClassifier": "streamlearn.estimators",
    "SparseLinearRegressor": "streamlearn.estimators",
    "Model": "streamlearn.online",
    "VWHasher": "streamlearn.online",
    "load_csr": "streamlearn.csr",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "plot":
        import importlib
        return importlib.import_module("streamlearn.plot")
    raise AttributeError(f"module 'streamlearn' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY) + ["plot"])
