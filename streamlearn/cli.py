"""Command line: ``streamlearn train``, ``streamlearn predict`` and ``streamlearn serve``.

Thin by design: options -> a validated config (``streamlearn.config``) -> the driver. Library errors
become one-line ``click.ClickException`` messages with exit status 1. VW's spellings of options are
accepted beside ours (``--power_t``, ``--loss_function``, ``--readable_model``, ...).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import traceback

import click
from click.core import ParameterSource

from streamlearn import _cache

# Python's cyclic garbage collector would walk the objects of numba and of the package again and again
# while they are imported (about 95,000 objects, none of them garbage): it is paused for the import
# (and they are frozen at its end), and a command line process keeps it paused through its set-up
# (``_Main.main``, ``_settled``)
_GC_WAS_ON = gc.isenabled()
gc.disable()

# numba's import imports SciPy only to check its version (1.0 or later; ours needs a later one anyway):
# 12-13 ms of CPU time that a command line run does not otherwise spend, as nothing of it imports
# SciPy. It imports PyYAML (13-19 ms) only to read a ``.numba_config.yaml`` in the working directory,
# so where there is none PyYAML is hidden too. numba is imported with them hidden, and they are
# importable again right after. ``importlib.metadata`` (10-20 ms with email and the rest) is imported
# by numba only for its extensions' entry points, which a run of cached kernels never reads: numba
# keeps a stand-in that imports it on first use (``_cache.DeferredModule``), and the real module is
# the one imported again right after.
_HIDDEN = tuple(name for name in ("scipy", "yaml")
                if "numba" not in sys.modules and name not in sys.modules
                and not (name == "yaml" and os.path.isfile(".numba_config.yaml")))
_DEFERRED = tuple(name for name in ("importlib.metadata",) if "numba" not in sys.modules and name not in sys.modules)
for _name in _HIDDEN:
    sys.modules[_name] = None       # "import NAME" raises ImportError, which numba allows for both
for _name in _DEFERRED:
    sys.modules[_name] = _cache.DeferredModule(_name)
try:
    import numba  # noqa: E402,F401
finally:
    for _name in _HIDDEN:
        if sys.modules.get(_name, 0) is None:
            del sys.modules[_name]
    for _name in _DEFERRED:
        if isinstance(sys.modules.get(_name), _cache.DeferredModule):
            del sys.modules[_name]

from streamlearn._version import __version__  # noqa: E402
from streamlearn._cache import install_lazy_caches  # noqa: E402

install_lazy_caches()   # before config/learners import the kernels: numba caches built on first call
from streamlearn import config, learners  # noqa: E402
from streamlearn.errors import StreamlearnError  # noqa: E402
from streamlearn.options import INPUT_OPTIONS, SAME, declared_once  # noqa: E402
from streamlearn.serve.options import SERVE_OPTION, SERVE_OPTIONS, serve_options  # noqa: E402

FLOAT = click.FLOAT
INT = click.INT
_TYPES = {"int": INT, "float": FLOAT}


def _click_option(o):
    """The click option of a declared option (``streamlearn.options.Option``)."""
    kw = {"help": config.algo_help() if o.name == "algo" else o.help, "hidden": o.hidden}
    if o.metavar:
        kw["metavar"] = o.metavar
    default = o.default if o.cli_default is SAME else o.cli_default
    if o.kind == "multi":
        kw["multiple"] = True
    else:
        kw["default"] = default
    if o.kind == "flag":
        kw["is_flag"] = True
    elif o.kind == "choice":
        kw["type"] = click.Choice(config.option_choices(o))
    elif o.kind in _TYPES:
        kw["type"] = _TYPES[o.kind]
    return click.option(*o.flags, o.name, **kw)


def _options(declared):
    """Decorate a command with the click options of the declared options, in their order."""
    def decorate(f):
        for o in reversed(declared):
            f = _click_option(o)(f)
        return f
    return decorate


_input_options = _options(INPUT_OPTIONS)
#: serve's options: its own (section "Serving") first, then train's
_SERVE_OPTIONS = declared_once(SERVE_OPTIONS + config.OPTIONS)
#: the --help section of each option of train and serve (a learner's own: its own section)
_SECTIONS = {o.name: o.section for o in _SERVE_OPTIONS}


class _Sectioned(click.Command):
    """A command whose --help lists its options in sections (``Option.section``; a learner's own
    options under the learner's name), as VW's --help lists each reduction's."""

    def format_options(self, ctx, formatter):
        names = {s.name for s in learners.SPECS}
        groups: dict = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            section = _SECTIONS.get(param.name, "Help")
            if section in names:
                section = f"Options of --algo {section}"
            groups.setdefault(section, []).append(record)
        for title, rows in groups.items():
            with formatter.section(title):
                formatter.write_dl(rows)
        with formatter.section("The options each --algo takes"):
            formatter.write_dl([(spec.name, _takes(spec)) for spec in learners.SPECS])


def _takes(spec) -> str:
    """A learner's options for --help: their long flags, with the learner's own defaults."""
    out = []
    for name in spec.options:
        flag = next(f for f in config.OPTION[name].flags if f.startswith("--")).split("/")[0]
        out.append(f"{flag} (default {config._fmt(spec.defaults[name])})" if name in spec.defaults else flag)
    return ", ".join(out) or "none"


def _given(ctx: click.Context, values: dict) -> dict:
    """The options the user actually gave (defaults are left to the config)."""
    return {k: v for k, v in values.items()
            if ctx.get_parameter_source(k) not in (ParameterSource.DEFAULT, None)}


def _run(fn, *args):
    try:
        return fn(*args)
    except StreamlearnError as exc:
        raise click.ClickException(str(exc)) from None
    except MemoryError:
        raise click.ClickException("out of memory; try a smaller -b or --block-size") from None
    except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt, BrokenPipeError):
        raise
    except OSError as exc:  # one the library did not word itself: still one line, path and cause
        raise click.ClickException(_os_error(exc)) from None
    except Exception as exc:  # a bug: one line for users, the traceback on request
        if os.environ.get("STREAMLEARN_DEBUG"):
            traceback.print_exc()
        raise click.ClickException(
            f"internal error: {exc.__class__.__name__}: {exc} (set STREAMLEARN_DEBUG=1 for a traceback; "
            f"please report it)") from None


