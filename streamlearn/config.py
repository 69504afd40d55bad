"""Validated run configurations, built from the options a user gave.

The CLI passes only the options given on the command line (``explicit``); defaults fill the rest. With
``-i MODEL`` every option not given takes the model's value, and an option that changes hashing
(``-b``, ``--noconstant``, ``--hash``, ``--hash-seed``) may not disagree with the model.
Every check here raises ``OptionError`` with the exact text the user sees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from streamlearn.errors import OptionError
from streamlearn.io.reader import DEFAULT_BLOCK_SIZE

LOSS_NAMES = ("squared", "logistic", "hinge", "quantile")
ALGO_NAMES = ("sgd", "tg", "l1ball")
PROJECTION_NAMES = ("tree", "linear", "sort")
LINK_NAMES = ("identity", "logistic")
FORMAT_NAMES = ("auto", "vw", "libsvm")
HASH_NAMES = ("strings", "all")
MAX_BITS = 32

#: options that decide feature indices: a model and the data fed to it must agree on them
HASHING_OPTIONS = ("bits", "noconstant", "hash", "hash_seed")
#: options stored in a model file (hashing, prediction and learner settings)
MODEL_OPTIONS = HASHING_OPTIONS + (
    "loss", "quantile_tau", "link", "binary", "algo", "adaptive", "normalized", "invariant",
    "learning_rate", "power_t", "initial_t", "decay_learning_rate", "l1", "threshold", "period",
    "cumulative_penalty", "radius", "projection", "batch_size",
)
#: the update-rule flags (VW's): giving any of them turns on exactly the properties given
RULE_FLAGS = ("sgd", "adaptive", "normalized", "invariant")
#: model options a model written before they existed lacks (it used plain SGD)
LEGACY_MODEL_OPTIONS = {"adaptive": False, "normalized": False, "invariant": False,
                        "cumulative_penalty": False, "radius": None, "projection": "tree",
                        "batch_size": 1}
#: learner options of truncated gradient (rejected with plain sgd)
TG_OPTIONS = ("l1", "threshold", "period", "cumulative_penalty")
#: learner options of the L1-ball projection
L1BALL_OPTIONS = ("radius", "projection")
#: learners that take mini-batches
BATCH_LEARNERS = ("l1ball",)
#: learners that project in Euclidean geometry and so take the plain schedule only
PLAIN_ONLY = ("l1ball",)

#: how each option is spelled on the command line, for messages
FLAG = {
    "bits": "-b/--bits", "noconstant": "--noconstant", "hash": "--hash", "hash_seed": "--hash-seed",
    "loss": "--loss", "quantile_tau": "--quantile-tau", "link": "--link", "binary": "--binary",
    "algo": "--algo", "learning_rate": "-l/--learning-rate", "power_t": "--power-t",
    "initial_t": "--initial-t", "decay_learning_rate": "--decay-learning-rate", "l1": "--l1",
    "threshold": "--threshold", "period": "--period", "cumulative_penalty": "--cumulative-penalty",
    "passes": "--passes", "radius": "--radius", "projection": "--projection",
    "batch_size": "--batch-size",
    "holdout_period": "--holdout-period", "holdout_off": "--holdout-off",
    "early_terminate": "--early-terminate", "block_size": "--block-size", "sgd": "--sgd",
    "adaptive": "--adaptive", "normalized": "--normalized", "invariant": "--invariant",
    "predict_only_model": "--predict-only-model",
}


@dataclass(frozen=True)
class TrainConfig:
    sources: tuple = ("-",)
    format: str = "auto"
    bits: int = 18
    noconstant: bool = False
    hash: str = "strings"
    hash_seed: int = 0
    loss: str = "squared"
    quantile_tau: float = 0.5
    link: str = "identity"
    binary: bool = False
    algo: str = "sgd"
    adaptive: bool = True
    normalized: bool = True
    invariant: bool = True
    learning_rate: float = 0.5
    power_t: float = 0.5
    initial_t: float = 0.0
    decay_learning_rate: float = 1.0
    l1: float = 0.0
    threshold: float = math.inf
    period: int = 1
    cumulative_penalty: bool = False
    radius: float | None = None
    projection: str = "tree"
    batch_size: int = 1
    passes: int = 1
    holdout_period: int = 10
    holdout_off: bool = False
    early_terminate: int = 3
    cache_file: str | None = None
    kill_cache: bool = False
    final_model: str | None = None
    predict_only_model: bool = False
    initial_model: str | None = None
    predictions: str | None = None
    readable_model: str | None = None
    quiet: bool = False
    strict: bool = False
    block_size: int = DEFAULT_BLOCK_SIZE
    #: options the user gave explicitly (defaults that depend on them, checks, -i merging)
    explicit: frozenset = field(default_factory=frozenset)

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
        """Holdout period in effect: 0 when off (one pass, --holdout-off)."""
        if self.holdout_off or (self.passes == 1 and "holdout_period" not in self.explicit):
            return 0
        return self.holdout_period

    def model_options(self) -> dict:
        return {name: getattr(self, name) for name in MODEL_OPTIONS}


@dataclass(frozen=True)
class PredictConfig:
    initial_model: str
    sources: tuple = ("-",)
    format: str = "auto"
    predictions: str = "-"
    link: str | None = None
    binary: bool | None = None
    quiet: bool = False
    strict: bool = False
    block_size: int = DEFAULT_BLOCK_SIZE


def _fmt(v) -> str:
    if isinstance(v, float):
        if v == int(v) and abs(v) < 1e15:
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
    if not cfg.sources:
        raise OptionError("no input: give -d FILE or pipe data to stdin")


def _check_train(cfg: TrainConfig) -> None:
    _check_common(cfg)
    if not 1 <= cfg.bits <= MAX_BITS:
        raise OptionError(f"-b/--bits must be between 1 and {MAX_BITS} (got {cfg.bits})")
    _check_choice("loss", cfg.loss, LOSS_NAMES)
    _check_choice("algo", cfg.algo, ALGO_NAMES)
    _check_choice("link", cfg.link, LINK_NAMES)
    _check_choice("hash", cfg.hash, HASH_NAMES)
    if not 0 <= cfg.hash_seed < 2 ** 32:
        raise OptionError(f"--hash-seed must be between 0 and 4294967295 (got {cfg.hash_seed})")
    nonneg = ("learning_rate", "power_t", "initial_t", "l1")
    for name in nonneg:
        v = getattr(cfg, name)
        if not v >= 0 or math.isinf(v):
            raise OptionError(f"{FLAG[name]} must be a finite number >= 0 (got {_fmt(v)})")
    if not cfg.decay_learning_rate > 0 or math.isinf(cfg.decay_learning_rate):
        raise OptionError(f"--decay-learning-rate must be a finite number > 0 (got {_fmt(cfg.decay_learning_rate)})")
    if not cfg.threshold >= 0:
        raise OptionError(f"--threshold must be >= 0 (got {_fmt(cfg.threshold)})")
    if not 0 < cfg.quantile_tau < 1:
        raise OptionError(f"--quantile-tau must be between 0 and 1 (got {_fmt(cfg.quantile_tau)})")
    if "quantile_tau" in cfg.explicit and cfg.loss != "quantile":
        raise OptionError("--quantile-tau needs --loss quantile")
    if "batch_size" in cfg.explicit and cfg.algo not in BATCH_LEARNERS:
        raise OptionError(f"--batch-size needs --algo {' or '.join(BATCH_LEARNERS)}")
    for name in ("period", "passes", "early_terminate", "holdout_period", "batch_size"):
        if getattr(cfg, name) < 1:
            raise OptionError(f"{FLAG[name]} must be at least 1 (got {getattr(cfg, name)})")
    if cfg.holdout_off and "holdout_period" in cfg.explicit:
        raise OptionError("--holdout-off and --holdout-period cannot be used together")
    _check_choice("projection", cfg.projection, PROJECTION_NAMES)
    given = [n for n in TG_OPTIONS if n in cfg.explicit]
    if given and cfg.algo == "sgd":
        raise OptionError(f"{FLAG[given[0]]} needs a regularized learner (--algo tg); "
                          f"--algo sgd does not regularize")
    if given and cfg.algo != "tg":
        raise OptionError(f"{FLAG[given[0]]} needs --algo tg; --algo {cfg.algo} regularizes with --radius")
    given = [n for n in L1BALL_OPTIONS if n in cfg.explicit]
    if given and cfg.algo != "l1ball":
        raise OptionError(f"{FLAG[given[0]]} needs --algo l1ball")
    if cfg.algo == "l1ball":
        if cfg.radius is None:
            raise OptionError("--algo l1ball needs --radius Z (the L1 norm the weights may reach)")
        if not cfg.radius > 0 or math.isinf(cfg.radius):
            raise OptionError(f"--radius must be a finite number > 0 (got {_fmt(cfg.radius)})")
        on = [n for n in ("adaptive", "normalized") if getattr(cfg, n)]
        if on:
            raise OptionError(f"{FLAG[on[0]]} does not apply to --algo {cfg.algo}: its projection is "
                              f"Euclidean, so it takes the plain schedule (--sgd, or no rule flag)")
    if cfg.algo == "tg" and cfg.cumulative_penalty and "threshold" in cfg.explicit:
        raise OptionError("--threshold does not apply with --cumulative-penalty (the default with "
                          "per-feature rates); add --no-cumulative-penalty")
    if cfg.kill_cache and not cfg.cache_file:
        raise OptionError("--kill-cache needs --cache-file")
    paths = [(n, getattr(cfg, n)) for n in ("final_model", "readable_model", "cache_file", "predictions")]
    outputs = [(n, p) for n, p in paths if p and p != "-"]
    for i, (n1, p1) in enumerate(outputs):
        for n2, p2 in outputs[i + 1:]:
            if p1 == p2:
                raise OptionError(f"the same file {p1} is given for two outputs")
    for n, p in outputs:
        if p in cfg.sources:
            raise OptionError(f"output file {p} is also an input")


def _resolve_rule(values: dict, explicit: dict) -> None:
    """VW's rules for the update rule and the defaults that follow from it (vw-spec.md §1c): no rule
    flag given means adaptive + normalized + invariant (or the -i model's rule); giving any of
    --sgd/--adaptive/--normalized/--invariant turns on exactly the properties given. Unless given,
    the learning rate is 0.5 with adaptive and normalized both on, else 10, and initial_t is 0 with
    per-feature rates, else 1."""
    sgd = values.pop("sgd", False)
    given = [n for n in RULE_FLAGS if n in explicit]
    if not given and values.get("algo") in PLAIN_ONLY and "adaptive" not in values:
        given, explicit = ["sgd"], dict(explicit, sgd=True)     # these learners default to --sgd
    if not given:
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
    unknown = set(explicit) - known
    if unknown:
        raise OptionError(f"unknown option {sorted(unknown)[0]}")
    values = {}
    if model_options is not None:
        for name in HASHING_OPTIONS:
            if name in explicit and explicit[name] != model_options[name]:
                raise OptionError(
                    f"{FLAG[name]} {_fmt(explicit[name])} conflicts with the initial model's "
                    f"{FLAG[name]} {_fmt(model_options[name])}")
        values.update({k: v for k, v in model_options.items() if k in known and k != "sgd"})
    values.update(explicit)
    if "algo" not in explicit and any(n in explicit for n in TG_OPTIONS):
        values["algo"] = "tg"
    if "algo" not in explicit and any(n in explicit for n in L1BALL_OPTIONS):
        values["algo"] = "l1ball"
    _resolve_rule(values, explicit)
    cfg = TrainConfig(**values, explicit=frozenset(explicit))
    _check_train(cfg)
    return cfg


def predict_config(**options) -> PredictConfig:
    cfg = PredictConfig(**options)
    _check_common(cfg)
    if cfg.link is not None:
        _check_choice("link", cfg.link, LINK_NAMES)
    return cfg
