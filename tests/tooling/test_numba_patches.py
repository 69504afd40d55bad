"""The numba internals that streamlearn/_cache.py patches, one test per patch. Each installer there
leaves numba alone when the internal it replaces is missing, so a numba that moved one would pass
everything else silently, only slower. Each test here checks that the patch is installed (the
replaced attribute is there and carries the ``_streamlearn`` mark) and that what it is for can be
seen in a fresh process: a small kernel of the ``streamlearn`` namespace (so the patches treat it as
one of streamlearn's) is compiled into a temporary directory and loaded from there. The same probe
is also run with that one patch undone, and the difference must show, so the test cannot pass on a
numba where the patch stopped having an effect.

numba is pinned below its next minor release in pyproject.toml; these tests are the check to run
before raising the pin.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import streamlearn

ROOT = Path(streamlearn.__file__).resolve().parents[1]     # the package under test, for the probes
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

#: the kernel: np.zeros and .sum are numba helpers from numba.np.arrayobj and arraymath, so its
#: cached machine code references their environments (what the _rebuild_env patch is for)
TOY = '''
import numpy as np
from numba import njit


@njit(cache=True)
def total(a):
    return np.zeros(a.shape[0]).sum() + a.sum()
'''

#: run as ``python -c PROBE <toy dir> <patches to undo, comma-separated>``; prints one JSON line
PROBE = r'''
import json, os, sys
toys, undo = sys.argv[1], set(filter(None, sys.argv[2].split(",")))
import numpy as np
import streamlearn
streamlearn.__path__.append(toys)              # the toy kernel is streamlearn.patch_toy
from streamlearn import _cache
from numba.core import caching, dispatcher, environment, utils
from numba.core.runtime import nrtdynmod
from numba.core.typing import typeof as nb_typeof

numba_own = {"lazy": dispatcher.Dispatcher.enable_caching,
             "loader": (caching.Cache.load_overload, caching.Cache.save_overload),
             "nrt": nrtdynmod.compile_nrt_functions, "env": environment._rebuild_env,
             "typeof": nb_typeof.typeof_impl.dispatch(np.ndarray), "signature": utils.pysignature,
             "extinit": dispatcher._DispatcherBase._compilation_chain_init_hook}
_cache.install_lazy_caches()
_cache.install_kernel_loader()
marked = lambda f: getattr(f, "_streamlearn", False) is True
out = {"marks": {
    "lazy": marked(dispatcher.Dispatcher.enable_caching),
    "loader": marked(caching.Cache.load_overload) and caching.Cache.save_overload is not numba_own["loader"][1],
    "nrt": marked(nrtdynmod.compile_nrt_functions),
    "env": marked(environment._rebuild_env),
    "typeof": marked(nb_typeof.typeof_impl.dispatch(np.ndarray)),
    "signature": marked(utils.pysignature),
    "extinit": marked(dispatcher._DispatcherBase._compilation_chain_init_hook)}}
if "lazy" in undo:
    dispatcher.Dispatcher.enable_caching = numba_own["lazy"]
if "loader" in undo:
    caching.Cache.load_overload, caching.Cache.save_overload = numba_own["loader"]
if "nrt" in undo:
    nrtdynmod.compile_nrt_functions = numba_own["nrt"]
if "env" in undo:
    environment._rebuild_env = numba_own["env"]
if "typeof" in undo:
    nb_typeof.typeof_impl.register(np.ndarray)(numba_own["typeof"])
if "signature" in undo:
    utils.pysignature = numba_own["signature"]
if "extinit" in undo:
    dispatcher._DispatcherBase._compilation_chain_init_hook = numba_own["extinit"]

import inspect
from numba import njit
made = []
signature_init = inspect.Signature.__init__
def counted_init(self, *args, **kwargs):
    made.append(1)
    signature_init(self, *args, **kwargs)
def two_args(a, b=1.0):
    return a + b
njit(lambda x: x)                               # the first decoration sets up numba's code generator
inspect.Signature.__init__ = counted_init
decorated = njit(two_args)                      # decorated only (no compilation)
inspect.Signature.__init__ = signature_init
out["signatures_made"] = len(made)
out["signature"] = [str(decorated._compiler.pysig), str(inspect.signature(two_args))]

nrt_built = []
numba_create = nrtdynmod.create_nrt_module
def create_nrt_module(ctx):
    nrt_built.append(1)
    return numba_create(ctx)
nrtdynmod.create_nrt_module = create_nrt_module

from numba import typeof
ma_before = "numpy.ma" in sys.modules
typeof(np.zeros(3))                             # an exact ndarray, before any kernel runs
out["typeof_imported_ma"] = "numpy.ma" in sys.modules and not ma_before

# modules that numba's registry set-up imports (and no helper of the toy does), and the helpers' own
watched = ("numba.np.polynomial", "numba.typed.typeddict", "numba.np.arrayobj")
before = {m for m in watched if m in sys.modules}
from streamlearn import patch_toy


def read_only_locator():
    """Where the read-only in-tree locator (it names numba's index file itself) finds the toy's
    kernel, were the toy directory the package (None: not found)."""
    saved = _cache._PACKAGE, _cache._memo.get("current")
    _cache._PACKAGE = _cache._memo["current"] = toys
    try:
        impl = _cache._fallback_cache_class()._impl_class
        (cls,) = [c for c in impl._locator_classes if c.__name__ == "ReadOnlyInTreeLocator"]
        found = cls.from_function(patch_toy.total.py_func, patch_toy.__file__)
        return found and found.get_cache_path()
    finally:
        _cache._PACKAGE, _cache._memo["current"] = saved


out["read_only_before"] = read_only_locator()
out["cache_at_import"] = type(patch_toy.total._cache).__name__
out["pycache_at_import"] = os.path.isdir(os.path.join(toys, "__pycache__"))
out["value"] = patch_toy.total(np.arange(4.0))
from numba.core import entrypoints
out["extensions_initialized"] = entrypoints._already_initialized
out["imported"] = sorted(m for m in watched if m in sys.modules and m not in before)
out["counts"] = dict(_cache._counts)
out["nrt_built"] = len(nrt_built)
real = patch_toy.total._cache
real = getattr(real, "_real", real)
out["cache_class"] = type(real).__name__
out["cache_path"] = getattr(real, "_cache_path", None)
from numba.core.registry import cpu_target
out["nrt_file"] = os.path.isfile(_cache._nrt_cache_file(cpu_target.target_context.codegen()))
out["read_only_after"] = read_only_locator()

from numba.core import errors
arrays = {"C": np.zeros(3), "F": np.zeros((2, 3), order="F"), "A": np.zeros((4, 4))[::2, 1:],
          "int32": np.zeros(2, np.int32), "bool": np.zeros(2, bool)}
ro = np.zeros(3)
ro.flags.writeable = False
arrays["readonly"] = ro
out["typeof"] = {k: str(typeof(v)) for k, v in arrays.items()}
try:
    typeof(np.ma.masked_array([1.0, 2.0]))
    out["masked"] = "typed"
except errors.NumbaTypeError as exc:
    out["masked"] = str(exc)
print(json.dumps(out))
'''


def _toys(directory: Path) -> Path:
    directory.mkdir()
    (directory / "patch_toy.py").write_text(TOY)
    return directory


def _probe(toys: Path, undo: str = "") -> tuple[dict, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    for name in ("NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES", "NUMBA_DISABLE_JIT"):
        env.pop(name, None)
    res = subprocess.run([sys.executable, "-c", PROBE, str(toys), undo], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.splitlines()[-1]), res.stderr


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A toy directory whose kernel a first probe (every patch installed) compiled and saved; the
    probes that load it again, by the patch they undo, run once each."""
    toys = _toys(tmp_path_factory.mktemp("patches") / "warm")
    first = _probe(toys)
    runs = {}

    def load(undo=""):
        if undo not in runs:
            runs[undo] = _probe(toys, undo)[0]
        return runs[undo]

    return toys, first, load


def test_all_patches_install_on_this_numba(warm):
    """Every installer found the internal it replaces (none fell back to numba's own behaviour)."""
    _, (first, _), _ = warm
    assert first["marks"] == {"lazy": True, "loader": True, "nrt": True, "env": True, "typeof": True,
                              "signature": True, "extinit": True}
    assert first["value"] == 6.0


def test_lazy_caches_build_a_kernels_cache_at_its_first_call(tmp_path, warm):
    """``Dispatcher.enable_caching``: ``@njit(cache=True)`` leaves a placeholder at import, and the
    cache (with its directory check, which creates ``__pycache__``) is built at the first call."""
    toys, (first, _), _ = warm
    assert first["cache_at_import"] == "_LazyCache" and not first["pycache_at_import"]
    assert first["cache_class"] == "StreamlearnFunctionCache"
    assert first["cache_path"] == str(toys / "__pycache__")
    numba_own, _ = _probe(_toys(tmp_path / "fresh"), "lazy")
    assert numba_own["cache_at_import"] != "_LazyCache" and numba_own["pycache_at_import"]


def test_a_decorated_function_computes_its_signature_once(warm):
    """``numba.core.utils.pysignature``: the dispatcher's and its compiler's ``inspect.signature`` of a
    function being decorated are one computation (numba's own makes two), and the compiler holds the
    function's signature."""
    _, _, load = warm
    ours, numba_own = load(), load("signature")
    assert ours["signatures_made"] == 1 and numba_own["signatures_made"] == 2
    assert ours["signature"] == numba_own["signature"] == ["(a, b=1.0)", "(a, b=1.0)"]


def test_kernel_loader_loads_without_numbas_registries_and_counts_compilations(warm):
    """``Cache.load_overload`` / ``save_overload``: a compilation is counted and announced once; a
    cached kernel is loaded without the registry set-up (numba.np.polynomial, numba.typed and the rest
    not imported)."""
    _, (first, err), load = warm
    assert first["counts"] == {"compiled": 1, "loaded": 0}
    assert "compiling the kernels this run needs, once" in err and "1 kernel compiled" in err
    ours = load()
    assert ours["counts"] == {"compiled": 0, "loaded": 1} and ours["value"] == 6.0
    assert "numba.np.polynomial" not in ours["imported"] and "numba.typed.typeddict" not in ours["imported"]
    numba_own = load("loader")
    assert numba_own["counts"] == {"compiled": 0, "loaded": 0} and numba_own["value"] == 6.0
    assert "numba.np.polynomial" in numba_own["imported"] and "numba.typed.typeddict" in numba_own["imported"]


def test_nrt_cache_loads_numbas_runtime_instead_of_compiling_it(warm):
    """``nrtdynmod.compile_nrt_functions``: the runtime's helper module is compiled once into a file
    next to the kernels, and later processes load it (``create_nrt_module`` not called)."""
    _, (first, _), load = warm
    assert first["nrt_file"]
    ours = load()
    assert ours["nrt_built"] == 0 and ours["value"] == 6.0
    assert load("nrt")["nrt_built"] == 1


def test_env_rebuild_does_not_import_numbas_helper_modules(tmp_path, warm):
    """``environment._rebuild_env``: loading a cached kernel rebuilds the environments of the numba
    helpers in it (np.zeros: numba.np.arrayobj) without importing their modules. The kernel's cache
    holds the function that rebuilds them as saved (numba pickles the patched one by value), so the
    control saves and loads without the patch."""
    _, _, load = warm
    ours = load()
    assert "numba.np.arrayobj" not in ours["imported"] and ours["value"] == 6.0
    toys = _toys(tmp_path / "unpatched_env")
    _probe(toys, "env")
    numba_own, _ = _probe(toys, "env")
    assert numba_own["counts"]["loaded"] == 1 and "numba.np.arrayobj" in numba_own["imported"]


def test_ndarray_typeof_skips_the_masked_array_question(warm):
    """``typeof_impl`` for ``np.ndarray``: an exact ndarray is typed without importing numpy.ma, and
    to the same types as numba's rule (layouts, dtypes, read-only); a masked array still goes to numba's
    rule, which refuses it."""
    _, _, load = warm
    ours, numba_own = load(), load("typeof")
    assert ours["typeof_imported_ma"] is False
    assert numba_own["typeof_imported_ma"] is True
    assert ours["typeof"] == numba_own["typeof"]
    assert ours["typeof"]["C"] == "array(float64, 1d, C)" and ours["typeof"]["F"] == "array(float64, 2d, F)"
    assert ours["typeof"]["A"] == "array(float64, 2d, A)" and ours["typeof"]["readonly"].startswith("readonly")
    assert "MaskedArray" in ours["masked"] and ours["masked"] == numba_own["masked"]


def test_extension_init_waits_for_a_compilation(warm):
    """``_compilation_chain_init_hook``: a streamlearn kernel loaded from the cache does not run numba's
    extension init (``entrypoints.init_all``: importlib.metadata and a scan of every installed
    distribution); its compilation (the first probe) still runs it, and numba's own hook runs it on the
    first call."""
    _, (first, _), load = warm
    ours, numba_own = load(), load("extinit")
    assert first["extensions_initialized"] is True and first["counts"]["compiled"] == 1
    assert ours["extensions_initialized"] is False and ours["counts"]["loaded"] == 1
    assert numba_own["extensions_initialized"] is True and numba_own["counts"]["loaded"] == 1


def test_read_only_locator_names_numbas_index_file(warm):
    """The read-only in-tree locator (an install warmed up by its owner) predicts the name of numba's
    index file (``<module>.<qualname>-<line>.pyXY.nbi``): it finds the toy's kernel once compiled, and
    nothing before."""
    toys, (first, _), _ = warm
    assert first["read_only_before"] is None
    assert first["read_only_after"] == str(toys / "__pycache__")
    assert any(p.name.startswith("patch_toy.total-") and p.suffix == ".nbi" for p in (toys / "__pycache__").iterdir())


def test_numba_is_within_the_pinned_range():
    """The patches are written for the numba versions pyproject.toml admits, which has an upper bound."""
    import numba
    text = PYPROJECT.read_text()
    low, high = re.search(r'"numba>=([\d.]+),<([\d.]+)"', text).groups()
    version = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", numba.__version__).groups())
    assert tuple(map(int, low.split(".")[:2])) <= version < tuple(map(int, high.split(".")[:2]))