def _os_error(exc: OSError) -> str:
    """One line for an OS error: the path (when it has one) and the system's reason."""
    from streamlearn.io.atomic import reason
    cause = reason(exc)
    if exc.filename is not None:
        return f"cannot use {exc.filename}: {cause}"
    return f"system error: {cause}"


_PROCESS = {"set_up": False}


def _settled() -> None:
    """The command's set-up is done (imports, options, model): a command line process freezes what it
    holds so far (the garbage collector no longer walks those objects) and collects garbage again
    from now on, through a run of any length."""
    if _PROCESS["set_up"]:
        _PROCESS["set_up"] = False
        gc.freeze()
        gc.enable()


class _Main(click.Group):
    """The command group. Run as the process's command line (no ``args``: the console script or
    ``python -m streamlearn``), it ends the process once the command's output is flushed and the
    ``atexit`` handlers have run, skipping the interpreter's teardown of numba and LLVM (about
    0.15 s of a warm 10-line run: 0.69 s -> 0.53 s, fastest of 3). Called with ``args`` (click's
    test runner, the Python API) it behaves as any click group."""

    def main(self, args=None, *rest, standalone_mode=True, **kwargs):
        if args is not None or not standalone_mode or os.environ.get("STREAMLEARN_SLOW_EXIT"):
            return super().main(args, *rest, standalone_mode=standalone_mode, **kwargs)
        from streamlearn._cache import LineGuard

        _PROCESS["set_up"] = True
        gc.disable()    # until the command's set-up is done (_settled)
        if sys.stderr is not None and sys.stderr is sys.__stderr__:
            sys.stderr = LineGuard(sys.stderr)    # a first-use notice's line ends before other output
        try:
            super().main(args, *rest, standalone_mode=True, **kwargs)
            code = 0
        except SystemExit as exc:
            code = exc.code
        if not isinstance(code, int):     # sys.exit("message") semantics
            if code is not None:
                print(code, file=sys.stderr)
            code = 0 if code is None else 1
        import atexit
        try:
            sys.stdout.flush()
        except BrokenPipeError:     # "| head": the reader has what it wanted; end quietly
            code = code or 1
        except OSError as exc:      # e.g. --audit > /dev/full: say so (one line), not a silent status
            print(f"Error: cannot write standard output: {exc.strerror or exc}", file=sys.stderr)
            code = code or 1
        except ValueError:
            code = code or 1
        atexit._run_exitfuncs()
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(code)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="streamlearn")
def main():
    """Streaming sparse online learning with Vowpal Wabbit's input format and hashing."""


_DATA_FILES = click.argument("data_files", nargs=-1, metavar="[FILE]...")


