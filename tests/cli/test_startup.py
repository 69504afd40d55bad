"""Start-up: the command line's process exit, ``streamlearn warm-up``, and the first-use notice that
kernels are being compiled (its logic as a unit: a real cold compile takes about 30 s)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamlearn import _cache

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "samples" / "sparse.train.vw"


def _cli(*args, env=None, input=None):
    return subprocess.run([sys.executable, "-m", "streamlearn", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, **(env or {})}, input=input, timeout=600)


def test_warm_up_exits_0_and_prints_its_lines():
    r = _cli("warm-up")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].startswith("streamlearn warm-up: compiling every kernel once")
    assert any(l.strip().startswith("l1ball: ") for l in lines)
    assert lines[-1].startswith("streamlearn warm-up: done, ")
    again = _cli("warm-up")     # idempotent: everything is cached now
    assert again.returncode == 0 and again.stderr.splitlines()[-1].startswith(
        "streamlearn warm-up: done, 0 kernels compiled"), again.stderr


def test_process_exit_flushes_outputs_and_keeps_exit_codes(tmp_path):
    """The console entry ends the process without the interpreter's teardown: outputs are complete,
    exit codes and messages unchanged."""
    model = tmp_path / "m.slm"
    r = _cli("train", "-d", SAMPLE, "--quiet", "-f", model, "--readable-model", tmp_path / "m.txt")
    assert r.returncode == 0 and r.stderr == "" and model.stat().st_size > 0
    assert (tmp_path / "m.txt").read_text().count("\n") > 10
    r = _cli("predict", "-d", SAMPLE, "--quiet", "-i", model)
    n = sum(1 for line in SAMPLE.read_text().splitlines() if line.strip())
    assert r.returncode == 0 and len(r.stdout.splitlines()) == n
    slow = _cli("predict", "-d", SAMPLE, "--quiet", "-i", model, env={"STREAMLEARN_SLOW_EXIT": "1"})
    assert slow.stdout == r.stdout
    r = _cli("predict", "-i", tmp_path / "nope.slm", "-d", SAMPLE)
    assert r.returncode == 1 and r.stderr.startswith("Error: cannot read model")
    r = _cli("train", "--loss", "nope")
    assert r.returncode == 2 and "Invalid value for '--loss'" in r.stderr
    r = _cli("--help")
    assert r.returncode == 0 and "warm-up" in r.stdout


def test_module_is_cold(tmp_path):
    assert _cache.module_is_cold(str(tmp_path / "missing"), "gd.learn_block-10.py311")
    assert _cache.module_is_cold(str(tmp_path), "gd.learn_block-10.py311")      # an empty cache dir
    (tmp_path / "gd.other_kernel-99.py311.nbi").write_bytes(b"x")
    (tmp_path / "gd.other_kernel-99.py311.1.nbc").write_bytes(b"x")
    assert not _cache.module_is_cold(str(tmp_path), "gd.learn_block-10.py311")  # the module has been compiled
    assert _cache.module_is_cold(str(tmp_path), "fobos.learn_block-10.py311")   # this one not yet
    (tmp_path / "gdx.f-1.py311.nbi").write_bytes(b"x")
    assert _cache.module_is_cold(str(tmp_path), "fobos.learn_block-10.py311")


def test_first_use_notice_once_with_progress(tmp_path, monkeypatch):
    monkeypatch.setattr(_cache, "_progress", {"announced": False, "compiled": 0, "t0": 0.0, "stream": None, "open": False,
                                               "closed": False})
    monkeypatch.setattr("atexit.register", lambda fn: None)
    monkeypatch.setattr(_cache, "_counts", {"compiled": 0, "loaded": 0})     # no real compile counted
    out = io.StringIO()
    warm = tmp_path / "warm"
    warm.mkdir()
    (warm / "gd.f-1.py311.nbi").write_bytes(b"x")
    _cache.note_compiled(out)                                  # nothing announced: no dot
    assert not _cache.note_miss(str(warm), "gd.g-7.py311", out)   # a miss in a warm module: silent
    assert out.getvalue() == ""
    assert _cache.note_miss(str(tmp_path / "cold"), "gd.g-7.py311", out)
    assert out.getvalue() == _cache.COMPILE_NOTICE + " "
    assert "compiling the kernels this run needs, once" in _cache.COMPILE_NOTICE
    assert not _cache.note_miss(str(tmp_path / "cold"), "fobos.h-3.py311", out)   # once per process
    _cache.note_compiled(out)
    _cache.note_compiled(out)
    _cache._finish_notice(out)
    text = out.getvalue()
    assert text.startswith(_cache.COMPILE_NOTICE + " ..") and text.endswith(" s\n")
    assert " 2 kernels compiled in " in text and text.count("\n") == 1


def test_other_output_ends_the_notice_line(monkeypatch):
    """The CLI's stderr (LineGuard): the progress table starts on its own line after the dots."""
    monkeypatch.setattr(_cache, "_progress", {"announced": False, "compiled": 0, "t0": 0.0, "stream": None, "open": False,
                                               "closed": False})
    monkeypatch.setattr("atexit.register", lambda fn: None)
    monkeypatch.setattr(_cache, "_counts", {"compiled": 0, "loaded": 0})
    raw = io.StringIO()
    err = _cache.LineGuard(raw)
    assert _cache.note_miss("/nonexistent-cache-dir", "gd.g-7.py311", err)
    _cache.note_compiled(err)
    err.write("table\n")
    _cache.note_compiled(err)
    err.write("row\n")
    _cache._finish_notice(err)
    lines = raw.getvalue().splitlines()
    assert lines[:3] == [_cache.COMPILE_NOTICE + " .", "table", "row"]     # no dot once the table started
    assert lines[3].startswith("streamlearn: 2 kernels compiled in ") and len(lines) == 4


