"""What the learners that compute in float32 as VW does (ftrl, coin) share: VW's float32 reading of
a float option, and their checks of the options they read so (a helper module: its name starts with
_, so it is no learner)."""

from __future__ import annotations

import math

import numpy as np

from streamlearn.errors import OptionError

FLT_MAX = float(np.finfo(np.float32).max)


def f32(x: float) -> float:
    """x as the float32 VW parses a float option to."""
    return float(np.float32(x))


def check_alpha_beta(cfg, flag) -> None:
    """--ftrl-alpha a finite number > 0, --ftrl-beta a finite number >= 0."""
    for name in ("ftrl_alpha", "ftrl_beta"):
        v = getattr(cfg, name)
        if not (v >= 0 and math.isfinite(v)) or (name == "ftrl_alpha" and v == 0):
            what = "> 0" if name == "ftrl_alpha" else ">= 0"
            raise OptionError(f"{flag[name]} must be a finite number {what} (got {v:g})")


def check_float32(cfg, flag, names, algo: str) -> None:
    """The options ``names`` fit VW's float32 (a larger one would become inf)."""
    for name in names:
        v = getattr(cfg, name)
        with np.errstate(over="ignore"):
            overflows = not math.isfinite(f32(v))
        if overflows:
            raise OptionError(f"{flag[name]} must be at most {FLT_MAX:.7g}, the largest float32: {algo} "
                              f"computes in float32 as VW does (got {v:g})")


def refuse_rates(cfg, flag, algo: str, why: str) -> None:
    """The rate options are errors for a learner whose steps do not follow them (VW ignores them)."""
    for name in ("learning_rate", "power_t", "initial_t", "decay_learning_rate"):
        if name in cfg.explicit:
            raise OptionError(f"{flag[name]} does not apply to --algo {algo}: {why}")
