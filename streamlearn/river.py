"""river estimators over streamlearn's online learners: ``LinearClassifier`` (binary) and
``LinearRegressor`` (issue 29). This module needs river (``pip install streamlearn[river]``);
``import streamlearn`` does not import it.

They follow river's ``MiniBatchClassifier``/``MiniBatchRegressor`` protocol and pass
``river.checks.check_estimator``:

* an example is a flat dict ``{name: value}``; any name (str, int, tuple: ``str(name)``) is hashed as
  VW hashes a feature of the default namespace (``features.hashing``; names are data, not VW text, so
  spaces, ``:`` and ``|`` are kept as they are), values are numbers (bools count 1/0), a zero value is
  no feature (as VW's parser drops ``f:0``) and a NaN, infinite or beyond-float32 value is an error;
  the constant feature is added unless ``noconstant``;
* ``learn_one(x, y, w=1.0)`` learns and returns nothing; ``predict_one``/``predict_proba_one`` predict
  with the weights in force and learn nothing; ``learn_many(X, y, w=None)``/``predict_many``/
  ``predict_proba_many`` take a pandas DataFrame, a NaN cell being an absent feature. ``learn_many`` is
  a loop of ``learn_one`` (the learner's per-example kernel), not river's one averaged step;
* the constructor's parameters are the CLI's options (``Option`` declarations, as the scikit-learn
  estimators'), minus those of multiclass, multi-line, text-only and batch runs; they are checked
  when the estimator is made (the CLI's one-line messages, raised as ``ValueError``).

A classifier learns labels -1/+1: ``True`` (or 1) is the positive class, ``False`` (or 0, -1) the
negative one, as river's ``LogisticRegression`` takes them; ``predict_one`` returns a bool and
``predict_proba_one`` ``{False: 1 - p, True: p}`` with p the logistic of the score (logistic loss;
other losses have no probabilities and raise ``NotImplementedError``, as river's linear classifiers
without a link do).

Speed: ``learn_one`` builds the example's arrays straight from the dict (each distinct name is hashed
once and remembered) and hands them to the CLI's run (``Engine.learn``), so a sequence of
``learn_one`` calls learns exactly what ``streamlearn train`` learns from the same examples written as
VW lines. ``predict_one`` runs the learner's own block kernel on the example without a label, which
is what ``train`` does with an unlabeled line: the score with the weights in force (a lazy learner
catches the example's weights up on the way, as its next step would; an open mini-batch's pending
steps are not applied, as in the progressive predictions), with the run's counters put back
afterwards. No table is copied per call.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
from river import base

from streamlearn import config as _config
from streamlearn.api import Engine, make_config
import mmh3

from streamlearn.features.hashing import CONSTANT_RAW_INDEX, namespace_hash
from streamlearn.io.blocks import ParsedBlock
from streamlearn.options import NOT_A_PARAMETER

__all__ = ["LinearClassifier", "LinearRegressor"]

#: options that do not apply to a stream of flat dicts with one binary or real label
EXCLUDED = frozenset({
    "oaa", "csoaa", "csoaa_ldf", "wap_ldf", "multilabel_oaa", "named_labels", "csoaa_rank",   # multiclass
    "affix", "dictionary", "dictionary_path",           # VW text's namespaces
    "conjugate_gradient", "mem", "termination", "hessian_on", "no_bias_regularization",      # batch (bfgs)
    "output_feature_regularizer_binary", "output_feature_regularizer_text", "input_feature_regularizer",
    "holdout_off",      # a river stream holds nothing out
})

#: the constructor's parameters and their defaults (the scikit-learn estimators' defaults)
OPTIONS = {o.name: o.estimator for o in _config.OPTIONS
           if o.estimator is not NOT_A_PARAMETER and o.name not in EXCLUDED}

_F32_MAX = float(np.finfo(np.float32).max)

#: distinct names remembered per estimator (past this the memory is cleared and refilled)
NAME_CACHE = 1 << 20


def _signature(loss: str) -> inspect.Signature:
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for name, default in OPTIONS.items():
        if name == "loss":
            default = loss
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default))
    return inspect.Signature(params)


class _Linear:
    """What both estimators share (module docstring)."""

    _default_loss = "squared"

    def __init__(self, **params):
        unknown = set(params) - set(OPTIONS)
        if unknown:
            raise TypeError(f"{type(self).__name__} got an unexpected parameter {sorted(unknown)[0]!r}")
        for name, default in OPTIONS.items():
            setattr(self, name, params.get(name, self._default_loss if name == "loss" else default))
        self._cfg = make_config(self._options())        # the CLI's checks, now
        self._engine = None

    def _options(self) -> dict:
        opts = {name: getattr(self, name) for name in OPTIONS}
        for flag in ("sgd", "noconstant"):
            if not opts[flag]:
                opts[flag] = None       # a flag not given: the CLI's default
        if opts["random_seed"] == 0:
            opts["random_seed"] = None
        opts["holdout_off"] = True
        return opts

    # ------------------------------------------------------------------ the run
    def _start(self, engine: Engine) -> Engine:
        cfg = engine.cfg
        if cfg.classes:
            raise ValueError(f"{type(self).__name__} learns one score per example; --oaa and the other "
                             f"multiclass options do not apply")
        engine.run.progress.history = None
        engine.start_pass()
        self._engine = engine
        self._mask = (1 << cfg.bits) - 1
        self._ns = namespace_hash(" ", cfg.hash_seed, cfg.hash)
        self._hash_all = cfg.hash == "all"
        self._const = None if cfg.noconstant else CONSTANT_RAW_INDEX & self._mask
        self._rows = {}
        self._kernel = engine.run.kernel
        self._arrays = engine.run.arrays
        self._ctr = engine.run.ctr
        one = np.ones(1)
        self._one = (np.full(1, np.nan), one, np.zeros(1), np.zeros(1, np.int64), np.empty(1))
        # a learned example's block parts, made once: label, weight, base, line, tags, faults
        self._learned = (np.zeros(1), np.ones(1), np.zeros(1), np.ones(1, np.int64), np.zeros(0, np.uint8),
                         np.zeros(1, np.int64), np.zeros((0, 4), np.int64))
        return engine

    @property
    def engine(self) -> Engine:
        """The CLI's training run behind the estimator (``streamlearn.api.Engine``)."""
        if self._engine is None:
            self._start(Engine(self._cfg))
        return self._engine

    def _row(self, name) -> int:
        """The weight row of a feature name (hashed once, then remembered)."""
        rows = self._rows
        if len(rows) >= NAME_CACHE:
            rows.clear()
        key = name if isinstance(name, str) else str(name)
        r = vw_hash(key.encode("utf-8"), self._ns, self._hash_all) & self._mask
        rows[name] = r
        return r

    def _example(self, x):
        """(idx uint32, val float32) of a dict example, the constant last."""
        if self._engine is None:
            if not isinstance(x, dict):
                raise ValueError(f"an example is a dict {{name: value}}, not {type(x).__name__}")
            self.engine
        get = self._rows.get
        try:
            idx = [get(k) for k in x]
        except TypeError:
            raise ValueError(f"an example is a dict {{name: value}}, not {type(x).__name__}") from None
        if None in idx:     # names not seen yet: hashed once
            idx = [self._row(k) if r is None else r for r, k in zip(idx, x)]
        n = len(idx)
        try:
            val = np.fromiter(x.values(), np.float64, n)
        except (TypeError, ValueError, AttributeError):
            if not isinstance(x, dict):
                raise ValueError(f"an example is a dict {{name: value}}, not {type(x).__name__}") from None
            bad = next(k for k, v in x.items() if not _is_number(v))
            raise ValueError(f"feature {bad!r}: value {x[bad]!r} is not a number") from None
        if n and not np.abs(val).max() <= _F32_MAX:      # NaN fails the comparison too
            bad = list(x)[int(np.argmin(np.abs(val) <= _F32_MAX))]
            raise ValueError(f"feature {bad!r}: value {x[bad]!r} is not a finite number within float32's range "
                             f"(+-3.4e38)")
        if self._const is not None:
            idx.append(self._const)
            val = np.append(val, 1.0)
        idx = np.array(idx, np.uint32)
        if not val.all():       # a zero value is no feature
            keep = val != 0.0
            idx, val = idx[keep], val[keep]
        return idx, val.astype(np.float32)

    def _frame(self, X):
        """(indptr, idx, val) of a DataFrame's rows: its columns hashed once, NaN cells absent."""
        if not hasattr(X, "columns") or not hasattr(X, "to_numpy"):
            raise ValueError(f"learn_many/predict_many take a pandas DataFrame, not {type(X).__name__}")
        if self._engine is None:
            self.engine
        rows = self._rows
        cols = np.array([rows[k] if k in rows else self._row(k) for k in X.columns], np.uint32)
        try:
            V = X.to_numpy(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the DataFrame's values must be numbers: {exc}") from None
        n = V.shape[0]
        with np.errstate(invalid="ignore"):
            big = np.abs(V) > _F32_MAX
        if big.any():
            r, c = np.argwhere(big)[0]
            raise ValueError(f"row {r}, feature {X.columns[c]!r}: value {V[r, c]!r} is not a finite number within "
                             f"float32's range (+-3.4e38)")
        keep = (V != 0.0) & ~np.isnan(V)
        if self._const is not None:
            cols = np.append(cols, np.uint32(self._const))
            V = np.hstack([V, np.ones((n, 1))])
            keep = np.hstack([keep, np.ones((n, 1), bool)])
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(keep.sum(axis=1), out=indptr[1:])
        r, c = np.nonzero(keep)         # row-major: each row's features in column order
        return indptr, cols[c], V[r, c].astype(np.float32)

    def _block(self, indptr, idx, val, labels, weights) -> ParsedBlock:
        n = labels.shape[0]
        empty = np.zeros(n, np.int64)
        return ParsedBlock("river", labels, weights, np.zeros(n), np.arange(1, n + 1, dtype=np.int64), indptr,
                           idx, val, np.zeros(0, np.uint8), empty, empty, np.zeros((0, 4), np.int64), [])

    def _learn(self, idx, val, y: float, w: float) -> None:
        if not (w >= 0.0 and w <= _F32_MAX):
            raise ValueError(f"the weight w must be a finite number >= 0 (got {w!r})")
        labels, weights, bases, lines, tags, empty, faults = self._learned
        labels[0] = y
        weights[0] = w
        self._engine.learn(ParsedBlock("river", labels, weights, bases, lines, np.array([0, idx.shape[0]], np.int64),
                                       idx, val, tags, empty, empty, faults, []))

    def _scores(self, indptr, idx, val) -> np.ndarray:
        """The learner's prediction of each example, as ``train`` predicts an unlabeled line (module
        docstring): the run's own kernel, its counters put back."""
        n = indptr.shape[0] - 1
        if n == 1:
            labels, weights, bases, nfeat, preds = self._one
        else:
            labels, weights, bases = np.full(n, np.nan), np.ones(n), np.zeros(n)
            nfeat, preds = np.zeros(n, np.int64), np.empty(n)
        ctr = self._ctr
        saved = ctr.copy()
        # a sparse store's rows and its table cut to the rows in use (the arrays themselves when dense)
        arrays, state = self._arrays.for_kernel((indptr, idx, val, labels, weights, bases, nfeat, preds))
        kernel, pos = self._kernel, 0
        try:
            while pos < n:      # the kernel stops where a progress row is due: go on
                pos = kernel(arrays, state, pos, n)
        finally:
            ctr[:] = saved
        return preds.copy()

    def _score_one(self, x) -> float:
        idx, val = self._example(x)
        return float(self._scores(np.array([0, idx.shape[0]], np.int64), idx, val)[0])

    def _score_many(self, X) -> np.ndarray:
        indptr, idx, val = self._frame(X)
        return self._scores(indptr, idx, val)

    def _learn_many(self, X, labels, w) -> None:
        indptr, idx, val = self._frame(X)
        n = indptr.shape[0] - 1
        if labels.shape[0] != n:
            raise ValueError(f"{labels.shape[0]} labels for {n} rows")
        if w is None:
            weights = np.ones(n)
        else:
            weights = np.broadcast_to(np.asarray(w, np.float64), (n,)).copy()
            if not ((weights >= 0.0) & (weights <= _F32_MAX)).all():
                raise ValueError("the weights w must be finite numbers >= 0")
        self._engine.learn(self._block(indptr, idx, val, labels, weights))

    # ------------------------------------------------------------------ the model
    def to_bytes(self) -> bytes:
        """The CLI's model file of the model now (``streamlearn predict -i`` reads it)."""
        return self.engine.to_bytes()

    def save(self, path) -> None:
        with open(path, "wb") as f:
            f.write(self.to_bytes())

    def __getstate__(self):
        params = {name: getattr(self, name) for name in OPTIONS}
        if self._engine is None:
            return {"params": params, "model": None}
        return {"params": params, "model": self._engine.to_bytes(), "counters": self._engine.counters_state()}

    def __setstate__(self, state):
        for name, value in state["params"].items():
            setattr(self, name, value)
        self._cfg = make_config(self._options())
        self._engine = None
        if state["model"] is not None:
            self._start(Engine.from_bytes(state["model"], self._options()))
            self._engine.restore_counters(state["counters"])


def vw_hash(name: bytes, seed: int, hash_all: bool = False) -> int:
    """VW's hash of a name (``--hash strings``: blanks around it ignored, a name of digits hashed as its
    value plus the seed; ``--hash all``: MurmurHash3 of every name), as ``features.hashing.hash_name``
    computes it, with mmh3's compiled MurmurHash3 (a new name costs about a microsecond)."""
    if hash_all:
        return mmh3.hash(name, seed, signed=False)
    name = name.strip(_BLANKS)
    if not name or name.isdigit():
        return (int(name or 0) + seed) & 0xFFFFFFFF
    return mmh3.hash(name, seed, signed=False)


#: the bytes VW's hashstring trims from both ends of a name (<= 0x20)
_BLANKS = bytes(range(33))


def _is_number(v) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _label(y) -> float:
    """A binary label as -1/+1 (True/1 positive; False/0/-1 negative)."""
    if y is True or y is False or isinstance(y, np.bool_):
        return 1.0 if y else -1.0
    try:
        v = float(y)
    except (TypeError, ValueError):
        v = math.nan
    if v == 1.0:
        return 1.0
    if v == 0.0 or v == -1.0:
        return -1.0
    raise ValueError(f"a binary label is True/False (or 1/0, 1/-1), not {y!r}")


def _target(y) -> float:
    try:
        v = float(y)
    except (TypeError, ValueError):
        raise ValueError(f"a regression target is a number, not {y!r}") from None
    if not abs(v) <= _F32_MAX:
        raise ValueError(f"the target {y!r} is not a finite number within float32's range (+-3.4e38)")
    return v


class LinearClassifier(_Linear, base.MiniBatchClassifier):
    """A binary linear classifier learned online by a streamlearn learner (``algo``, ``l1``, ``loss``,
    ... are the CLI's options); river's estimator protocol (module ``streamlearn.river``).

    >>> from streamlearn.river import LinearClassifier
    >>> model = LinearClassifier(l1=1e-6)
    >>> model.learn_one({"word one": 1.0, "x:y|z": 2.0}, True)
    >>> sorted(model.predict_proba_one({"word one": 1.0}))
    [False, True]
    """

    _default_loss = "logistic"

    def _has_proba(self) -> bool:
        return self._cfg.loss == "logistic"

    def learn_one(self, x, y, w: float = 1.0) -> None:
        idx, val = self._example(x)
        self._learn(idx, val, _label(y), w)

    def predict_proba_one(self, x) -> dict:
        if not self._has_proba():
            raise NotImplementedError(f"--loss {self._cfg.loss} has no probabilities (use predict_one)")
        p = 1.0 / (1.0 + math.exp(-self._score_one(x)))
        return {False: 1.0 - p, True: p}

    def predict_one(self, x) -> bool:
        return self._score_one(x) > 0.0

    def learn_many(self, X, y, w=None) -> None:
        labels = np.array([_label(v) for v in np.asarray(y, object)], np.float64)
        self._learn_many(X, labels, w)

    def predict_proba_many(self, X):
        import pandas as pd
        if not self._has_proba():
            raise NotImplementedError(f"--loss {self._cfg.loss} has no probabilities (use predict_many)")
        p = 1.0 / (1.0 + np.exp(-self._score_many(X)))
        return pd.DataFrame({False: 1.0 - p, True: p}, index=X.index)

    def predict_many(self, X):
        import pandas as pd
        return pd.Series(self._score_many(X) > 0.0, index=X.index)

    @property
    def _multiclass(self) -> bool:
        return False


class LinearRegressor(_Linear, base.MiniBatchRegressor):
    """A linear regressor learned online by a streamlearn learner (``algo``, ``l1``, ``loss``, ... are
    the CLI's options); river's estimator protocol (module ``streamlearn.river``).

    >>> from streamlearn.river import LinearRegressor
    >>> model = LinearRegressor(learning_rate=0.5)
    >>> model.learn_one({"a": 1.0, "b c": 2.0}, 3.0)
    >>> model.predict_one({"a": 1.0, "b c": 2.0}) > 0
    True
    """

    _default_loss = "squared"

    def learn_one(self, x, y, w: float = 1.0) -> None:
        idx, val = self._example(x)
        self._learn(idx, val, _target(y), w)

    def predict_one(self, x) -> float:
        return self._score_one(x)

    def learn_many(self, X, y, w=None) -> None:
        labels = np.array([_target(v) for v in np.asarray(y, object)], np.float64)
        self._learn_many(X, labels, w)

    def predict_many(self, X):
        import pandas as pd
        return pd.Series(self._score_many(X), index=X.index)


LinearClassifier.__init__ = lambda self, **params: _Linear.__init__(self, **params)
LinearClassifier.__init__.__signature__ = _signature("logistic")
LinearClassifier.__init__.__doc__ = _Linear.__init__.__doc__
LinearRegressor.__init__ = lambda self, **params: _Linear.__init__(self, **params)
LinearRegressor.__init__.__signature__ = _signature("squared")