@pytest.mark.parametrize("stream", ["__stderr__"])
def test_notice_goes_to_the_process_stderr(stream, monkeypatch):
    """Click's test runner swaps sys.stderr: the notice writes to the process's own stderr, so the
    captured output of a command stays exactly as before."""
    monkeypatch.setattr(_cache, "_progress", {"announced": False, "compiled": 0, "t0": 0.0, "stream": None, "open": False,
                                               "closed": False})
    real = io.StringIO()
    monkeypatch.setattr(sys, stream, real)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert _cache._notice_stream() is real


def test_kernel_loader_is_installed_once():
    from numba.core import caching

    _cache.install_kernel_loader()
    first = caching.Cache.load_overload
    _cache.install_kernel_loader()
    assert caching.Cache.load_overload is first and getattr(first, "_streamlearn", False)


def test_a_cold_first_run_explains_itself(tmp_path):
    """Issue 29: a first run (an empty kernel cache: NUMBA_CACHE_DIR) prints the compile notice on its own
    line before the progress table, no dots inside the table (the second pass's holdout kernels compile
    after the table started), and a summary whose throughput excludes the compile time it reports.
    About 30-60 s: the run compiles about 55 kernels."""
    cache = tmp_path / "numba"
    cache.mkdir()
    r = _cli("train", "-d", SAMPLE, "--loss", "logistic", "--algo", "tg", "--l1", "0.0005", "--passes", "2",
             "-f", tmp_path / "m.slm", env={"NUMBA_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    notice = [i for i, l in enumerate(lines) if l.startswith(_cache.COMPILE_NOTICE)]
    header = lines.index(HEADER_FIRST)
    assert len(notice) == 1 and notice[0] < header
    assert set(lines[notice[0]][len(_cache.COMPILE_NOTICE):].strip()) == {"."}     # the notice line: dots only
    finished = lines.index("finished run")
    table = lines[header + 2:finished - 1]
    assert len(table) > 5 and all(len(l.split()) in (7, 8) and "." not in l.split()[-1] for l in table), table
    summary = dict(l.split(" = ", 1) for l in lines[finished + 1:] if " = " in l)
    said = summary["examples per second"]
    assert " (excluding the compile time: " in said and " kernels compiled on first use, cached " in said
    compiling = float(said.split("compile time: ")[1].split(" s, ")[0])
    wall = float(summary["wall time"].split()[0])
    assert 0 < compiling <= wall
    eps = float(summary["examples per second"].split()[0])
    examples = 2 * int(summary["number of examples per pass"])
    assert eps > 5 * examples / wall and abs(eps - examples / (wall - compiling)) <= 0.25 * eps
    assert lines[-1].startswith("streamlearn: ") and " kernels compiled in " in lines[-1]
    # predict with -p compiles the prediction format's kernel after its table started (make demo's second
    # step): no notice inside the table, the last line counts it
    r = _cli("predict", "-i", tmp_path / "m.slm", "-d", SAMPLE, "-p", tmp_path / "p.txt",
             env={"NUMBA_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert not any(_cache.COMPILE_NOTICE in l for l in lines[lines.index(HEADER_FIRST):]), r.stderr
    said = next(l for l in lines if l.startswith("examples per second = "))
    count = said.split("compile time: ")[1].split(" s, ")[1].split(" compiled on first use")[0]   # "2 kernels"
    assert lines[-1].startswith(f"streamlearn: {count} compiled in "), r.stderr
    warm = _cli("train", "-d", SAMPLE, "--loss", "logistic", "--algo", "tg", "--l1", "0.0005", "--passes", "2",
                env={"NUMBA_CACHE_DIR": str(cache)})
    assert warm.returncode == 0 and _cache.COMPILE_NOTICE not in warm.stderr
    assert "compile time" not in warm.stderr and "kernels compiled" not in warm.stderr


HEADER_FIRST = "average  since         example        example        current        current  current"


#: run as ``python -c PROBE ARGS...``: the command line in this process, which prints (at its exit, after
#: the command's own output) the modules it imported and the garbage collector's state, as one JSON line
MODULES_PROBE = r'''
import atexit, gc, json, os, sys
def report():
    os.write(1, ("\n" + json.dumps({"modules": sorted(sys.modules), "gc_enabled": gc.isenabled(),
                                    "frozen": gc.get_freeze_count()}) + "\n").encode())
atexit.register(report)
from streamlearn.cli import main
sys.argv = ["streamlearn"] + sys.argv[1:]
main()
'''

#: modules a plain train or predict does not need (the optional extras and what only their entrances use)
HEAVY = ("streamlearn.serve.service", "streamlearn.serve.daemon", "streamlearn.serve.tcp", "streamlearn.river",
         "streamlearn.dask", "streamlearn.plot", "streamlearn.estimators", "streamlearn.online", "streamlearn.api",
         "streamlearn.features.audit", "streamlearn.features.names", "streamlearn.batch", "streamlearn.mix",
         "river", "dask", "distributed", "matplotlib", "pandas", "sklearn", "aiohttp", "asyncio",
         "scipy", "yaml", "numba.typed.typeddict", "numba.np.arraymath", "numba.np.linalg", "importlib.metadata")


def _probe_modules(*args):
    r = subprocess.run([sys.executable, "-c", MODULES_PROBE, *map(str, args)], capture_output=True, text=True,
                       cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


def test_plain_runs_import_no_optional_module(tmp_path):
    """Start-up (issue 30): a plain train, a train with -f and a predict import none of the optional
    extras (serve, river, dask, plot, scikit-learn, pandas, matplotlib, aiohttp), SciPy (numba's import
    checks its version; the command line hides it then), PyYAML (numba reads a config file with it),
    importlib.metadata (numba's extensions' entry points, read before a compilation only) nor numba's registries (each run is made once
    first, so that its kernels are cached: a compilation sets the registries up); the probe sees a lazily imported module (--audit's) when a run needs it. The command line process
    collects garbage again after its set-up, with what the set-up imported frozen."""
    model = tmp_path / "m.slm"
    runs = [("train", "-d", SAMPLE, "--quiet"), ("train", "-d", SAMPLE, "--quiet", "-f", model),
            ("predict", "-d", SAMPLE, "--quiet", "-i", model, "-p", tmp_path / "p.txt")]
    for run in runs:
        assert _cli(*run).returncode == 0
        seen = _probe_modules(*run)
        imported = set(seen["modules"])
        assert "streamlearn.run.session" in imported and "numba" in imported
        assert not {m for m in imported if m in HEAVY or m.split(".")[0] in HEAVY}, run
        assert seen["gc_enabled"] and seen["frozen"] > 10000, run
    audit = _probe_modules("train", "-d", SAMPLE, "--quiet", "--audit", "-b", "10")
    assert "streamlearn.features.audit" in audit["modules"]


def test_importing_the_cli_leaves_the_garbage_collector_on_and_scipy_importable():
    """The command line's module pauses the collector and hides SciPy only while it is imported."""
    code = ("import gc, sys, streamlearn.cli; print(gc.isenabled(), gc.get_freeze_count(), 'scipy' in sys.modules); "
            "import scipy.sparse; print(scipy.sparse.csr_matrix((2, 3)).shape)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    enabled, frozen, scipy_seen, *shape = r.stdout.split()
    assert r.returncode == 0 and (enabled, scipy_seen, shape) == ("True", "False", ["(2,", "3)"]), r.stderr
    assert int(frozen) > 10000      # what the import made, frozen: not walked by every later collection


def test_importlib_metadata_is_deferred_only_inside_numba():
    """numba's import gets a stand-in for ``importlib.metadata`` (it reads its extensions' entry points
    with it only before a compilation); after the CLI's import the module is the real one, and numba's
    stand-in reads the real one's entry points."""
    code = ("import sys, streamlearn.cli, types; from numba.core import entrypoints as e; "
            "print('importlib.metadata' in sys.modules, type(e.importlib_metadata).__name__); "
            "import importlib.metadata as m; print(type(m) is types.ModuleType, "
            "e.importlib_metadata.entry_points is m.entry_points, sys.modules['importlib.metadata'] is m)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "DeferredModule", "True", "True", "True"], r.stdout


def test_extension_init_waits_for_a_compilation(monkeypatch):
    """A streamlearn kernel's first call does not run numba's extension init (``entrypoints.init_all``)
    ahead of loading it; its compilation still runs it (before typing its body), and other jitted
    functions keep numba's early hook."""
    import numba
    from numba.core import dispatcher, entrypoints

    _cache.install_kernel_loader()
    calls = []
    monkeypatch.setattr(entrypoints, "init_all", lambda: calls.append(1))

    def jitted(module):
        scope = {"__name__": module}
        exec("def f(x):\n    return x + 1\n", scope)
        return numba.njit(scope["f"])

    ours = jitted("streamlearn.some_kernels")
    hook = dispatcher._DispatcherBase._compilation_chain_init_hook
    assert getattr(hook, "_streamlearn", False)
    hook(ours)
    assert calls == []                      # the early hook: nothing for a streamlearn kernel
    assert ours(2) == 3 and calls           # its compilation ran the extensions' init
    calls.clear()
    theirs = jitted("someone_else")
    hook(theirs)
    assert calls == [1]


def test_a_numba_config_file_is_still_read(tmp_path):
    """PyYAML is hidden from numba's import only where the working directory has no
    ``.numba_config.yaml``: where it has one, numba reads it as without streamlearn; either way PyYAML
    is importable after."""
    pytest.importorskip("yaml")
    code = ("import sys, streamlearn.cli, numba; print(numba.config.COLOR_SCHEME, 'yaml' in sys.modules); "
            "import yaml; print(yaml.safe_load('a: 1'))")
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=600,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert plain.returncode == 0 and plain.stdout.split("\n")[:2] == ["no_color False", "{'a': 1}"], plain.stderr
    (tmp_path / ".numba_config.yaml").write_text("color_scheme: light_bg\n")
    configured = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                                timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert configured.returncode == 0 and configured.stdout.split("\n")[:2] == ["light_bg True", "{'a': 1}"], \
        configured.stderr


@pytest.mark.parametrize("env, first, threads", [({}, False, 1), ({"OPENBLAS_NUM_THREADS": "2"}, False, 2),
                                                 ({"OPENBLAS_NUM_THREADS": "2"}, True, 2)])
def test_the_command_line_runs_openblas_on_one_thread(env, first, threads):
    """The console process (``streamlearn.__main__``) asks OpenBLAS for one thread before numpy loads it
    (start-up, issue 30), unless the user set OPENBLAS_NUM_THREADS; with numpy already imported (a
    Python program) nothing changes."""
    pytest.importorskip("threadpoolctl")
    code = ("import numpy; " if first else "") + (
        "import streamlearn.__main__ as m; m.process_defaults(); import numpy, threadpoolctl; "
        "print(max(p['num_threads'] for p in threadpoolctl.threadpool_info() if p['internal_api'] == 'openblas'))")
    base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600,
                       env={**base, "PYTHONPATH": str(ROOT), **env})
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) == threads


def test_the_console_scripts_enter_through_the_process_defaults():
    import tomllib
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["streamlearn"] == "streamlearn.__main__:run"
    assert scripts["streamlearn-vw"] == "streamlearn.vwcompat:main"
    assert "process_defaults()" in (ROOT / "streamlearn" / "vwcompat.py").read_text()