@main.command(cls=_Sectioned, context_settings={"show_default": True})
@_options(config.OPTIONS)
@_DATA_FILES
@click.pass_context
def train(ctx, data_files, **values):
    """Train a model on examples read from FILE... (as VW takes them; or -d FILE...) or stdin."""
    from streamlearn.run import driver

    explicit = _given(ctx, values)
    explicit.pop("sources", None)
    values["sources"] = tuple(values["sources"]) + tuple(data_files)
    explicit["sources"] = values["sources"] or (() if values["no_stdin"] else ("-",))
    dask_only = {name: explicit.pop(name) for name in ("mix", "sync_every", "split") if name in explicit}
    address = explicit.pop("dask", None)
    if address is not None:
        _settled()
        return _train_dask(address, values, dask_only, explicit)
    if dask_only:
        raise click.ClickException(f"--{next(iter(dask_only)).replace('_', '-')} needs --dask")
    if explicit.pop("cache", False):
        if "cache_file" in explicit:
            raise click.ClickException("-c/--cache and --cache-file cannot be used together")
        first = (explicit["sources"] or ("-",))[0]
        if first == "-":
            raise click.ClickException("-c/--cache needs -d FILE; with stdin give --cache-file PATH")
        explicit["cache_file"] = first + ".cache"
    if explicit.get("block_size") is None:
        explicit.pop("block_size", None)
    if explicit.get("objective_data") is not None:
        explicit["objective"] = True
    cfg, model = _run(driver.prepare_train, explicit)
    _settled()
    _run(driver.train, cfg, model)


def _train_dask(address: str, values: dict, dask_only: dict, explicit: dict) -> None:
    """``train --dask``: the run in ``streamlearn.dask.run_cli``, which checks the options (one table of
    what a Dask run refuses, ``streamlearn.dask.UNSUPPORTED``)."""
    sources = tuple(values["sources"])
    if not sources or "-" in sources:
        raise click.ClickException("--dask needs -d FILE or -d 'GLOB' (stdin cannot be sharded)")
    try:
        sdask = importlib.import_module("streamlearn.dask")
    except ImportError:
        raise click.ClickException("--dask needs Dask: pip install 'streamlearn[dask]'") from None
    opts = {k: v for k, v in explicit.items()
            if k not in ("sources", "final_model", "quiet", "passes", "initial_model")}

    def run():
        try:
            sdask.run_cli(address, list(sources), values["passes"], dask_only.get("mix", "weighted"),
                          values["final_model"], values["quiet"], opts, split=dask_only.get("split", 1),
                          sync_every=dask_only.get("sync_every"), initial_model=explicit.get("initial_model"))
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None

    _run(run)


@main.command(context_settings={"show_default": True})
@_input_options
@click.option("-i", "--initial-model", "--initial_regressor", "initial_model", required=True,
              metavar="MODEL", help="Model file written by streamlearn train -f.")
@click.option("-p", "--predictions", default="-", metavar="PATH",
              help="Where predictions go, one line per example ('-' = stdout).")
@click.option("--link", type=click.Choice(config.LINK_NAMES), default=None,
              help="Override the model's link function.")
@click.option("--binary/--no-binary", default=None, help="Override the model's --binary.")
@click.option("--probabilities", is_flag=True, default=False,
              help="A multiclass model: write each class's probability (k:p ...) instead of the class.")
@click.option("--scores", is_flag=True, default=False,
              help="A multiclass model: write each class's score (k:s ...) instead of the class.")
@_DATA_FILES
def predict(sources, format, quiet, strict, block_size, threads, initial_model, predictions, link, binary,
            probabilities, scores, data_files):
    """Predict with a saved model on FILE... (or -d FILE..., or stdin); hashing options come from the model."""
    from streamlearn.run import driver
    from streamlearn.config import predict_config

    sources = tuple(sources) + tuple(data_files)
    options = dict(initial_model=initial_model, sources=sources or ("-",), format=format,
                   predictions=predictions, link=link, binary=binary, quiet=quiet, strict=strict,
                   probabilities=probabilities, scores=scores)
    if block_size is not None:
        options["block_size"] = block_size
    if threads is not None:
        options["threads"] = threads
    cfg = _run(lambda: predict_config(**options))
    _settled()
    _run(driver.predict, cfg)


@main.command(cls=_Sectioned, context_settings={"show_default": True})
@_options(_SERVE_OPTIONS)
@click.pass_context
def serve(ctx, **values):
    """Serve models over VW's daemon protocol: examples in, predictions out, learning as they come."""
    _settled()
    from streamlearn.serve.daemon import serve as run_serve

    opts = _run(serve_options, values)
    explicit = _given(ctx, {k: v for k, v in values.items() if k not in SERVE_OPTION})
    explicit.pop("sources", None)
    explicit["sources"], explicit["no_stdin"] = (), True
    _run(run_serve, explicit, opts)


@main.command("warm-up")
def warm_up():
    """Compile every kernel now (the first run otherwise compiles those it needs, about 1 s each).

    Trains and predicts with every learner, with one-against-all, and reads both input formats, on a
    few examples. Idempotent: with the kernels cached it only loads them."""
    _settled()
    from streamlearn.run import warmup

    _run(warmup.warm_up, lambda argv: main.main(argv, standalone_mode=False))


if _GC_WAS_ON:
    # the command tree is built: collect again (a command line process pauses it anew), with the objects
    # made so far frozen (modules, functions, types: they live as long as the process), or the next
    # allocation would start a collection walking all of them (about 95,000: 30 ms of CPU time)
    gc.freeze()
    gc.enable()

if __name__ == "__main__":
    main()
