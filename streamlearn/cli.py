"""Command line: ``streamlearn train`` and ``streamlearn predict``.

Thin by design: options -> a validated config (``streamlearn.config``) -> the driver. Library errors
become one-line ``click.ClickException`` messages with exit status 1. VW's spellings of options are
accepted beside ours (``--power_t``, ``--loss_function``, ``--readable_model``, ...).
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback

import click
from click.core import ParameterSource

from streamlearn._version import __version__
from streamlearn._cache import install_lazy_caches

install_lazy_caches()   # before config/learners import the kernels: numba caches built on first call
from streamlearn.config import (  # noqa: E402
    ALGO_NAMES, CD_ORDERS, CD_STEPS, FORMAT_NAMES, HASH_NAMES, LINK_NAMES, LOSS_NAMES, PROJECTION_NAMES,
    REG_NAMES,
)
from streamlearn.errors import StreamlearnError  # noqa: E402

FLOAT = click.FLOAT
INT = click.INT


def _input_options(f):
    f = click.option("--threads", type=INT, default=None, metavar="N",
                     help="Threads parsing the input (default: the cores less one, at least 1); "
                          "the results do not depend on it.")(f)
    f = click.option("--block-size", type=INT, default=None, hidden=True,
                     help="Bytes per parsed block (testing).")(f)
    f = click.option("--strict", is_flag=True, default=False,
                     help="Stop with an error at the first malformed line.")(f)
    f = click.option("--quiet", is_flag=True, default=False,
                     help="No preamble, progress table or summary (warnings still print).")(f)
    f = click.option("--format", "format", type=click.Choice(FORMAT_NAMES), default="auto",
                     show_default=True, help="Input format; auto decides from each file's first data line.")(f)
    f = click.option("-d", "--data", "sources", multiple=True, metavar="FILE",
                     help="Input file (repeatable; .gz/.bz2/.xz decompressed; '-' = stdin). Default: stdin.")(f)
    return f


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


@main.command(context_settings={"show_default": True})
@_input_options
@click.option("-b", "--bits", "--bit_precision", "bits", type=INT, default=18,
              help="Number of hash bits: the model has 2^b weights.")
@click.option("--noconstant", is_flag=True, default=False, help="No constant (bias) feature.")
@click.option("--hash", "hash", type=click.Choice(HASH_NAMES), default="strings",
              help="strings: purely numeric names are their own hash (VW); all: murmur every name.")
@click.option("--hash-seed", "--hash_seed", "hash_seed", type=INT, default=0, help="Seed of the feature hash.")
@click.option("--loss", "--loss-function", "--loss_function", "loss",
              type=click.Choice(LOSS_NAMES), default="squared",
              help="Loss function. Logistic and hinge read labels > 0 as positive, <= 0 as negative; "
                   "softmax (with --oaa K): multinomial logistic regression over the K classes.")
@click.option("--oaa", "oaa", type=INT, default=0, metavar="K",
              help="K classes, labels 1..K: one-against-all over the binary learner (VW's --oaa), or "
                   "with --loss softmax one multinomial model.")
@click.option("--indexing", "indexing", type=INT, default=None,
              help="--oaa labels are 0..K-1 (0) or 1..K (1); default: detected while learning, as VW does.")
@click.option("--probabilities", is_flag=True, default=False,
              help="--oaa: write each class's probability (k:p ...) instead of the class.")
@click.option("--scores", is_flag=True, default=False,
              help="--oaa: write each class's score (k:s ...) instead of the class.")
@click.option("-r", "--raw-predictions", "--raw_predictions", "raw_predictions", default=None, metavar="PATH",
              help="--oaa: write each class's raw score (' 1:s1 2:s2 ...', VW's -r).")
@click.option("--quantile-tau", "--quantile_tau", "quantile_tau", type=FLOAT, default=0.5,
              help="Quantile of --loss quantile.")
@click.option("--algo", type=click.Choice(ALGO_NAMES), default=None,
              help="Learner: sgd (no regularization), tg (truncated gradient), fobos (forward-backward "
                   "splitting), l1ball (projected SGD onto the L1 ball), eg (exponentiated gradient), "
                   "smidas (stochastic mirror descent made sparse), rounding (SGD with coefficient "
                   "rounding), subgradient (L1-regularized subgradient), scd (stochastic coordinate "
                   "descent, batch), ftrl (FTRL-Proximal), gravity (VW's own --l1: one global gravity), "
                   "pegasos (Pegasos, --l2) or softmax (multinomial logistic with --oaa K --loss softmax). "
                   "Default: ftrl for --l1 alone; tg for --l1 with a rule flag or a rate option, or "
                   "when --threshold, --period or --cumulative-penalty is given; fobos when --reg, --l2 "
                   "or --lambda is, l1ball when --radius is, ftrl when --ftrl-alpha or --ftrl-beta is; "
                   "with -i, the model's learner if it takes the options given; else sgd.")
@click.option("--ftrl", "ftrl", is_flag=True, default=False, help="VW's spelling of --algo ftrl.")
@click.option("--ftrl-alpha", "--ftrl_alpha", "ftrl_alpha", type=FLOAT, default=0.5,
              help="ftrl: alpha of each coordinate's rate alpha / (beta + sqrt(sum of its squared gradients)).")
@click.option("--ftrl-beta", "--ftrl_beta", "ftrl_beta", type=FLOAT, default=1.0, help="ftrl: beta of that rate.")
@click.option("--adaptive", is_flag=True, default=False,
              help="Per-feature AdaGrad rates. The default rule is --adaptive --normalized --invariant; "
                   "giving any rule flag turns on only the ones given.")
@click.option("--normalized", is_flag=True, default=False,
              help="Per-feature scale-invariant rates (each weight remembers its largest |x|).")
@click.option("--invariant", is_flag=True, default=False,
              help="Importance-weight-invariant closed-form updates.")
@click.option("--sgd", is_flag=True, default=False,
              help="Plain SGD rates, the papers' schedule: none of --adaptive, --normalized, --invariant.")
@click.option("-l", "--learning-rate", "--learning_rate", "learning_rate", type=FLOAT, default=0.5,
              help="Learning rate. Default 0.5 with --adaptive --normalized, else 10; with plain rates "
                   "rate_t = l * (initial_t / (initial_t + t))^power_t.")
@click.option("--power-t", "--power_t", "power_t", type=FLOAT, default=0.5, help="Decay exponent of the rate.")
@click.option("--initial-t", "--initial_t", "initial_t", type=FLOAT, default=0.0,
              help="Initial value of the rate clock t. Default 0 with per-feature rates, else 1.")
@click.option("--decay-learning-rate", "--decay_learning_rate", "decay_learning_rate", type=FLOAT,
              default=1.0, help="Multiply the learning rate by this after every pass.")
@click.option("--l1", type=FLOAT, default=0.0,
              help="Truncated gradient: gravity g (per-feature, lazy); fobos, smidas, subgradient, scd, "
                   "ftrl: lambda of the L1 norm.")
@click.option("--reg", type=click.Choice(REG_NAMES), default="l1",
              help="fobos regularizer: l1 (--l1), l2sq (--l2: squared L2 norm), elastic (--l1 and --l2), "
                   "l2 (--lambda: the L2 norm) or linf (--lambda: the max norm); softmax (--oaa K --loss "
                   "softmax) also takes the mixed norms of each feature's K class weights, l1l2 and "
                   "l1linf (--lambda). Default: elastic with --l1 and --l2, l2sq with --l2, else l1.")
@click.option("--l2", type=FLOAT, default=0.0,
              help="fobos: lambda of lambda/2 ||w||^2 (--reg l2sq, elastic); ftrl: its lambda2.")
@click.option("--lambda", "lam", type=FLOAT, default=0.0,
              help="fobos: lambda of the L2 norm (--reg l2) or of the max norm (--reg linf); softmax: of "
                   "the mixed norm (--reg l1l2, l1linf).")
@click.option("--l2-ball", "l2_ball", type=FLOAT, default=None,
              help="fobos --reg l2sq (plain schedule) and pegasos: after every step project w onto the ball "
                   "||w||_2 <= R (pegasos's default R is 1/sqrt(lambda); inf: no projection).")
@click.option("--threshold", type=FLOAT, default=float("inf"),
              help="Truncated gradient: only weights with |w| <= threshold are truncated; rounding: "
                   "weights with |w| < threshold are set to 0; subgradient: that rounding, at the end.")
@click.option("--period", type=INT, default=1,
              help="Truncated gradient: truncate every K examples; rounding: round every K examples.")
@click.option("--p-norm", "p_norm", type=FLOAT, default=None,
              help="smidas: p of the p-norm link (default 2 ln d, d = 2^b).")
@click.option("--cumulative-penalty/--no-cumulative-penalty", "cumulative_penalty", default=None,
              help="Truncated gradient: keep each weight raw and shrink it by all the gravity accrued "
                   "since its first update (VW's --l1 bookkeeping, per feature) instead of truncating "
                   "it step by step (LLZ 2009). Default: on with per-feature rates, off with --sgd.")
@click.option("--radius", type=FLOAT, default=None,
              help="l1ball: the radius z, after every example ||w||_1 <= z; eg: the total of w+ and w-.")
@click.option("--projection", type=click.Choice(PROJECTION_NAMES), default="tree",
              help="L1-ball projection method: tree (O(k log n) per example), linear or sort "
                   "(recomputed over all non-zero weights; for comparison).")
@click.option("--batch-size", "batch_size", type=INT, default=1,
              help="l1ball, fobos, eg: average the steps of B consecutive examples into one step and "
                   "one projection or prox; the rate clock counts steps (step k: rate l k^-power_t "
                   "with --initial-t 0).")
@click.option("--passes", type=INT, default=1, help="Number of passes over the data (parsed once, cached).")
@click.option("--holdout-period", "--holdout_period", "holdout_period", type=INT, default=10,
              help="With passes > 1, every K-th example is held out to measure loss.")
@click.option("--holdout-off", "--holdout_off", "holdout_off", is_flag=True, default=False,
              help="No holdout examples.")
@click.option("--early-terminate", "--early_terminate", "early_terminate", type=INT, default=3,
              help="Stop after this many passes without holdout improvement.")
@click.option("--cache-file", "--cache_file", "cache_file", default=None, metavar="PATH",
              help="Cache of parsed examples: reused when it matches, else (re)built.")
@click.option("-c", "--cache", "cache", is_flag=True, default=False,
              help="Use the cache file FILE.cache next to the first -d FILE.")
@click.option("-k", "--kill-cache", "--kill_cache", "kill_cache", is_flag=True, default=False,
              help="Rebuild the cache even if it exists.")
@click.option("-f", "--final-model", "--final_regressor", "final_model", default=None, metavar="PATH",
              help="Write the model here (atomically).")
@click.option("--predict-only-model", "--predict_only_model", "predict_only_model", is_flag=True,
              default=False, help="-f saves the weights only (no per-feature state to resume from).")
@click.option("-i", "--initial-model", "--initial_regressor", "initial_model", default=None,
              metavar="PATH", help="Continue training this model (its options are the defaults).")
@click.option("-p", "--predictions", default=None, metavar="PATH",
              help="Write progressive predictions ('-' = stdout).")
@click.option("--readable-model", "--readable_model", "readable_model", default=None, metavar="PATH",
              help="Write the non-zero weights as text.")
@click.option("--plot", "plot", default=None, metavar="FILE.png",
              help="Draw the progress (average loss and non-zero weights over examples) to FILE "
                   "(.png, .pdf or .svg; needs matplotlib).")
@click.option("--trace", "trace", default=None, metavar="FILE",
              help="Write a row every --trace-every examples (loss, errors, non-zero weights, features "
                   "seen, data accesses, time) to FILE, tab-separated.")
@click.option("--trace-every", "trace_every", type=INT, default=None, metavar="N",
              help="Examples between two --trace rows (default 1000).")
@click.option("--trace-data", "trace_data", default=None, metavar="FILE",
              help="With --trace: also the test loss, test error and objective on FILE's examples.")
@click.option("--link", type=click.Choice(LINK_NAMES), default="identity",
              help="Link function applied to predictions.")
@click.option("--binary", is_flag=True, default=False, help="Predict the sign (-1/1) and report 0/1 loss.")
@click.option("--objective", is_flag=True, default=False,
              help="After every pass print the regularized objective (average loss of the training "
                   "examples at the current weights + the regularizer), the non-zero weights and the "
                   "data accesses so far.")
@click.option("--objective-data", "objective_data", default=None, metavar="FILE",
              help="Evaluate the objective on FILE instead of the training examples (implies --objective).")
@click.option("--cd-order", "cd_order", type=click.Choice(CD_ORDERS), default="random",
              help="scd: coordinates picked uniformly at random (the paper) or in turn.")
@click.option("--cd-step", "cd_step", type=click.Choice(CD_STEPS), default="newton",
              help="scd: step of a coordinate: newton = Newton step with line search (CDN, converges on "
                   "text); column = Algorithm 1 with the coordinate's smoothness constant beta * mean x^2; "
                   "paper = Algorithm 1 with beta * max(1, max x^2) (the paper's, for the reproductions).")
@click.option("--max-memory", "max_memory", default=None, metavar="SIZE",
              help="scd: refuse to load data needing more memory than SIZE (e.g. 2G). Default: 70% of RAM.")
@click.option("-q", "--quadratic", "quadratic", multiple=True, metavar="AB",
              help="Interact the features of the namespaces starting with A and B (VW's -q; ':' is "
                   "any namespace, \\xNN a byte, \\x80 the constant). Repeatable.")
@click.option("--cubic", "cubic", multiple=True, metavar="ABC", help="Three-way interactions. Repeatable.")
@click.option("--interactions", "interactions", multiple=True, metavar="AB...",
              help="Interactions of any arity (two or more namespace bytes). Repeatable.")
@click.option("--leave-duplicate-interactions", "--leave_duplicate_interactions",
              "leave_duplicate_interactions", is_flag=True, default=False,
              help="Keep interactions that are permutations of an earlier one (VW removes them).")
@click.option("--permutations", is_flag=True, default=False,
              help="Self-interactions (-q aa) use every ordered pair, not only i <= j.")
@click.option("--ngram", "ngram", multiple=True, metavar="[A]N",
              help="N-grams of the features of every namespace (N) or of namespace A (AN). Repeatable.")
@click.option("--skips", "skips", multiple=True, metavar="[A]K",
              help="Skip-grams: n-grams may skip up to K features (needs --ngram). Repeatable.")
@click.option("--ignore", "ignore", multiple=True, metavar="ABC",
              help="Drop the namespaces starting with these bytes. Repeatable.")
@click.option("--ignore-linear", "--ignore_linear", "ignore_linear", multiple=True, metavar="ABC",
              help="No linear terms for these namespaces (they still interact). Repeatable.")
@click.option("--keep", "keep", multiple=True, metavar="ABC",
              help="Keep only the namespaces starting with these bytes (and the constant). Repeatable.")
@click.option("--redefine", "redefine", multiple=True, metavar="N:=S",
              help="Namespaces starting with a byte of S become namespace N (':' in S = all). Repeatable.")
@click.option("-t", "--testonly", "testonly", is_flag=True, default=False,
              help="Do not learn: predict (and report the loss) only; with -i, evaluate a model.")
@click.option("--invert-hash", "--invert_hash", "invert_hash", default=None, metavar="PATH",
              help="Write the readable model with the name of the first feature seen at each weight.")
@click.option("--audit", "-a", "audit", is_flag=True, default=False,
              help="Print every example's prediction and its features (name:index:value:weight) on stdout.")
@click.option("--shuffle", is_flag=True, default=False,
              help="Passes after the first visit the examples in a random order (held-out ones stay put).")
@click.option("--random-seed", "--random_seed", "random_seed", type=INT, default=0,
              help="Seed of every random choice (--shuffle, randomized pivots): same seed, same model.")
@click.option("--dask", "dask", default=None, metavar="ADDRESS|local:N",
              help="Train on a Dask cluster (needs streamlearn[dask]): the scheduler's address, or "
                   "local:N to start N local worker processes. Every -d path or quoted glob is a shard; "
                   "the shards' models are merged at the end of every one of the --passes (or --sync-every N).")
@click.option("--mix", "mix", type=click.Choice(("weighted", "uniform")), default="weighted",
              help="With --dask: merge the shards' weights G-weighted (adaptive rules, as VW) or uniformly.")
@click.option("--sync-every", "--sync_every", "sync_every", type=INT, default=None, metavar="N",
              help="With --dask: merge every N examples of each shard instead of at the end of each pass.")
@click.option("--split", "split", type=INT, default=None, metavar="N",
              help="With --dask: cut every plain (uncompressed) -d file into N line-aligned byte ranges, "
                   "each a shard.")
@click.pass_context
def train(ctx, **values):
    """Train a model on examples read from -d FILE... or stdin."""
    from streamlearn import driver

    explicit = _given(ctx, values)
    explicit.pop("sources", None)
    explicit["sources"] = tuple(values["sources"]) or ("-",)
    if explicit.pop("ftrl", False):
        if explicit.get("algo", "ftrl") != "ftrl":
            raise click.ClickException(f"--ftrl means --algo ftrl; it cannot be combined with --algo {explicit['algo']}")
        explicit["algo"] = "ftrl"
    dask_only = {name: explicit.pop(name) for name in ("mix", "sync_every", "split") if name in explicit}
    address = explicit.pop("dask", None)
    if address is not None:
        return _train_dask(address, values, dask_only, explicit)
    if dask_only:
        raise click.ClickException(f"--{next(iter(dask_only)).replace('_', '-')} needs --dask")
    if explicit.pop("cache", False):
        if "cache_file" in explicit:
            raise click.ClickException("-c/--cache and --cache-file cannot be used together")
        first = explicit["sources"][0]
        if first == "-":
            raise click.ClickException("-c/--cache needs -d FILE; with stdin give --cache-file PATH")
        explicit["cache_file"] = first + ".cache"
    if explicit.get("block_size") is None:
        explicit.pop("block_size", None)
    if explicit.get("objective_data") is not None:
        explicit["objective"] = True
    cfg, model = _run(driver.prepare_train, explicit)
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
@click.option("--link", type=click.Choice(LINK_NAMES), default=None,
              help="Override the model's link function.")
@click.option("--binary/--no-binary", default=None, help="Override the model's --binary.")
@click.option("--probabilities", is_flag=True, default=False,
              help="A multiclass model: write each class's probability (k:p ...) instead of the class.")
@click.option("--scores", is_flag=True, default=False,
              help="A multiclass model: write each class's score (k:s ...) instead of the class.")
def predict(sources, format, quiet, strict, block_size, threads, initial_model, predictions, link, binary,
            probabilities, scores):
    """Predict with a saved model; hashing options come from the model."""
    from streamlearn import driver
    from streamlearn.config import predict_config

    options = dict(initial_model=initial_model, sources=tuple(sources) or ("-",), format=format,
                   predictions=predictions, link=link, binary=binary, quiet=quiet, strict=strict,
                   probabilities=probabilities, scores=scores)
    if block_size is not None:
        options["block_size"] = block_size
    if threads is not None:
        options["threads"] = threads
    cfg = _run(lambda: predict_config(**options))
    _run(driver.predict, cfg)


@main.command("warm-up")
def warm_up():
    """Compile every kernel now (the first run otherwise compiles those it needs, about 30 s).

    Trains and predicts with every learner, with one-against-all, and reads both input formats, on a
    few examples. Idempotent: with the kernels cached it only loads them."""
    from streamlearn import warmup

    _run(warmup.warm_up, lambda argv: main.main(argv, standalone_mode=False))


if __name__ == "__main__":
    main()
