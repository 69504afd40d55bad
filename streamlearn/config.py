"""Validated run configurations, built from the options a user gave.

The CLI passes only the options given on the command line (``explicit``); defaults fill the rest. With
``-i MODEL`` every option not given takes the model's value, and an option that changes hashing
(``-b``, ``--noconstant``, ``--hash``, ``--hash-seed``) may not disagree with the model.
Every check here raises ``OptionError`` with the exact text the user sees.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, make_dataclass

from streamlearn import options as _options
from streamlearn.errors import OptionError
from streamlearn.io.reader import DEFAULT_BLOCK_SIZE
from streamlearn.options import (  # noqa: F401  (the names of the choices, for the CLI and tests)
    FEATURE_EXPANSION, FORMAT_NAMES, HASH_NAMES, HEADER_ORDER, LINK_NAMES, LOSS_NAMES, REQUIRED,
    SHARED_LEARNER_OPTIONS, default_threads,
)

MAX_BITS = 32

from streamlearn import learners as _registry  # noqa: E402  (the learners' specs and their options)

#: every option of a training run, declared once (``streamlearn.options``; a learner's own in its module)
OPTIONS = _options.train_options(_registry.SPECS)
OPTION = {o.name: o for o in OPTIONS}

#: options that decide feature indices: a model and the data fed to it must agree on them
HASHING_OPTIONS = ("bits", "noconstant", "hash", "hash_seed")
#: options every model file stores, in the file's order (the file format: ``options.HEADER_ORDER``)
MODEL_OPTIONS = HEADER_ORDER
#: options a model file stores only when they differ from their default (declared ``stored="if_used"``)
IF_USED_OPTIONS = tuple(o.name for o in OPTIONS if o.stored == "if_used")
#: the run's (not a learner's) options a model stores when they differ from their default
RUN_IF_USED = tuple(o.name for o in _options.RUN_OPTIONS + _options.LATE_OPTIONS + _options.FINAL_OPTIONS
                    if o.stored == "if_used")
#: the options a learner declares (an "if_used" one of them is stored when the learner takes it)
LEARNER_DECLARED = frozenset(o.name for spec in _registry.SPECS for o in spec.declares)
#: every option a model file may hold
STORED_OPTIONS = MODEL_OPTIONS + IF_USED_OPTIONS
#: feature-expansion options (VW's -q, --cubic, --interactions, n-grams, --ignore, ...): they decide
#: the features, so a model stores them and data fed to it is expanded the same way
FEATURE_OPTIONS = tuple(o.name for o in FEATURE_EXPANSION)
#: the update-rule flags (VW's): giving any of them turns on exactly the properties given
RULE_FLAGS = ("sgd", "adaptive", "normalized", "invariant")
#: model options a model written before they existed lacks (it used plain SGD)
LEGACY_MODEL_OPTIONS = {o.name: o.legacy for o in OPTIONS if o.stored == "always" and o.legacy is not REQUIRED}
#: how each option is spelled on the command line, for messages
FLAG = {o.name: o.spelling for o in OPTIONS}
#: flags that mean ``--algo`` a learner (VW's ``--ftrl``): option -> learner
#: options the sparse weight store refuses (``Option.sparse``), as messages name them
SPARSE_REFUSED = tuple((o.name, o.spelling) for o in OPTIONS if not o.sparse)
LEARNER_FLAGS = {o.name: o.selects for o in OPTIONS if o.selects}

#: options of the regularized learners, checked first (sgd takes none of them)
TG_OPTIONS = ("l1", "threshold", "period", "cumulative_penalty")
#: the learner options in the order they are checked, by stage: each belongs to the learners whose
#: spec lists it (``LearnerSpec.options``); a learner's own check (``LearnerSpec.check``) runs after
#: the stage its spec names (``LearnerSpec.check_stage``; "end": after all the checks)
OPTION_STAGES = (("regularization", TG_OPTIONS), ("p_norm", ("p_norm",)),
                 ("reg", ("reg", "l2", "lam", "l2_ball")),
                 ("radius", ("radius", "projection")), ("ftrl", ("ftrl_alpha", "ftrl_beta")))
#: then every other option a learner declares (``LearnerSpec.declares``), in declaration order
OPTION_STAGES += (("own", tuple(o.name for spec in _registry.SPECS for o in spec.declares
                                if o.config and not any(o.name in names for _, names in OPTION_STAGES))),)
#: options that do not apply to the batch learner scd (no step size, no holdout, no sampling)
SCD_REFUSES = ("learning_rate", "power_t", "initial_t", "decay_learning_rate", "holdout_period", "holdout_after",
               "holdout_off", "early_terminate", "shuffle", "invariant", "sgd", "plot", "trace",
               "trace_every", "trace_data")

def _spec(algo):
    """The spec of a learner name, None when there is no such learner."""
    return _registry.LEARNERS.get(algo)


def _choices(option: str) -> tuple:
    """The names an option accepts, from the spec of the learner that defines them."""
    for spec in _registry.SPECS:
        if option in spec.choices:
            return tuple(spec.choices[option])
    raise KeyError(option)


def _takers(option: str) -> tuple:
    """The learners that accept a learner option, in registry order."""
    return tuple(spec.name for spec in _registry.SPECS if option in spec.options)


def _one_of(names) -> str:
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]


def algo_help() -> str:
    """``--algo``'s help, from the learners' specs: each learner in a few words, then how a learner is
    chosen when --algo is not given (``_resolve_algo``)."""
    specs = _registry.SPECS
    names = _one_of([f"{s.name} ({s.summary})" if s.summary else s.name for s in specs])
    picks = [f"{s.name} when {_one_of([FLAG[n] for n in s.selected_by])} is given" for s in specs if s.selected_by]
    bare = [f"{s.name} for {_one_of([FLAG[n] for n in s.default_for])}"
            + "".join(f" or with {FLAG[n]}" for n in s.options if n not in s.default_for and n in FLAG)
            + "".join(f" with {FLAG[n]}" for n in s.default_needs) + " with no option of another learner"
            + (f" nor {_one_of([FLAG[n] for n in s.default_unless])}" if s.default_unless else "")
            for s in specs if s.default_for]
    return (f"Learner: {names}. Default: {'; '.join(bare)}; else {'; '.join(picks)} (the later one when "
            f"several are); with -i, the model's learner if it takes the options given; else sgd.")


def option_choices(option) -> tuple | None:
    """The names a choice option accepts (those the learners define come from their specs)."""
    if option.choices == _options.FROM_LEARNERS:
        return ALGO_NAMES if option.name == "algo" else _reg_choices(None)
    return option.choices


def _needs(option: str) -> OptionError:
    return OptionError(f"{FLAG.get(option, '--' + option.replace('_', '-'))} needs --algo "
                       f"{_one_of(_takers(option))}")


def plain_only(algo, reg=None, batch_size=1, l2_ball=None) -> bool:
    """The learner takes only the plain schedule (no --adaptive / --normalized)."""
    spec = _spec(algo)
    return spec is not None and spec.plain_only(_Options(reg=reg, batch_size=batch_size,
                                                         l2_ball=l2_ball)) is not None


@dataclass(frozen=True)
class _Options:
    """The options ``LearnerSpec.plain_only`` reads, before the configuration exists."""
    reg: str | None
    batch_size: int
    l2_ball: float | None = None

class _TrainConfigMethods:
    """What a run configuration derives from its options (``TrainConfig``'s methods)."""

    @property
    def per_feature(self) -> bool:
        """Per-feature rates are on (adaptive or normalized)."""
        return self.adaptive or self.normalized

    def rule(self) -> str:
        """The update rule in words, for the preamble."""
        on = [n for n in ("adaptive", "normalized", "invariant") if getattr(self, n)]
        return ", ".join(on) if on else "plain sgd"

    @property
    def holdout(self) -> int:
        """Holdout period in effect: 0 when off (one pass, --holdout-off); -N with --holdout-after N
        (the examples after the N-th of each pass are held out, also with one pass, as VW)."""
        if self.holdout_off:
            return 0
        if self.holdout_after:      # VW's --holdout_after N: every example after the N-th (-N here)
            return -self.holdout_after
        if self.passes == 1 and "holdout_period" not in self.explicit:
            return 0
        return self.holdout_period

    def model_options(self) -> dict:
        """The options a model file stores: every "always" one, in the file's order, then each
        "if_used" one the learner takes (or the run's own: --interact, --affix) whose value is not its
        default."""
        out = {name: getattr(self, name) for name in MODEL_OPTIONS}
        takes = _registry.get(self.algo).options + RUN_IF_USED
        for name in IF_USED_OPTIONS:
            used = getattr(self, name) != OPTION[name].default_value()
            if used and (name in takes or name not in LEARNER_DECLARED):
                out[name] = getattr(self, name)
        return out

    @property
    def classes(self) -> int:
        """K of a multiclass model (--oaa K or --csoaa K), 0 for a binary or regression one."""
        return self.oaa or self.csoaa or self.multilabel_oaa

    @property
    def ldf(self) -> str | None:
        """The label-dependent-features reduction (docs/multiclass.md): "m" or "mc" (--csoaa_ldf), "wap"
        (--wap_ldf, either mode), None without."""
        mode = getattr(self, "csoaa_ldf", None)
        if mode is not None:
            return "mc" if mode in ("mc", "multiline-classifier") else "m"
        return "wap" if getattr(self, "wap_ldf", None) is not None else None

    @property
    def class_width(self) -> int:
        """W: class k of feature h is slot (h*W + k) mod 2^b (1 without classes; with --lrq/--lrqfa the
        width of a feature's row of latent weights, ``streamlearn.features.lowrank``)."""
        from streamlearn.core.multiclass import class_width
        if not self.classes and (self.lowrank is not None or self.nn):
            # VW's feature widths multiplied, then the power of two: --nn K's K + 1 (the hidden units and
            # the output layer) and --lrq/--lrqfa's latent weights
            low = self.lowrank
            return class_width((self.nn + 1 if self.nn else 1) * (low.feature_width if low is not None else 1))
        return class_width(self.classes)

    @property
    def norm_states(self) -> int:
        """The update rule's normalizer states beyond the shared one (VW's per-model states of gd): one
        per class, or with --nn K one per hidden unit and one for the output layer."""
        return self.classes or (self.nn + 1 if self.nn else 0)

    @property
    def lowrank(self):
        """--lrq/--lrqfa parsed (``streamlearn.features.lowrank.LowRank``), None without them."""
        from streamlearn.features.lowrank import lowrank_of
        return lowrank_of(self)

    @property
    def expands(self) -> bool:
        """Some feature-expansion option is given (else the parsed features go to the learner as
        they are)."""
        return any(getattr(self, name) for name in FEATURE_OPTIONS)

    def feature_spec(self):
        """The feature expansion these options ask for (streamlearn.features.expansion.FeatureSpec)."""
        from streamlearn.features.expansion import FeatureSpec
        return FeatureSpec.from_options(**{name: getattr(self, name) for name in FEATURE_OPTIONS})


def _field(o):
    value = o.default
    if callable(value):
        return o.name, o.annotation, field(default_factory=value)
    return o.name, o.annotation, value


#: a training run's configuration: one field per option (``OPTIONS`` that are not command-line
#: conveniences), then what the library sets: a Dask task's part of its shard (``streamlearn.dask``
#: sets them; no CLI option): the one source's line-aligned byte range (start, end[, number of the line
#: at start]), and the window (start, stop) of its examples that this run trains on (a
#: ``--sync-every`` period); and the options the user gave explicitly (defaults that depend on them,
#: checks, -i merging)
TrainConfig = make_dataclass(
    "TrainConfig",
    [_field(o) for o in OPTIONS if o.config]
    + [("shard_range", "tuple | None", None), ("shard_window", "tuple | None", None),
       ("explicit", "frozenset", field(default_factory=frozenset))],
    bases=(_TrainConfigMethods,), frozen=True)
TrainConfig.__module__ = __name__
TrainConfig.__doc__ = "A training run's options, checked (``train_config``)."


@dataclass(frozen=True)
class PredictConfig:
    initial_model: str
    sources: tuple = ("-",)
    format: str = "auto"
    predictions: str = "-"
    link: str | None = None
    binary: bool | None = None
    probabilities: bool = False
    scores: bool = False
    quiet: bool = False
    strict: bool = False
    block_size: int = DEFAULT_BLOCK_SIZE
    threads: int = field(default_factory=lambda: default_threads())


def _fmt(v) -> str:
    if isinstance(v, tuple):
        return " ".join(map(str, v)) if v else "(none)"
    if isinstance(v, float):
        if math.isfinite(v) and v == int(v) and abs(v) < 1e15:
            return str(int(v))
        return repr(v)
    return str(v)


def _check_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise OptionError(f"{FLAG.get(name, '--' + name)} must be one of {', '.join(choices)} (got {value})")


def _check_common(cfg) -> None:
    _check_choice("format", cfg.format, FORMAT_NAMES)
    if cfg.block_size < 1:
        raise OptionError(f"--block-size must be at least 1 (got {cfg.block_size})")
    if cfg.threads < 1:
        raise OptionError(f"--threads must be at least 1 (got {cfg.threads})")
    if not cfg.sources and not getattr(cfg, "no_stdin", False):
        raise OptionError("no input: give -d FILE or pipe data to stdin")


def _check_train(cfg: TrainConfig) -> None:
    _check_common(cfg)
    if not 1 <= cfg.bits <= MAX_BITS:
        raise OptionError(f"-b/--bits must be between 1 and {MAX_BITS} (got {cfg.bits})")
    _check_choice("loss", cfg.loss, LOSS_NAMES)
    _check_choice("algo", cfg.algo, ALGO_NAMES)
    _check_choice("link", cfg.link, LINK_NAMES)
    _check_choice("hash", cfg.hash, HASH_NAMES)
    if cfg.max_example_features is not None and cfg.max_example_features < 1:
        raise OptionError(f"--max-example-features must be at least 1 (got {cfg.max_example_features})")
    if not 0 <= cfg.hash_seed < 2 ** 32:
        raise OptionError(f"--hash-seed must be between 0 and 4294967295 (got {cfg.hash_seed})")
    if cfg.shard_range is not None and len(cfg.sources) != 1:
        raise OptionError("a byte range (shard_range) needs exactly one source")
    if cfg.shard_window is not None and cfg.shuffle:
        raise OptionError("--shuffle cannot train on a window of examples (shard_window)")
    nonneg = ("learning_rate", "power_t", "initial_t", "l1", "l2", "lam")
    for name in nonneg:
        v = getattr(cfg, name)
        if not v >= 0 or math.isinf(v):
            raise OptionError(f"{FLAG[name]} must be a finite number >= 0 (got {_fmt(v)})")
    if cfg.l2_ball is not None and not cfg.l2_ball > 0:
        raise OptionError(f"--l2-ball must be a number > 0, or inf for no projection (got {_fmt(cfg.l2_ball)})")
    if not cfg.decay_learning_rate > 0 or math.isinf(cfg.decay_learning_rate):
        raise OptionError(f"--decay-learning-rate must be a finite number > 0 (got {_fmt(cfg.decay_learning_rate)})")
    if not cfg.threshold >= 0:
        raise OptionError(f"--threshold must be >= 0 (got {_fmt(cfg.threshold)})")
    if not 0 < cfg.quantile_tau < 1:
        raise OptionError(f"--quantile-tau must be between 0 and 1 (got {_fmt(cfg.quantile_tau)})")
    if "quantile_tau" in cfg.explicit and cfg.loss != "quantile":
        raise OptionError("--quantile-tau needs --loss quantile")
    if cfg.loss == "expectile" and not (cfg.expectile_q is not None and 0 < cfg.expectile_q <= 0.5):
        got = "" if cfg.expectile_q is None else f" (got {_fmt(cfg.expectile_q)})"
        raise OptionError(f"--loss expectile needs --expectile-q Q with 0 < Q <= 0.5{got}")
    if cfg.expectile_q is not None and cfg.loss != "expectile":
        raise OptionError("--expectile-q needs --loss expectile")
    if cfg.classweight:
        from streamlearn.run.classweight import parse as parse_classweight
        parse_classweight(cfg.classweight)      # raises OptionError for a malformed pair
    if "batch_size" in cfg.explicit and "batch_size" not in _spec(cfg.algo).options:
        raise _needs("batch_size")
    for name in ("period", "passes", "early_terminate", "holdout_period", "batch_size"):
        if getattr(cfg, name) < 1:
            raise OptionError(f"{FLAG[name]} must be at least 1 (got {getattr(cfg, name)})")
    if cfg.interact is not None:
        pair = cfg.interact.encode("utf-8", "surrogateescape")
        if len(pair) != 2 or pair[0] == pair[1]:
            raise OptionError(f"--interact needs two different namespace letters, as ab (got {cfg.interact})")
        for name in ("audit", "invert_hash"):
            if getattr(cfg, name):
                raise OptionError(f"{FLAG[name]} does not show --interact's products (give one or the other)")
    if cfg.print_examples and (cfg.expands or cfg.interact is not None):
        raise OptionError("--print shows the parsed features only: it does not combine with the feature "
                          "expansion options or --interact")
    if cfg.confidence:
        if cfg.algo != "sgd" or cfg.oaa or cfg.testonly or cfg.noop or cfg.print_examples:
            raise OptionError("--confidence needs --algo sgd (VW's gradient descent), learning, without --oaa")
    if cfg.holdout_after < 0:
        raise OptionError(f"--holdout-after must be at least 0 (got {cfg.holdout_after})")
    if cfg.progress is not None:
        progress_schedule(cfg.progress)     # raises OptionError when it is not a number
    if cfg.holdout_off and "holdout_period" in cfg.explicit:
        raise OptionError("--holdout-off and --holdout-period cannot be used together")
    _check_choice("projection", cfg.projection, _choices("projection"))
    _check_multiclass(cfg)
    _check_lowrank(cfg)
    _check_nn(cfg)
    _check_named_labels(cfg)
    _check_choice("reg", cfg.reg, _reg_choices(cfg.algo))
    _check_learner_options(cfg)
    if cfg.algo == "scd":
        _check_scd(cfg)
    if cfg.shuffle and cfg.passes < 2:
        raise OptionError("--shuffle needs --passes 2 or more (the first pass reads the input in order)")
    if not 0 <= cfg.random_seed < 2 ** 32:
        raise OptionError(f"--random-seed must be between 0 and 4294967295 (got {cfg.random_seed})")
    if cfg.objective_data is not None and not cfg.objective_data:
        raise OptionError("--objective-data needs a file name")
    if cfg.expands:
        cfg.feature_spec()      # raises OptionError for a malformed expansion option
    if cfg.vw_model_out is not None and cfg.algo not in ("sgd", "ftrl"):
        raise OptionError(f"--vw-model-out writes the models of VW's linear learners (--algo sgd: the default "
                          f"rule or --sgd; --algo ftrl: --ftrl); this run is --algo {cfg.algo}")
    paths = [(n, getattr(cfg, n)) for n in ("final_model", "vw_model_out", "readable_model", "invert_hash", "cache_file",
                                            "predictions", "plot", "trace")]
    outputs = [(n, p) for n, p in paths if p and p != "-"]
    for i, (n1, p1) in enumerate(outputs):
        for n2, p2 in outputs[i + 1:]:
            if p1 == p2:
                raise OptionError(f"the same file {p1} is given for two outputs")
    for n, p in outputs:
        if p in cfg.sources:
            raise OptionError(f"output file {p} is also an input")
    if cfg.plot is not None:
        _check_plot(cfg.plot)
    if cfg.trace_every < 1:
        raise OptionError(f"--trace-every must be at least 1 (got {cfg.trace_every})")
    for name in ("trace_every", "trace_data"):
        if name in cfg.explicit and cfg.trace is None:
            raise OptionError(f"{FLAG[name]} needs --trace FILE")
    if cfg.trace is not None:
        folder = os.path.dirname(cfg.trace) or "."
        if not os.path.isdir(folder):
            raise OptionError(f"--trace {cfg.trace}: directory {folder} does not exist")


def progress_schedule(text: str | None) -> tuple[bool, float, str | None]:
    """VW's -P/--progress (parse_args.cc): (additive, interval, warning or None). Without a '.' the
    value is additive (a row every N weighted examples, at least 1), with one multiplicative (a row
    each time the weighted examples grow X-fold; X <= 1 becomes X + 1). None: VW's default, x2.
    The interval is a float32 as VW's."""
    import numpy as np
    if text is None:
        return False, 2.0, None
    try:
        value = float(np.float32(float(text)))
    except ValueError:
        raise OptionError(f"-P/--progress must be a number (got {text})") from None
    if not math.isfinite(value):
        raise OptionError(f"-P/--progress must be a finite number (got {text})")
    if "." not in text:
        if value < 1:
            return True, 1.0, "Additive --progress <int> can't be < 1: forcing to 1"
        return True, value, None
    if value <= 1.0:
        return False, float(np.float32(value + 1.0)), f"Multiplicative --progress <float> '{text}' is <= 1.0: adding 1.0"
    if value > 9.0:
        return False, value, f"Multiplicative --progress <float> '{text}' is > 9.0: did you mean to use an integer?"
    return False, value, None


#: the formats --plot writes (by the file's suffix)
PLOT_FORMATS = (".png", ".pdf", ".svg")


def _check_plot(path: str) -> None:
    """--plot FILE: a known suffix, an existing directory, and matplotlib installed."""
    if os.path.splitext(path)[1].lower() not in PLOT_FORMATS:
        raise OptionError(f"--plot {path}: the file name must end in {', '.join(PLOT_FORMATS)}")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise OptionError(f"--plot {path}: directory {folder} does not exist")
    import importlib.util
    if importlib.util.find_spec("matplotlib") is None:
        raise OptionError("--plot needs matplotlib: pip install 'streamlearn[plot]'")


def _reg_choices(algo) -> tuple:
    """The regularizers a learner takes (every learner's, when it takes none)."""
    spec = _spec(algo)
    if spec is not None and "reg" in spec.choices:
        return tuple(spec.choices["reg"])
    names = []
    for s in _registry.SPECS:
        names += [n for n in s.choices.get("reg", ()) if n not in names]
    return tuple(names)


def class_names(text: str | None) -> tuple:
    """The names of --named_labels a,b,c (class 1 first)."""
    return tuple(text.split(",")) if text else ()


def _check_named_labels(cfg: TrainConfig) -> None:
    if cfg.named_labels is None:
        return
    if not cfg.classes:
        raise OptionError("--named_labels needs --oaa K or --csoaa K")
    names = class_names(cfg.named_labels)
    if any(not n or any(c.isspace() or c in "|:" for c in n) for n in names):
        raise OptionError(f"--named_labels {cfg.named_labels!r}: names are not empty and hold no space, '|' or ':'")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise OptionError(f"--named_labels names {twice[0]} twice")
    if cfg.format == "libsvm":
        raise OptionError("--named_labels reads VW's text format, not libsvm")


def _needs_kernel(cfg: TrainConfig, kernel: str, flag: str, runs: str, after: str = ""):
    """The learner's spec when it has ``kernel`` (a reduction's kernel: ``LearnerSpec.csoaa_kernel``, ...);
    otherwise an OptionError naming the learners that do."""
    spec = _spec(cfg.algo)
    if spec is None or getattr(spec, kernel) is None:
        takers = [s.name for s in _registry.SPECS if getattr(s, kernel) is not None]
        raise OptionError(f"{flag} does not apply to --algo {cfg.algo}; {runs} --algo {_one_of(takers)}{after}")
    return spec


def _check_multilabel(cfg: TrainConfig) -> None:
    """--multilabel_oaa K: one-against-all of each class of label sets (the learner's multilabel kernel)."""
    if cfg.multilabel_oaa < 1:
        raise OptionError(f"--multilabel_oaa needs at least 1 class (got {cfg.multilabel_oaa})")
    if cfg.oaa or cfg.csoaa:
        raise OptionError("--multilabel_oaa cannot be used with --oaa or --csoaa")
    if cfg.multilabel_oaa > 1 << cfg.bits:
        raise OptionError(f"--multilabel_oaa {cfg.multilabel_oaa} needs more weights per feature than -b "
                          f"{cfg.bits} gives ({1 << cfg.bits}); use a larger -b")
    spec = _needs_kernel(cfg, "multilabel_kernel", "--multilabel_oaa", "it runs")
    if cfg.format == "libsvm":
        raise OptionError("--multilabel_oaa reads VW's text format (label sets), not libsvm")
    if cfg.named_labels is not None:
        raise OptionError("--named_labels does not apply to --multilabel_oaa (its classes are 0..K-1)")
    for name in ("batch_size", "binary", "scores", "raw_predictions", "indexing", "shuffle", "trace"):
        value = getattr(cfg, name, None)
        if name in cfg.explicit and value is not None and value is not False \
                and not (name == "batch_size" and value == 1):
            raise OptionError(f"{FLAG[name]} does not apply to --multilabel_oaa")
    if cfg.link not in ("identity", "logistic"):
        raise OptionError("--multilabel_oaa takes --link identity or logistic")
    if cfg.passes > 1 and "-" in cfg.sources:
        raise OptionError("--multilabel_oaa with --passes reads its input again on every pass: give files, not stdin")
    if cfg.loss == "softmax":
        raise OptionError("--loss softmax does not apply to --multilabel_oaa")


def _check_csoaa(cfg: TrainConfig) -> None:
    """--csoaa K: cost-sensitive one-against-all over the learner's regressions (its csoaa kernel)."""
    if cfg.csoaa < 2:
        raise OptionError(f"--csoaa needs at least 2 classes (got {cfg.csoaa})")
    if cfg.oaa:
        raise OptionError("--csoaa and --oaa cannot be used together")
    if cfg.csoaa > 1 << cfg.bits:
        raise OptionError(f"--csoaa {cfg.csoaa} needs more weights per feature than -b {cfg.bits} gives "
                          f"({1 << cfg.bits}); use a larger -b")
    spec = _needs_kernel(cfg, "csoaa_kernel", "--csoaa", "cost-sensitive one-against-all runs")
    if cfg.probabilities:       # VW's own refusal
        raise OptionError("--csoaa does not support --probabilities (use --oaa)")
    if cfg.format == "libsvm":
        raise OptionError("--csoaa reads VW's text format (cost-sensitive labels), not libsvm")
    for name in ("batch_size", "binary", "link", "scores", "shuffle", "trace"):
        value = getattr(cfg, name, None)
        if name in cfg.explicit and value is not None and value is not False and value != "identity" \
                and not (name == "batch_size" and value == 1):
            raise OptionError(f"{FLAG[name]} does not apply to --csoaa")
    if cfg.passes > 1 and "-" in cfg.sources:
        raise OptionError("--csoaa with --passes reads its input again on every pass: give files, not stdin")
    if cfg.loss == "softmax":
        raise OptionError("--loss softmax does not apply to --csoaa (each class's cost is a regression)")


def _check_ldf(cfg: TrainConfig) -> None:
    """--csoaa_ldf / --wap_ldf: multi-line examples of label-dependent features (the learner's ldf kernels)."""
    flag = "--csoaa_ldf" if cfg.csoaa_ldf is not None else "--wap_ldf"
    if cfg.csoaa_ldf is not None and cfg.wap_ldf is not None:
        raise OptionError("--csoaa_ldf and --wap_ldf cannot be used together")
    if cfg.classes:
        raise OptionError(f"{flag} cannot be used with --oaa, --csoaa or --multilabel_oaa")
    spec = _needs_kernel(cfg, "ldf_kernels", flag, "label-dependent features run")
    if cfg.format not in ("auto", "vw"):
        raise OptionError(f"{flag} reads VW's text format (multi-line examples), not {cfg.format}")
    for name in ("batch_size", "binary", "scores", "shuffle", "trace", "indexing", "named_labels"):
        value = getattr(cfg, name, None)
        if name in cfg.explicit and value is not None and value is not False \
                and not (name == "batch_size" and value == 1):
            raise OptionError(f"{FLAG[name]} does not apply to {flag}")
    if cfg.link != "identity" and not cfg.probabilities:
        # VW replaces the link by identity with --probabilities (the probabilities are its own logistic)
        raise OptionError(f"--link does not apply to {flag} (use --probabilities)")
    if cfg.lrq or cfg.lrqfa or cfg.nn:
        raise OptionError(f"{flag} cannot be used with --lrq, --lrqfa or --nn")
    if cfg.passes > 1 and "-" in cfg.sources:
        raise OptionError(f"{flag} with --passes reads its input again on every pass: give files, not stdin")
    if cfg.loss == "softmax":
        raise OptionError(f"--loss softmax does not apply to {flag}")
    if cfg.shard_range is not None or cfg.shard_window is not None:
        raise OptionError(f"{flag} does not train on a part of its input (a multi-line example may span parts)")


def _check_multiclass(cfg: TrainConfig) -> None:
    """--oaa K (one-against-all over a binary learner, or the softmax learner's classes) and the
    options that go with it."""
    spec = _spec(cfg.algo)
    if cfg.ldf is not None:
        _check_ldf(cfg)
        return
    if cfg.multilabel_oaa or "multilabel_oaa" in cfg.explicit:
        _check_multilabel(cfg)
    elif cfg.csoaa or "csoaa" in cfg.explicit:
        _check_csoaa(cfg)
    elif "oaa" in cfg.explicit or cfg.oaa:
        if cfg.oaa < 2:
            raise OptionError(f"--oaa needs at least 2 classes (got {cfg.oaa})")
        if cfg.oaa > 1 << cfg.bits:
            raise OptionError(f"--oaa {cfg.oaa} needs more weights per feature than -b {cfg.bits} gives "
                              f"({1 << cfg.bits}); use a larger -b")
        if cfg.loss == "softmax":
            if not spec.joint:
                raise OptionError(f"--loss softmax is learned by --algo softmax, not --algo {cfg.algo}")
        elif spec.joint:
            raise OptionError(f"--algo {cfg.algo} needs --loss softmax")
        elif not spec.one_against_all:
            takers = [s.name for s in _registry.SPECS if s.one_against_all]
            raise OptionError(f"--oaa does not apply to --algo {cfg.algo}; one-against-all runs --algo "
                              f"{_one_of(takers)}, and --loss softmax the softmax learner")
        if cfg.batch_size > 1:
            raise OptionError("--batch-size does not apply to --oaa: a mini-batch is one step of one "
                              "weight vector (for multiclass mini-batches, streamlearn.batch.fit)")
        if cfg.binary:
            raise OptionError("--binary does not apply to --oaa (the prediction is a class)")
        if cfg.link != "identity" and not (cfg.link == "logistic" and cfg.probabilities):
            # VW's --probabilities are the logistic link's already: --link logistic then changes nothing
            raise OptionError("--link does not apply to --oaa (use --probabilities)")
    else:
        if cfg.loss == "softmax":
            raise OptionError("--loss softmax needs --oaa K (the number of classes)")
        if spec.joint:
            raise OptionError(f"--algo {cfg.algo} needs --oaa K --loss softmax")
        for name in ("indexing", "probabilities", "scores", "raw_predictions"):
            if cfg.csoaa:
                break
            value = getattr(cfg, name)
            if name in cfg.explicit and value is not None and value is not False:
                raise OptionError(f"{FLAG[name]} needs --oaa K")
    if cfg.indexing is not None and cfg.indexing not in (0, 1):
        raise OptionError(f"--indexing must be 0 or 1 (got {cfg.indexing})")
    if cfg.probabilities and cfg.scores:
        raise OptionError("--probabilities and --scores cannot be used together")


def _check_lowrank(cfg: TrainConfig) -> None:
    """--lrq/--lrqfa: VW's low-rank quadratic features, over the sgd learner's binary or regression model."""
    if not (cfg.lrq or cfg.lrqfa is not None):
        if cfg.lrqdropout:
            raise OptionError("--lrqdropout needs --lrq")
        return
    if cfg.lrqdropout and not cfg.lrq:
        raise OptionError("--lrqdropout applies to --lrq, not --lrqfa")
    if cfg.lrq and cfg.lrqfa is not None:
        raise OptionError("--lrq and --lrqfa cannot be used together")
    flag = "--lrq" if cfg.lrq else "--lrqfa"
    low = cfg.lowrank           # raises OptionError for a malformed value
    spec = _needs_kernel(cfg, "lowrank_kernel", flag, "low-rank features run over", " (VW's gd)")
    if cfg.classes:
        raise OptionError(f"{flag} does not apply to --oaa, --csoaa or --multilabel_oaa")
    if cfg.interact is not None:
        raise OptionError(f"{flag} cannot be used with --interact")
    for name in ("audit", "invert_hash", "audit_regressor", "confidence", "print_examples"):
        if getattr(cfg, name):          # they name or score the parsed features only
            raise OptionError(f"{FLAG[name]} does not apply to {flag} (it reads the examples' own features, "
                              f"not the low-rank ones)")
    if cfg.batch_size > 1:
        raise OptionError(f"--batch-size does not apply to {flag}")
    spec_f = cfg.feature_spec() if cfg.expands else None
    if spec_f is not None:
        mine = set(low.namespaces)
        if spec_f.wildcards or any(mine & set(term) for term in spec_f.terms):
            raise OptionError(f"{flag}'s namespaces cannot be in -q/--cubic/--interactions terms (VW would "
                              f"interact the low-rank features too)")
        if any(spec_f.ngram_table[b] > 1 or spec_f.limit_table[b] >= 0 for b in mine):
            raise OptionError(f"{flag}'s namespaces cannot take --ngram or --feature_limit")
    if (1 << cfg.bits) < low.width:
        raise OptionError(f"{flag} needs {low.width} weights per feature, more than -b {cfg.bits} gives")


def _check_nn(cfg: TrainConfig) -> None:
    """--nn K: VW's neural network over the sgd learner's binary or regression model."""
    if not cfg.nn and "nn" not in cfg.explicit:
        for name in ("nn_dropout", "inpass", "multitask", "meanfield"):
            if getattr(cfg, name):
                raise OptionError(f"{FLAG[name]} needs --nn K")
        return
    if cfg.nn < 1:
        raise OptionError(f"--nn needs at least 1 hidden unit (got {cfg.nn})")
    spec = _needs_kernel(cfg, "nn_kernel", "--nn", "the network runs over", " (VW's gd)")
    if cfg.classes:
        raise OptionError("--nn does not apply to --oaa, --csoaa or --multilabel_oaa")
    if cfg.interact is not None or cfg.batch_size > 1:
        raise OptionError("--nn cannot be used with --interact or --batch-size")
    for name in ("invert_hash", "audit_regressor", "confidence", "print_examples"):
        if getattr(cfg, name):
            raise OptionError(f"{FLAG[name]} does not apply to --nn")
    if (1 << cfg.bits) < cfg.class_width:
        raise OptionError(f"--nn {cfg.nn} needs {cfg.class_width} weights per feature, more than -b {cfg.bits} "
                          f"gives")


def memory_limit(cfg) -> int:
    """--max-memory in bytes (a number with an optional K, M or G suffix); default 70% of RAM."""
    if cfg.max_memory is None:
        try:
            return int(0.7 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (ValueError, OSError, AttributeError):
            return 1 << 34
    text = str(cfg.max_memory).strip()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    number = text[:-1] if scale > 1 else text
    try:
        value = float(number) * scale
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise OptionError(f"--max-memory must be a size such as 500M or 4G (got {text})")
    return int(value)


def _check_scd(cfg) -> None:
    """Stochastic coordinate descent is a batch method for squared and logistic loss."""
    _check_choice("cd_order", cfg.cd_order, _choices("cd_order"))
    _check_choice("cd_step", cfg.cd_step, _choices("cd_step"))
    if cfg.loss not in ("squared", "logistic"):
        raise OptionError(f"--algo scd works with --loss squared or logistic (got {cfg.loss})")
    for name in SCD_REFUSES:
        if name in cfg.explicit:
            raise OptionError(f"{FLAG.get(name, '--' + name.replace('_', '-'))} does not apply to --algo scd "
                              f"(a batch method: exact coordinate steps, no step size, every pass over all "
                              f"examples)")
    memory_limit(cfg)


def _check_learner_options(cfg: TrainConfig) -> None:
    """Each learner option belongs to the learners whose spec lists it; the constrained and proximal
    learners that cannot take per-feature rates refuse them instead of mixing them in silently; then
    the learner's own checks (``LearnerSpec.check``)."""
    spec = _spec(cfg.algo)
    for stage, names in OPTION_STAGES:
        given = [n for n in names if n in cfg.explicit and n not in spec.options]
        if given and stage == "regularization":
            if not any(o.name in spec.options for o in SHARED_LEARNER_OPTIONS):
                raise OptionError(f"{FLAG[given[0]]} needs a regularized learner (--algo tg); "
                                  f"--algo {cfg.algo} does not regularize")
            if given[0] == "l1" and "radius" in spec.options:
                raise OptionError(f"--l1 needs --algo tg or fobos; --algo {cfg.algo} regularizes with --radius")
        if given:
            raise _needs(given[0])
        if stage == "p_norm" and cfg.p_norm is not None and not (cfg.p_norm >= 2 and math.isfinite(cfg.p_norm)):
            raise OptionError(f"--p-norm must be a finite number >= 2 (got {_fmt(cfg.p_norm)})")
        if stage == "own":
            for name in names:
                option = OPTION[name]
                if option.check is not None and name in spec.options:
                    why = option.check(getattr(cfg, name))
                    if why is not None:
                        raise OptionError(f"{FLAG[name]} must be {why} (got {_fmt(getattr(cfg, name))})")
        if stage == "radius" and "radius" in spec.options:
            if cfg.radius is None:
                raise OptionError(f"--algo {cfg.algo} needs --radius Z (the L1 norm the weights may reach)")
            if not cfg.radius > 0 or math.isinf(cfg.radius):
                raise OptionError(f"--radius must be a finite number > 0 (got {_fmt(cfg.radius)})")
        if spec.check is not None and spec.check_stage == stage:
            spec.check(cfg, FLAG)
    on = [n for n in ("adaptive", "normalized") if getattr(cfg, n)]
    why = spec.plain_only(cfg) if on else None
    if why is not None:
        raise OptionError(f"{FLAG[on[0]]} does not apply to --algo {cfg.algo}"
                          + (f" --reg {cfg.reg}" if "reg" in spec.options and cfg.batch_size == 1 else "")
                          + f": {why}, so it takes the plain schedule (--sgd, or no rule flag)")
    if cfg.invariant and not spec.takes_invariant:
        raise OptionError(f"--invariant does not apply to --algo {cfg.algo}: its update is not an SGD "
                          f"step (--sgd, or no rule flag)")
    if spec.check is not None and spec.check_stage == "end":
        spec.check(cfg, FLAG)


def _resolve_format(values: dict, explicit: dict) -> None:
    """VW's --csv and --json are --format csv and json; their options (and --affix) are checked here."""
    names = ("csv", "json", "csv_separator", "csv_ns_value", "csv_header", "csv_no_file_header", "affix")
    if not any(values.get(n) not in (None, False, "", ",") for n in names):
        return
    from streamlearn.io.textformats import check_csv_header, csv_ns_values, csv_separator, parse_affix
    given = [n for n in ("csv", "json") if explicit.get(n)]
    if len(given) > 1:
        raise OptionError("--csv and --json cannot be used together")
    if given:
        if explicit.get("format", given[0]) != given[0]:
            raise OptionError(f"--{given[0]} conflicts with --format {explicit['format']}")
        values["format"] = given[0]
    try:
        csv_separator(values.get("csv_separator", ","))
        csv_ns_values(values.get("csv_ns_value") or "")
        parse_affix(values.get("affix") or "")
        check_csv_header(values.get("csv_header") or "", values.get("csv_no_file_header", False))
    except ValueError as exc:
        raise OptionError(str(exc)) from None


def _resolve_algo(values: dict, explicit: dict) -> None:
    """No --algo: the -i model's learner when it takes every learner option given; else the learner
    an option given selects (``LearnerSpec.selected_by``; tg for --threshold/--period/
    --cumulative-penalty and --l1, l1ball for --radius/--projection, fobos for --reg/--l2/--lambda,
    ftrl for --ftrl-alpha/--ftrl-beta, a later one in the registry taking precedence); without a
    model, gravity (VW's own --l1 and --l2) for --l1 and/or --l2 with no option of another learner
    (``LearnerSpec.default_for``; update rule and rate options may be given), as VW runs them; else
    the model's or sgd."""
    if "algo" in explicit:
        return
    if values.get("loss") == "softmax":
        values["algo"] = "softmax"
        return
    specs = _registry.SPECS
    model = _spec(values.get("algo"))         # values hold the algo only when a model is given
    learner_options = {n for spec in specs for n in spec.options} & set(explicit)
    if model is not None and learner_options <= set(model.options):
        return
    for spec in specs:
        if any(n in explicit for n in spec.selected_by):
            values["algo"] = spec.name
    if model is None:
        for spec in specs:
            if (any(n in explicit for n in spec.default_for) and learner_options <= set(spec.options)
                    and not any(n in explicit for n in spec.default_unless)
                    and all(n in explicit for n in spec.default_needs)):
                values["algo"] = spec.name


def _resolve_reg(values: dict, explicit: dict) -> None:
    """--algo fobos without --reg: elastic when --l1 and --l2 are given, l2sq with --l2 alone, else
    l1 (or the -i model's)."""
    spec = _spec(values.get("algo"))
    if spec is None or "reg" not in spec.options or "reg" in explicit:
        return
    if "l1" in explicit and "l2" in explicit:
        values["reg"] = "elastic"
    elif "l2" in explicit:
        values["reg"] = "l2sq"
    elif "l1" in explicit and values.get("reg") not in ("l1", "elastic"):
        values["reg"] = "l1"           # a model's l2sq/l2/linf does not take --l1
    values.setdefault("reg", "l1")


def _resolve_rule(values: dict, explicit: dict) -> None:
    """VW's rules for the update rule and the defaults that follow from it (vw-spec.md §1c): no rule
    flag given means adaptive + normalized + invariant (or the -i model's rule); giving any of
    --sgd/--adaptive/--normalized/--invariant turns on exactly the properties given. Unless given,
    the learning rate is 0.5 with adaptive and normalized both on, else 10, and initial_t is 0 with
    per-feature rates, else 1."""
    sgd = values.pop("sgd", False)
    given = [n for n in RULE_FLAGS if n in explicit]
    if not given and plain_only(values.get("algo"), values.get("reg"), values.get("batch_size", 1),
                                values.get("l2_ball")):
        # these learners default to --sgd, also when -i switches to one of them from a model whose
        # rule has per-feature rates (a model of theirs keeps its own rule, --invariant included)
        if "adaptive" not in values or values["adaptive"] or values.get("normalized"):
            given, explicit = ["sgd"], dict(explicit, sgd=True)
    if not given:
        spec = _spec(values.get("algo"))
        if spec is not None and not spec.takes_invariant:
            values["invariant"] = False     # the default rule without the invariant step it cannot take
        if values.get("cumulative_penalty") is None:
            values["cumulative_penalty"] = values.get("adaptive", True) or values.get("normalized", True)
        return
    for name in ("adaptive", "normalized", "invariant"):
        values[name] = bool(explicit.get(name, False))
    if sgd and any(values[n] for n in ("adaptive", "normalized", "invariant")):
        on = next(n for n in ("adaptive", "normalized", "invariant") if values[n])
        raise OptionError(f"--sgd cannot be combined with {FLAG[on]}: --sgd means none of "
                          f"--adaptive, --normalized and --invariant")
    if "learning_rate" not in explicit:
        values["learning_rate"] = 0.5 if values["adaptive"] and values["normalized"] else 10.0
    if "initial_t" not in explicit:
        values["initial_t"] = 0.0 if values["adaptive"] or values["normalized"] else 1.0
    if "cumulative_penalty" not in explicit:
        values["cumulative_penalty"] = values["adaptive"] or values["normalized"]


def train_config(explicit: dict, model_options: dict | None = None) -> TrainConfig:
    """Build and check a TrainConfig from the explicitly given options (and a -i model's options)."""
    known = {f.name for f in fields(TrainConfig)} | {"sgd"}
    unknown = set(explicit) - known - set(LEARNER_FLAGS)
    if unknown:
        raise OptionError(f"unknown option {sorted(unknown)[0]}")
    explicit = dict(explicit)
    for name, learner in LEARNER_FLAGS.items():
        if explicit.pop(name, False):
            if explicit.get("algo", learner) != learner:
                raise OptionError(f"{FLAG[name]} means --algo {learner}; it cannot be combined with "
                                  f"--algo {explicit['algo']}")
            explicit["algo"] = learner
    values = {}
    explicit = {k: tuple(v) if k in FEATURE_OPTIONS and isinstance(v, list) else v
                for k, v in explicit.items()}
    if model_options is not None:
        model_options = {k: tuple(v) if isinstance(v, list) else v for k, v in model_options.items()}
        for name in HASHING_OPTIONS + FEATURE_OPTIONS + ("oaa", "interact", "csoaa", "multilabel_oaa", "lrq", "lrqfa",
                     "lrqdropout", "nn", "nn_dropout", "inpass", "multitask"):   # they decide where weights are
            theirs = model_options.get(name, OPTION[name].default_value())
            if name in explicit and explicit[name] != theirs:
                raise OptionError(
                    f"{FLAG[name]} {_fmt(explicit[name])} conflicts with the initial model's "
                    f"{FLAG[name]} {_fmt(theirs)}")
        values.update({k: v for k, v in model_options.items() if k in known and k != "sgd"})
    values.update(explicit)
    if explicit.get("onethread") and "threads" not in explicit:
        values["threads"] = 1          # VW's --onethread: one thread parses (the results are the same)
    _resolve_format(values, explicit)
    _resolve_algo(values, explicit)
    _resolve_reg(values, explicit)
    _resolve_rule(values, explicit)
    spec = _spec(values.get("algo"))
    for name, value in (spec.defaults.items() if spec is not None else ()):
        if name not in explicit and (model_options is None or model_options.get("algo") != spec.name):
            values[name] = value       # the learner's own default of an option it shares, unless given
    cfg = TrainConfig(**values, explicit=frozenset(explicit))
    _check_train(cfg)
    return cfg


def predict_config(**options) -> PredictConfig:
    cfg = PredictConfig(**options)
    _check_common(cfg)
    if cfg.link is not None:
        _check_choice("link", cfg.link, LINK_NAMES)
    return cfg


#: the names the learners' specs define (the CLI's choices; the checks above)
ALGO_NAMES = tuple(_registry.LEARNERS)
REG_NAMES = _reg_choices(None)
PROJECTION_NAMES, CD_ORDERS, CD_STEPS = (_choices(name) for name in ("projection", "cd_order", "cd_step"))
