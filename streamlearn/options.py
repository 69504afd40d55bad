"""Options as data: every ``streamlearn train`` option is declared once, as an ``Option``.

The options of the run (input, hashing, loss, update rule, passes, files, feature expansion, reports)
and those several learners share are declared here; a learner's own options are declared in its module
(``LearnerSpec.declares``), next to the code that reads them. Everything else is generated from the
declarations (``streamlearn.config``): the command line's click options and their ``--help``
sections, ``TrainConfig``'s fields and defaults, how messages spell each option (``FLAG``), the
options a model file stores and what a model written before an option existed takes, the
scikit-learn estimators' parameters and what a Dask run refuses.

This module imports no kernels (the CLI imports it before numba's caches are set up).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable

from streamlearn.io.reader import DEFAULT_BLOCK_SIZE


class _Marker:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: ``Option.cli_default``: the command line's default is the configuration's
SAME = _Marker("SAME")
#: ``Option.legacy``: a model must store the option (no older file lacks it)
REQUIRED = _Marker("REQUIRED")
#: ``Option.estimator``: not a parameter of the scikit-learn estimators
NOT_A_PARAMETER = _Marker("NOT_A_PARAMETER")

#: the kinds of option: their click type and their configuration's annotation
KINDS = ("int", "float", "text", "flag", "choice", "multi", "switch")


@dataclass(frozen=True)
class Option:
    """One option.

    ``flags`` are the command-line spellings, ours first and VW's after. ``default`` is the
    configuration's value when the option is not given (a callable: computed when a configuration is
    made); ``cli_default`` what click reports when it differs (e.g. None where the configuration
    decides from other options). ``stored``: "always" for the options every model file holds (their
    order is ``config.HEADER_ORDER``, part of the file format), "if_used" for an option a model holds
    only when it differs from its default (so a new option changes no other model's bytes), None for
    options that are not part of a model. ``legacy`` is the value of an "always" option in a model
    written before the option existed. ``estimator`` is the scikit-learn estimators' default for the
    option (``NOT_A_PARAMETER``: not one of their parameters). ``dask``: False when a Dask run refuses
    the option. ``config``: False for command-line conveniences the CLI turns into other options
    (``-c``, ``--ftrl``). ``sparse``: False when the sparse weight store (``--sparse_weights``,
    ``streamlearn.core.sparse``) refuses the option. ``check``: (value) -> None or the reason the value is invalid (the part after
    "must be"), for options declared with it (the older options are checked in ``config``, in their
    historical order; ``streamlearn serve``'s own options word it after "--flag VALUE: ",
    ``streamlearn.serve.options``)."""

    name: str
    flags: tuple
    kind: str
    default: object = None
    help: str = ""
    metavar: str | None = None
    choices: tuple | str | None = None
    cli_default: object = SAME
    hidden: bool = False
    msg: str | None = None
    stored: str | None = None
    legacy: object = REQUIRED
    estimator: object = NOT_A_PARAMETER
    dask: bool = True
    config: bool = True
    sparse: bool = True
    section: str = "Options"
    check: Callable | None = None
    #: a flag that means ``--algo`` this learner (VW's spellings: ``--ftrl``)
    selects: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"option {self.name}: unknown kind {self.kind}")
        if self.stored not in (None, "always", "if_used"):
            raise ValueError(f"option {self.name}: stored must be always, if_used or None")

    @property
    def spelling(self) -> str:
        """How messages name the option: "-b/--bits" (short and long), "--l1" (long only)."""
        if self.msg is not None:
            return self.msg
        short = next((f for f in self.flags if not f.startswith("--")), None)
        long = next((f for f in self.flags if f.startswith("--")), None)
        if self.kind == "switch":
            long = long.split("/")[0]
        return f"{short}/{long}" if short and long else (long or short)

    @property
    def annotation(self) -> str:
        """The configuration field's type, as a model file's option check reads it."""
        if self.kind in ("flag", "switch"):
            return "bool"
        if self.kind == "multi":
            return "tuple"
        base = {"int": "int", "float": "float", "text": "str", "choice": "str"}[self.kind]
        if self.default is None or self.kind == "text":
            return f"{base} | None"
        return base

    def default_value(self):
        return self.default() if callable(self.default) else self.default


def _o(name, flags, kind, default=None, help="", **kw) -> Option:
    return Option(name, tuple(flags), kind, default, help, **kw)


def default_threads() -> int:
    """Parse threads by default: the cores this process may use less one, kept for the learner on
    the main thread; at least 1. On two cores that is 1: the one parse thread already overlaps the
    learner, and a second would only take the learner's core (streamlearn.run.stream)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, cores - 1)


#: ``Option.choices`` of the options whose names the learners define (``config`` resolves them)
FROM_LEARNERS = "from the learners"


LOSS_NAMES = ("squared", "logistic", "hinge", "quantile", "softmax", "poisson", "classic", "expectile")
LINK_NAMES = ("identity", "logistic", "poisson")
FORMAT_NAMES = ("auto", "vw", "libsvm", "csv", "json")
#: --csoaa_ldf / --wap_ldf modes (VW's spellings): m/multiline regresses the costs, mc/multiline-classifier classifies
LDF_MODES = ("m", "multiline", "mc", "multiline-classifier")
#: the formats read through a converter to VW text (``streamlearn.io.textformats``, imported when used)
TEXT_FORMATS = ("csv", "json")
HASH_NAMES = ("strings", "all")

INPUT = "Input"
HASHING = "Hashing and features"
LOSS = "Loss, link and prediction"
MULTICLASS = "Multiclass (--oaa K)"
RULE = "Learner and update rule"
SHARED = "Regularization (several learners)"
PASSES = "Passes, holdout and order"
FILES = "Models and outputs"
REPORTS = "Reports"
DASK = "Dask"

#: the options of every command that reads examples (``train`` and ``predict``)
INPUT_OPTIONS = (
    _o("sources", ("-d", "--data"), "multi", ("-",), metavar="FILE", cli_default=None,
       help="Input file (repeatable; .gz/.bz2/.xz decompressed; '-' = stdin). Default: stdin.", section=INPUT),
    _o("format", ("--format",), "choice", "auto", choices=FORMAT_NAMES,
       help="Input format; auto decides from each file's first data line.", section=INPUT),
    _o("quiet", ("--quiet",), "flag", False, dask=True,
       help="No preamble, progress table or summary (warnings still print).", section=INPUT),
    _o("strict", ("--strict",), "flag", False, help="Stop with an error at the first malformed line.",
       section=INPUT),
    _o("block_size", ("--block-size",), "int", DEFAULT_BLOCK_SIZE, cli_default=None, hidden=True,
       help="Bytes per parsed block (testing).", section=INPUT),
    _o("threads", ("--threads",), "int", default_threads, cli_default=None, metavar="N",
       help="Threads parsing the input (default: the cores less one, at least 1); "
            "the results do not depend on it.", section=INPUT),
)

#: VW's CSV and JSON input (streamlearn.io.textformats): options of ``train``
TEXT_FORMAT_OPTIONS = (
    _o("csv", ("--csv",), "flag", False, dask=False,
       help="The input is CSV (VW's --csv; --format csv): a header line naming the columns (_label, _tag, "
            "name or namespace|name).", section=INPUT),
    _o("csv_separator", ("--csv-separator", "--csv_separator"), "text", ",", metavar="C",
       help="CSV's field separator: one character, \\t for TAB (not \", | or :).", section=INPUT),
    _o("csv_ns_value", ("--csv-ns-value", "--csv_ns_value"), "text", None, metavar="NS:R,...",
       help="CSV: multiply the numbers of namespace NS by R (an empty NS: the default namespace).",
       section=INPUT),
    _o("csv_header", ("--csv-header", "--csv_header"), "text", None, metavar="H1,H2,...",
       help="CSV: the header (the columns' names separated by ','), in place of the file's first line.",
       section=INPUT),
    _o("csv_no_file_header", ("--csv-no-file-header", "--csv_no_file_header"), "flag", False,
       help="CSV: the first line is data, not a header (needs --csv-header).", section=INPUT),
    _o("json", ("--json",), "flag", False, dask=False,
       help="The input is JSON, one object per line (VW's --json with simple labels; --format json).",
       section=INPUT),
    _o("chain_hash", ("--chain-hash", "--chain_hash"), "flag", False,
       help="JSON: a string value v of key k is the feature hash(v, hash(k, ns)) (VW's --chain_hash), "
            "not the name k+v.", section=INPUT),
)

#: the options of a training run, in the order of ``train --help`` (before the learners' own)
RUN_OPTIONS = INPUT_OPTIONS + TEXT_FORMAT_OPTIONS + (
    _o("onethread", ("--onethread",), "flag", False,
       help="VW's --onethread: parse on the learner's thread (--threads 1 unless given); the "
            "results do not depend on it.", section=INPUT),
    _o("no_stdin", ("--no-stdin", "--no_stdin"), "flag", False,
       help="Without -d, read no examples (VW's --no_stdin) instead of stdin.", section=INPUT),
    _o("max_example_features", ("--max-example-features",), "int", None, metavar="N", cli_default=None,
       help="Stop with an error when one example expands (-q, --cubic, --interactions, --ngram) to more than "
            "N features (VW has no cap). Default: from the memory, an eighth of the RAM at 32 bytes a feature "
            "(the expanded index and value, the scratch arrays, their growth), at least 1,000,000.",
       section=HASHING),
    _o("bits", ("-b", "--bits", "--bit_precision"), "int", 18, stored="always", estimator=None,
       help="Number of hash bits: the model has 2^b weights.", section=HASHING),
    _o("noconstant", ("--noconstant",), "flag", False, stored="always", estimator=False,
       help="No constant (bias) feature.", section=HASHING),
    _o("hash", ("--hash",), "choice", "strings", choices=HASH_NAMES, stored="always", estimator=None,
       help="strings: purely numeric names are their own hash (VW); all: murmur every name.", section=HASHING),
    _o("hash_seed", ("--hash-seed", "--hash_seed"), "int", 0, stored="always", estimator=None,
       help="Seed of the feature hash.", section=HASHING),
    _o("affix", ("--affix",), "text", None, metavar="[+-]N[A],...", stored="if_used", estimator=None,
       help="VW's affix features: the prefix (+N) or suffix (-N, N 1..7) of every feature name of "
            "namespace A (default: the default namespace), as a feature of namespace \\x84 (VW text input).",
       section=HASHING),
    _o("dictionary", ("--dictionary",), "multi", (), metavar="[A:]FILE", stored="if_used", estimator=None,
       help="VW's dictionary features: a feature of namespace A (default: the default namespace) named by a "
            "word of FILE ('word features...' lines, .gz read) adds the word's features in namespace \\x87 "
            "(VW text input). Repeatable.", section=HASHING),
    _o("dictionary_path", ("--dictionary-path", "--dictionary_path"), "multi", (), metavar="DIR",
       stored="if_used", estimator=None,
       help="Folders searched for --dictionary files (then the working folder). Repeatable.", section=HASHING),
    _o("loss", ("--loss", "--loss-function", "--loss_function"), "choice", "squared", choices=LOSS_NAMES,
       stored="always", estimator=None,
       help="Loss function. Logistic and hinge read labels > 0 as positive, <= 0 as negative; "
            "softmax (with --oaa K): multinomial logistic regression over the K classes; poisson: "
            "counts with mean exp(prediction) (with --link poisson the predictions are the means); "
            "classic: squared loss with the plain step (VW's); expectile (with --expectile-q Q): squared "
            "loss weighted Q where the prediction is above the label, 1 - Q below (VW's).", section=LOSS),
    _o("oaa", ("--oaa",), "int", 0, metavar="K", stored="always", legacy=0, estimator=None,
       help="K classes, labels 1..K: one-against-all over the binary learner (VW's --oaa), or "
            "with --loss softmax one multinomial model.", section=MULTICLASS),
    _o("csoaa", ("--csoaa",), "int", 0, metavar="K", stored="if_used", estimator=None,
       help="K classes, cost-sensitive labels 'class:cost ...': one regressor of each class's cost, the "
            "prediction the class of least predicted cost (VW's --csoaa; docs/multiclass.md).",
       section=MULTICLASS, sparse=False),
    _o("csoaa_ldf", ("--csoaa-ldf", "--csoaa_ldf"), "choice", None, choices=LDF_MODES, metavar="m|mc",
       stored="if_used", estimator=None,
       help="Label-dependent features: multi-line examples (an optional 'shared' line, one line per action "
            "'class:cost | features', a blank line after), one regressor of the cost over the action's "
            "features; m: of the cost, mc: classifiers of the least cost (VW's --csoaa_ldf; "
            "docs/multiclass.md).", section=MULTICLASS, sparse=False),
    _o("wap_ldf", ("--wap-ldf", "--wap_ldf"), "choice", None, choices=LDF_MODES, metavar="m|mc",
       stored="if_used", estimator=None,
       help="Label-dependent features learned by weighted all pairs: each pair of actions of a multi-line "
            "example a classifier of their feature difference (VW's --wap_ldf; docs/multiclass.md).",
       section=MULTICLASS, sparse=False),
    _o("multilabel_oaa", ("--multilabel-oaa", "--multilabel_oaa"), "int", 0, metavar="K", stored="if_used",
       estimator=None,
       help="K classes 0..K-1, labels sets of them ('0,3'): one-against-all of each class, the prediction the "
            "classes of positive score (VW's --multilabel_oaa; docs/multiclass.md).", section=MULTICLASS, sparse=False),
    _o("named_labels", ("--named-labels", "--named_labels"), "text", None, metavar="A,B,...", stored="if_used",
       estimator=None,
       help="--oaa/--csoaa: the classes' names, class 1 first: labels are names, -p writes names (VW's "
            "--named_labels; a model keeps them).", section=MULTICLASS),
    _o("csoaa_rank", ("--csoaa-rank", "--csoaa_rank"), "flag", False, estimator=None,
       help="With --csoaa_ldf/--wap_ldf: -p writes the actions ranked by score ('2:0.1,1:0.7'; VW's "
            "--csoaa_rank); with --csoaa it changes nothing, as in VW.", section=MULTICLASS),
    _o("indexing", ("--indexing",), "int", None, stored="always", legacy=None,
       help="--oaa labels are 0..K-1 (0) or 1..K (1); default: detected while learning, as VW does.",
       section=MULTICLASS),
    _o("probabilities", ("--probabilities",), "flag", False,
       help="--oaa: write each class's probability (k:p ...) instead of the class; --csoaa_ldf: each "
            "action's, one a line.", section=MULTICLASS),
    _o("scores", ("--scores",), "flag", False,
       help="--oaa: write each class's score (k:s ...) instead of the class.", section=MULTICLASS),
    _o("raw_predictions", ("-r", "--raw-predictions", "--raw_predictions"), "text", None, metavar="PATH",
       dask=False, help="--oaa: write each class's raw score (' 1:s1 2:s2 ...', VW's -r); --csoaa_ldf: each "
                        "action's, one a line.", section=MULTICLASS),
    _o("quantile_tau", ("--quantile-tau", "--quantile_tau"), "float", 0.5, stored="always", estimator=None,
       help="Quantile of --loss quantile.", section=LOSS),
    _o("expectile_q", ("--expectile-q", "--expectile_q"), "float", None, stored="if_used", estimator=None,
       help="Q of --loss expectile, in (0, 0.5] (VW's --expectile_q; required with it).", section=LOSS),
    _o("algo", ("--algo",), "choice", "sgd", choices=FROM_LEARNERS, cli_default=None, stored="always",
       estimator=None, section=RULE),   # help: generated from the learners (config.algo_help)
    _o("adaptive", ("--adaptive",), "flag", True, cli_default=False, stored="always", legacy=False,
       estimator=None,
       help="Per-feature AdaGrad rates. The default rule is --adaptive --normalized --invariant; "
            "giving any rule flag turns on only the ones given.", section=RULE),
    _o("normalized", ("--normalized",), "flag", True, cli_default=False, stored="always", legacy=False,
       estimator=None, help="Per-feature scale-invariant rates (each weight remembers its largest |x|).",
       section=RULE),
    _o("invariant", ("--invariant",), "flag", True, cli_default=False, stored="always", legacy=False,
       estimator=None, help="Importance-weight-invariant closed-form updates.", section=RULE),
    _o("sgd", ("--sgd",), "flag", False, config=False, estimator=False,
       help="Plain SGD rates, the papers' schedule: none of --adaptive, --normalized, --invariant.",
       section=RULE),
    _o("learning_rate", ("-l", "--learning-rate", "--learning_rate"), "float", 0.5, stored="always",
       estimator=None,
       help="Learning rate. Default 0.5 with --adaptive --normalized, else 10; with plain rates "
            "rate_t = l * (initial_t / (initial_t + t))^power_t.", section=RULE),
    _o("power_t", ("--power-t", "--power_t"), "float", 0.5, stored="always", estimator=None,
       help="Decay exponent of the rate.", section=RULE),
    _o("initial_t", ("--initial-t", "--initial_t"), "float", 0.0, stored="always", estimator=None,
       help="Initial value of the rate clock t. Default 0 with per-feature rates, else 1.", section=RULE),
    _o("decay_learning_rate", ("--decay-learning-rate", "--decay_learning_rate"), "float", 1.0,
       stored="always", estimator=None, help="Multiply the learning rate by this after every pass.",
       section=RULE),
)

#: options that several learners take (each learner's spec lists those it takes, ``LearnerSpec.options``)
SHARED_LEARNER_OPTIONS = (
    _o("l1", ("--l1",), "float", 0.0, stored="always", estimator=None,
       help="Truncated gradient: gravity g (per-feature, lazy); fobos, smidas, subgradient, scd, "
            "ftrl: lambda of the L1 norm; gravity (--l1 without --algo): VW's own --l1.", section=SHARED),
    _o("reg", ("--reg",), "choice", "l1", choices=FROM_LEARNERS, stored="always", legacy="l1", estimator=None,
       help="fobos regularizer: l1 (--l1), l2sq (--l2: squared L2 norm), elastic (--l1 and --l2), "
            "l2 (--lambda: the L2 norm) or linf (--lambda: the max norm); softmax (--oaa K --loss "
            "softmax) also takes the mixed norms of each feature's K class weights, l1l2 and "
            "l1linf (--lambda). Default: elastic with --l1 and --l2, l2sq with --l2, else l1.", section=SHARED),
    _o("l2", ("--l2",), "float", 0.0, stored="always", legacy=0.0, estimator=None,
       help="fobos: lambda of lambda/2 ||w||^2 (--reg l2sq, elastic); ftrl: its lambda2; gravity (--l2 "
            "without --algo): VW's own --l2 (its contraction).", section=SHARED),
    _o("lam", ("--lambda",), "float", 0.0, stored="always", legacy=0.0, estimator=None,
       help="fobos: lambda of the L2 norm (--reg l2) or of the max norm (--reg linf); softmax: of "
            "the mixed norm (--reg l1l2, l1linf).", section=SHARED),
    _o("l2_ball", ("--l2-ball",), "float", None, stored="always", legacy=None, estimator=None,
       help="fobos --reg l2sq (plain schedule) and pegasos: after every step project w onto the ball "
            "||w||_2 <= R (pegasos's default R is 1/sqrt(lambda); inf: no projection).", section=SHARED),
    _o("threshold", ("--threshold",), "float", math.inf, stored="always", estimator=None,
       help="Truncated gradient: only weights with |w| <= threshold are truncated; rounding: "
            "weights with |w| < threshold are set to 0; subgradient: that rounding, at the end.", section=SHARED),
    _o("period", ("--period",), "int", 1, stored="always", estimator=None,
       help="Truncated gradient: truncate every K examples; rounding: round every K examples.", section=SHARED),
    _o("cumulative_penalty", ("--cumulative-penalty/--no-cumulative-penalty",), "switch", False,
       cli_default=None, stored="always", legacy=False, estimator=None,
       help="Truncated gradient: keep each weight raw and shrink it by all the gravity accrued "
            "since its first update (VW's --l1 bookkeeping, per feature) instead of truncating "
            "it step by step (LLZ 2009). Default: on with per-feature rates, off with --sgd.", section=SHARED),
    _o("radius", ("--radius",), "float", None, stored="always", legacy=None, estimator=None,
       help="l1ball: the radius z, after every example ||w||_1 <= z; eg: the total of w+ and w-.", section=SHARED),
    _o("batch_size", ("--batch-size",), "int", 1, stored="always", legacy=1, estimator=None,
       help="l1ball, fobos, eg: average the steps of B consecutive examples into one step and "
            "one projection or prox; the rate clock counts steps (step k: rate l k^-power_t "
            "with --initial-t 0).", section=SHARED),
)

#: the options of a training run after the learners' own
LATE_OPTIONS = (
    _o("passes", ("--passes",), "int", 1, help="Number of passes over the data (parsed once, cached).",
       section=PASSES),
    _o("holdout_period", ("--holdout-period", "--holdout_period"), "int", 10,
       help="With passes > 1, every K-th example is held out to measure loss.", section=PASSES),
    _o("holdout_off", ("--holdout-off", "--holdout_off"), "flag", False, estimator=True,
       help="No holdout examples.", section=PASSES),
    _o("holdout_after", ("--holdout-after", "--holdout_after"), "int", 0, metavar="N",
       help="Hold out the examples after the N-th of every pass (VW's --holdout_after; replaces "
            "--holdout-period; also with one pass). 0: off.", section=PASSES),
    _o("early_terminate", ("--early-terminate", "--early_terminate"), "int", 3,
       help="Stop after this many passes without holdout improvement.", section=PASSES),
    _o("cache_file", ("--cache-file", "--cache_file"), "text", None, metavar="PATH", dask=False,
       help="Cache of parsed examples: reused when it matches, else (re)built.", section=FILES),
    _o("cache", ("-c", "--cache"), "flag", False, config=False, dask=False,
       help="Use the cache file FILE.cache next to the first -d FILE.", section=FILES),
    _o("kill_cache", ("-k", "--kill-cache", "--kill_cache"), "flag", False,
       help="Rebuild the cache even if it exists (without a cache, nothing: VW command lines give -k "
            "alone).", section=FILES),
    _o("audit_regressor", ("--audit-regressor", "--audit_regressor"), "text", None, metavar="PATH", dask=False,
       help="Learn nothing: write the -i model's non-zero weights as name:slot:weight, each named by the "
            "first example using it (VW's --audit_regressor).", section=FILES, sparse=False),
    _o("final_model", ("-f", "--final-model", "--final_regressor"), "text", None, metavar="PATH",
       help="Write the model here (atomically).", section=FILES),
    _o("vw_model_out", ("--vw-model-out", "--vw_model_out"), "text", None, metavar="PATH", dask=False,
       help="Also write the model in Vowpal Wabbit's binary format (VW 9.11.9 reads it with -i; the default "
            "rule, --sgd and --ftrl, with --oaa and the feature options).", section=FILES, sparse=False),
    _o("predict_only_model", ("--predict-only-model", "--predict_only_model"), "flag", False, dask=False,
       help="-f saves the weights only (no per-feature state to resume from).", section=FILES),
    _o("save_resume", ("--save-resume", "--save_resume"), "flag", False, dask=False,
       help="-f and readable models keep the learner's state (the default, as in VW 9: taken and "
            "does nothing; --predict-only-model drops the state).", section=FILES),
    _o("initial_model", ("-i", "--initial-model", "--initial_regressor"), "text", None, metavar="PATH",
       help="Continue training this model (its options are the defaults): a streamlearn model or a VW "
            "9.x binary model (its update rule and loss, which VW does not store, from this command "
            "line).", section=FILES),
    _o("predictions", ("-p", "--predictions"), "text", None, metavar="PATH", dask=False,
       help="Write progressive predictions ('-' = stdout).", section=FILES),
    _o("readable_model", ("--readable-model", "--readable_model"), "text", None, metavar="PATH", dask=False,
       help="Write the non-zero weights as text.", section=FILES),
    _o("interact", ("--interact",), "text", None, metavar="AB", stored="if_used", dask=False,
       help="VW's --interact: the features of namespace A become their element-wise products with "
            "namespace B's (matched by their offset from each namespace's first feature, which must "
            "have value 1); B's features are dropped.", section=HASHING),
    _o("sparse_weights", ("--sparse-weights", "--sparse_weights"), "flag", False,
       help="VW's --sparse_weights: a weight table whose memory grows with the features the run touches "
            "(-b up to 32; automatic when the dense table would take more than half the memory), with the "
            "same numbers and model file (docs/usage.md).", section=FILES),
    _o("progress", ("-P", "--progress"), "text", None, metavar="N|X",
       help="When the progress table prints a row (VW's -P): an integer N every N weighted "
            "examples, a number with a '.' X each time the weighted examples grow X-fold "
            "(default 2.0; at most 1.0 adds 1.0).", section=REPORTS),
    _o("dont_output_best_constant", ("--dont-output-best-constant", "--dont_output_best_constant"), "flag",
       False, help="The summary leaves out the best constant and its loss (VW's).", section=REPORTS),
    _o("plot", ("--plot",), "text", None, metavar="FILE.png", dask=False,
       help="Draw the progress (average loss and non-zero weights over examples) to FILE "
            "(.png, .pdf or .svg; needs matplotlib).", section=REPORTS),
    _o("trace", ("--trace",), "text", None, metavar="FILE", dask=False,
       help="Write a row every --trace-every examples (loss, errors, non-zero weights, features "
            "seen, data accesses, time) to FILE, tab-separated.", section=REPORTS, sparse=False),
    _o("trace_every", ("--trace-every",), "int", 1000, cli_default=None, metavar="N",
       help="Examples between two --trace rows (default 1000).", section=REPORTS),
    _o("trace_data", ("--trace-data",), "text", None, metavar="FILE", dask=False,
       help="With --trace: also the test loss, test error and objective on FILE's examples.", section=REPORTS),
    _o("link", ("--link",), "choice", "identity", choices=LINK_NAMES, stored="always",
       help="Link function applied to predictions.", section=LOSS),
    _o("binary", ("--binary",), "flag", False, stored="always",
       help="Predict the sign (-1/1) and report 0/1 loss.", section=LOSS),
    _o("classweight", ("--classweight",), "multi", (), metavar="L:W,...", dask=False,
       help="Multiply the importance weight of every example learned with label L by W (VW's "
            "--classweight: the label truncated to an integer is its class; with --oaa the class). "
            "Repeatable.", section=LOSS),
    _o("objective", ("--objective",), "flag", False, dask=False,
       help="After every pass print the regularized objective (average loss of the training "
            "examples at the current weights + the regularizer), the non-zero weights and the "
            "data accesses so far.", section=REPORTS, sparse=False),
    _o("objective_data", ("--objective-data",), "text", None, metavar="FILE", dask=False,
       help="Evaluate the objective on FILE instead of the training examples (implies --objective).",
       section=REPORTS, sparse=False),
)

#: the feature-expansion options (VW's): a model stores them, and data fed to it is expanded the same way
FEATURE_EXPANSION = (
    _o("quadratic", ("-q", "--quadratic"), "multi", (), metavar="AB", stored="always", legacy=(),
       help="Interact the features of the namespaces starting with A and B (VW's -q; ':' is "
            "any namespace, \\xNN a byte, \\x80 the constant). Repeatable.", section=HASHING),
    _o("cubic", ("--cubic",), "multi", (), metavar="ABC", stored="always", legacy=(),
       help="Three-way interactions. Repeatable.", section=HASHING),
    _o("interactions", ("--interactions",), "multi", (), metavar="AB...", stored="always", legacy=(),
       help="Interactions of any arity (two or more namespace bytes). Repeatable.", section=HASHING),
    _o("leave_duplicate_interactions", ("--leave-duplicate-interactions", "--leave_duplicate_interactions"),
       "flag", False, stored="always", legacy=False, msg="--leave_duplicate_interactions",
       help="Keep interactions that are permutations of an earlier one (VW removes them).", section=HASHING),
    _o("permutations", ("--permutations",), "flag", False, stored="always", legacy=False,
       help="Self-interactions (-q aa) use every ordered pair, not only i <= j.", section=HASHING),
    _o("ngram", ("--ngram",), "multi", (), metavar="[A]N", stored="always", legacy=(),
       help="N-grams of the features of every namespace (N) or of namespace A (AN). Repeatable.",
       section=HASHING),
    _o("skips", ("--skips",), "multi", (), metavar="[A]K", stored="always", legacy=(),
       help="Skip-grams: n-grams may skip up to K features (needs --ngram). Repeatable.", section=HASHING),
    _o("ignore", ("--ignore",), "multi", (), metavar="ABC", stored="always", legacy=(),
       help="Drop the namespaces starting with these bytes. Repeatable.", section=HASHING),
    _o("ignore_linear", ("--ignore-linear", "--ignore_linear"), "multi", (), metavar="ABC", stored="always",
       legacy=(), msg="--ignore_linear",
       help="No linear terms for these namespaces (they still interact). Repeatable.", section=HASHING),
    _o("keep", ("--keep",), "multi", (), metavar="ABC", stored="always", legacy=(),
       help="Keep only the namespaces starting with these bytes (and the constant). Repeatable.",
       section=HASHING),
    _o("redefine", ("--redefine",), "multi", (), metavar="N:=S", stored="always", legacy=(),
       help="Namespaces starting with a byte of S become namespace N (':' in S = all). Repeatable.",
       section=HASHING),
    _o("feature_limit", ("--feature-limit", "--feature_limit"), "multi", (), metavar="[A]N", stored="if_used",
       msg="--feature_limit",
       help="Keep at most N features of every namespace (N) or of namespaces starting with A (AN): "
            "beyond N, the features sorted by index (then value), one per index, the first N (VW's "
            "--feature_limit, after n-grams and before interactions). Repeatable.", section=HASHING),
)

#: VW's low-rank quadratic features (--lrq, --lrqfa): generated while learning from the weights
#: (``streamlearn.features.lowrank``, ``streamlearn.core.lowrank``); a model keeps them
LOWRANK_OPTIONS = (
    _o("lrq", ("--lrq",), "multi", (), metavar="ABK", stored="if_used",
       help="VW's low-rank quadratic features of namespaces A and B of rank K (--lrq ab3; \\xNN a byte): "
            "the A x B interactions through K latent weights per feature (needs --algo sgd). Repeatable.",
       section=HASHING, sparse=False),
    _o("lrqfa", ("--lrqfa",), "text", None, metavar="ABC..K", stored="if_used",
       help="VW's field-aware low-rank quadratic features: every pair of the namespaces given, rank K, a "
            "feature's latent weights for each field (--lrqfa abc2; needs --algo sgd).", section=HASHING, sparse=False),
    _o("lrqdropout", ("--lrqdropout",), "flag", False, stored="if_used",
       help="VW's dropout of --lrq's latent weights: while learning, each left feature's k-th latent weight "
            "takes part with probability 1/2 (VW's generator from --random-seed); predicting, they count "
            "half.", section=HASHING),
    _o("nn", ("--nn",), "int", 0, metavar="K", stored="if_used",
       help="VW's neural network: one hidden layer of K units (VW's fast tanh) under the output, every "
            "layer learned by the update rule (needs --algo sgd; VW's numbers).", section=RULE, sparse=False),
    _o("nn_dropout", ("--dropout",), "flag", False, stored="if_used",
       help="--nn: VW's dropout: each hidden unit is left out with probability 1/2 (VW's generator from "
            "--random-seed), the others doubled; the output layer then learns again with the units left out.",
       section=RULE),
    _o("inpass", ("--inpass",), "flag", False, stored="if_used",
       help="--nn: VW's input passthrough: the output layer also takes the example's own features.",
       section=RULE),
    _o("multitask", ("--multitask",), "flag", False, stored="if_used",
       help="--nn: VW's shared hidden layer across tasks (a binary or regression model has one task: no "
            "change, as in VW).", section=RULE),
    _o("meanfield", ("--meanfield",), "flag", False,
       help="--nn: VW's mean field (no dropout).", section=RULE),
)

#: the options of a training run after feature expansion
FINAL_OPTIONS = (
    _o("testonly", ("-t", "--testonly"), "flag", False, dask=False,
       help="Do not learn: predict (and report the loss) only; with -i, evaluate a model.", section=FILES),
    _o("confidence", ("--confidence",), "flag", False, dask=False,
       help="VW's --confidence (sgd, without --oaa): -p writes 'prediction confidence' lines, the "
            "confidence |prediction| / sensitivity, the sensitivity taken before the example is learned.",
       section=FILES),
    _o("confidence_after_training", ("--confidence-after-training", "--confidence_after_training"), "flag", False,
       dask=False, help="With --confidence: the sensitivity after the example is learned (alone: nothing, "
                        "as in VW).", section=FILES),
    _o("noop", ("--noop",), "flag", False, dask=False,
       help="VW's noop learner: read the examples and learn nothing; every prediction is 0 (-i's "
            "weights are not read).", section=FILES),
    _o("print_examples", ("--print",), "flag", False, dask=False,
       help="VW's print learner: learn nothing (as --noop) and print every example on stderr as VW "
            "does (label [weight [base]] ['tag]| index[:value] ...).", section=REPORTS),
    _o("preserve_performance_counters", ("--preserve-performance-counters", "--preserve_performance_counters"),
       "flag", False, help="With -i (training): the progress counters (examples, weights, loss, passes) "
                           "go on from the model's, as VW's; without it they start at 0.", section=FILES),
    _o("invert_hash", ("--invert-hash", "--invert_hash"), "text", None, metavar="PATH", dask=False,
       help="Write the readable model with the name of the first feature seen at each weight.", section=FILES, sparse=False),
    _o("extra_metrics", ("--extra-metrics", "--extra_metrics"), "text", None, metavar="PATH", dask=False,
       help="Write VW's JSON file of the run's metrics: the learn and predict calls VW's learner makes, its "
            "log messages, FTRL/coin/PiSTOL's state.", section=REPORTS),
    _o("audit", ("--audit", "-a"), "flag", False, dask=False,
       help="Print every example's prediction and its features (name:index:value:weight) on stdout.",
       section=REPORTS, sparse=False),
    _o("shuffle", ("--shuffle",), "flag", False, dask=False,
       help="Passes after the first visit the examples in a random order (held-out ones stay put).",
       section=PASSES),
    _o("random_seed", ("--random-seed", "--random_seed"), "int", 0, estimator=0,
       help="Seed of every random choice (--shuffle, randomized pivots): same seed, same model.", section=PASSES),
    _o("dask", ("--dask",), "text", None, metavar="ADDRESS|local:N", config=False,
       help="Train on a Dask cluster (needs streamlearn[dask]): the scheduler's address, or "
            "local:N to start N local worker processes. Every -d path or quoted glob is a shard; "
            "the shards' models are merged at the end of every one of the --passes (or --sync-every N).",
       section=DASK),
    _o("mix", ("--mix",), "choice", "weighted", choices=("weighted", "uniform"), config=False,
       help="With --dask: merge the shards' weights G-weighted (adaptive rules, as VW) or uniformly.",
       section=DASK),
    _o("sync_every", ("--sync-every", "--sync_every"), "int", None, metavar="N", config=False,
       help="With --dask: merge every N examples of each shard instead of at the end of each pass.",
       section=DASK),
    _o("split", ("--split",), "int", None, metavar="N", config=False,
       help="With --dask: cut every plain (uncompressed) -d file into N line-aligned byte ranges, "
            "each a shard.", section=DASK),
)

#: the model options in the order a model file's header and a readable model's ``options:`` line
#: hold them: the file format, frozen (a new stored option is "if_used" and comes after them)
HEADER_ORDER = (
    "bits", "noconstant", "hash", "hash_seed",
    "loss", "quantile_tau", "link", "binary", "algo", "adaptive", "normalized", "invariant",
    "learning_rate", "power_t", "initial_t", "decay_learning_rate", "l1", "threshold", "period",
    "cumulative_penalty", "radius", "projection", "batch_size", "reg", "l2", "lam", "p_norm",
    "ftrl_alpha", "ftrl_beta", "oaa", "indexing", "l2_ball",
    "quadratic", "cubic", "interactions", "leave_duplicate_interactions", "permutations",
    "ngram", "skips", "ignore", "ignore_linear", "keep", "redefine",
)


def train_options(specs) -> tuple:
    """Every option of a training run in ``--help`` order: the run's, those learners share, each
    learner's own (``LearnerSpec.declares``, in registry order), then the rest of the run's."""
    own = tuple(o for spec in specs for o in spec.declares)
    every = (RUN_OPTIONS + SHARED_LEARNER_OPTIONS + own + LATE_OPTIONS + FEATURE_EXPANSION + LOWRANK_OPTIONS
             + FINAL_OPTIONS)
    return declared_once(every)


def declared_once(every: tuple) -> tuple:
    """``every``, unless an option name is declared twice in it (a command's options are one namespace)."""
    names = [o.name for o in every]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"options declared twice: {', '.join(twice)}")
    return every
