"""scikit-learn estimators over streamlearn's learners: ``SparseLinearClassifier`` and
``SparseLinearRegressor`` (scikit-learn is needed for this module only).

Parameters are the CLI's option names (``TrainConfig`` fields; None leaves an option at the CLI's
default, ``bits=None`` chooses it from X: below); ``fit`` checks them with the CLI's own validation
and raises its one-line texts as ``ValueError``. Training runs the CLI's kernels over the rows of a
CSR matrix written as the CLI reads LIBSVM (``streamlearn.api``), so ``fit`` equals ``streamlearn
train -b bits_`` on the same data written with ``dump_svmlight_file(X, y, f, zero_based=True)``, and
``partial_fit`` in any chunks equals one ``fit`` pass. A classifier with two classes learns labels
-1/+1 (``classes_[1]`` is +1); with more it learns one-against-all (``--oaa K``, or ``--loss
softmax`` for multinomial logistic regression), class k of ``classes_`` being label k + 1. The
fitted state is sparse: ``coef_`` and ``weights_`` are CSR matrices, and pickling keeps the model
file's bytes, never the 2^b table.

Column j is weight row ``j + column_offset`` (hashed with ``hash="all"``), so columns share a weight
when X has more columns than the table has rows (2^bits, over W = the power of two >= K per class).
``bits=None`` (the default) takes the CLI's 18, or the smallest bits at which no two columns of X share
a weight, at most ``AUTO_BITS_MAX``; a ``bits`` given (or the cap reached) that folds columns together
gives a ``HashCollisionWarning`` with the count of such columns (``n_shared_columns_``). ``coef_``
shows every weight of the model once: a weight shared by columns at the first of them, the constant's
in ``intercept_`` only, so ``coef_.nnz`` plus the non-zero intercepts is ``n_nonzero_``.

``sample_weight`` is VW's importance weight, not a count of repetitions: ``EXPECTED_FAILED_CHECKS``
(``expected_failed_checks``) names the two scikit-learn checks this cannot pass, as scikit-learn does
for ``SGDClassifier``.
"""

from __future__ import annotations

import inspect
import types
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from streamlearn import config as _config
from streamlearn import learners
from streamlearn.api import Engine, check_sample_weight, check_targets, check_X, column_rows, csr_block, make_config
from streamlearn.features.hashing import CONSTANT_RAW_INDEX
from streamlearn.options import NOT_A_PARAMETER

#: the estimator parameters that are CLI options, declared with them (``Option.estimator``: the
#: parameter's default, None meaning the CLI's), and the estimator's own
OPTIONS = tuple(o.name for o in _config.OPTIONS if o.estimator is not NOT_A_PARAMETER)
OWN = {"passes": 1, "shuffle": False, "column_offset": 0, "objective": False}
PARAMETERS = {**{name: _config.OPTION[name].estimator for name in OPTIONS}, **OWN}


def _init(self, **params):
    """Store the parameters as given (scikit-learn's convention: no checks, no derived state)."""
    unknown = set(params) - set(PARAMETERS)
    if unknown:
        raise TypeError(f"{type(self).__name__} got an unexpected parameter {sorted(unknown)[0]!r}")
    for name, default in PARAMETERS.items():
        setattr(self, name, params.get(name, default))


_init.__signature__ = inspect.Signature(
    [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    + [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default) for name, default in PARAMETERS.items()])

CHUNK = 1 << 16     # rows handed to the learner at a time (any chunking gives the same model)

#: the largest bits ``bits=None`` chooses (a table of 2^24 weights takes 0.5 to 0.8 GB)
AUTO_BITS_MAX = 24

#: why scikit-learn's sample-weight equivalence checks fail: the reason of ``EXPECTED_FAILED_CHECKS``
SAMPLE_WEIGHT = ("sample_weight is VW's importance weight, not a count of repetitions: an update with "
                 "importance h is not h unit updates (the default rule's invariant update is a closed form in h; "
                 "plain rules take one step h*eta where copies take several with the prediction moving in "
                 "between), and a weight-0 row still advances the online step schedule t")

#: the scikit-learn checks the estimators are expected to fail, with the reason: the two scikit-learn
#: declares for its own SGDClassifier and SGDRegressor ("sample_weight is not equivalent to
#: removing/repeating samples"). scikit-learn >= 1.6 takes them as ``check_estimator(est,
#: expected_failed_checks=...)`` or ``parametrize_with_checks(..., expected_failed_checks=expected_failed_checks)``
#: (its tags no longer carry expected failures: ``_xfail_checks`` went with ``_more_tags`` in 1.6).
EXPECTED_FAILED_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data": SAMPLE_WEIGHT,
    "check_sample_weight_equivalence_on_sparse_data": SAMPLE_WEIGHT,
}


def expected_failed_checks(estimator=None) -> dict:
    """``EXPECTED_FAILED_CHECKS`` (the same for every estimator and parameters), in the form
    ``parametrize_with_checks(expected_failed_checks=)`` calls with each estimator."""
    return dict(EXPECTED_FAILED_CHECKS)


class HashCollisionWarning(UserWarning):
    """Columns of X share a weight of the model: more columns than the table of 2^bits weights holds."""


def _column_keys(n_columns: int, cfg, column_offset: int) -> np.ndarray:
    """Each column's weight row at 32 bits (a smaller table's row is its low bits)."""
    wide = types.SimpleNamespace(bits=32, hash=cfg.hash, hash_seed=cfg.hash_seed)
    return column_rows(np.arange(n_columns), wide, column_offset).astype(np.int64)


def _shared(keys: np.ndarray, bits: int, width: int) -> int:
    """How many columns share a weight with another column at ``bits`` (W = ``width`` slots per row:
    class k of row r is slot (r*W + k) mod 2^bits, so two columns share all their slots when their
    rows agree modulo 2^bits / W)."""
    rows = max(1, (1 << bits) // width)
    _, inverse, counts = np.unique(keys & (rows - 1), return_inverse=True, return_counts=True)
    return int(np.count_nonzero(counts[inverse] > 1))


def _fewest_bits(keys: np.ndarray, width: int, start: int, stop: int) -> tuple[int, int]:
    """The smallest bits in [start, stop] (from the first at which the columns can fit) at which no two
    columns share a weight, with 0; or ``stop`` and its count of sharing columns."""
    b = max(start, (max(keys.shape[0], 1) * width - 1).bit_length())
    for b in range(min(b, stop), stop + 1):
        shared = _shared(keys, b, width)
        if not shared:
            return b, 0
    return stop, shared


class _SparseLinear(BaseEstimator):
    """What both estimators share (module docstring)."""

    _default_loss = "squared"

    __init__ = _init

    # ------------------------------------------------------------------ set-up
    def _options(self, classes: int = 0) -> dict:
        opts = {name: getattr(self, name) for name in OPTIONS}
        opts["loss"] = opts["loss"] or self._default_loss
        for flag in ("sgd", "noconstant", "holdout_off"):
            if not opts[flag]:
                opts[flag] = None       # a flag not given: the CLI's default
        if opts["random_seed"] == 0:
            opts["random_seed"] = None
        if opts["oaa"] is None and (classes > 2 or (classes == 2 and opts["loss"] == "softmax")):
            opts["oaa"] = classes       # softmax learns K scores even for two classes
        return opts

    def _start(self, n_columns: int, classes: int = 0) -> None:
        if not (isinstance(self.passes, (int, np.integer)) and self.passes >= 1):
            raise ValueError(f"--passes must be at least 1 (got {self.passes})")
        opts = self._options(classes)
        cfg = make_config(opts)
        cfg = self._choose_bits(cfg, opts, n_columns)
        self.engine_ = Engine(cfg)
        self.engine_.start_pass()

    def _choose_bits(self, cfg, opts: dict, n_columns: int):
        """The configuration with the bits for X's columns (module docstring): ``bits=None`` takes the
        smallest bits from the CLI's default up at which no two columns share a weight (at most
        ``AUTO_BITS_MAX``); columns that still share one are counted and warned about. Sets ``bits_`` and
        ``n_shared_columns_``."""
        keys = _column_keys(n_columns, cfg, self.column_offset)
        width = cfg.class_width
        if self.bits is None:
            bits, shared = _fewest_bits(keys, width, cfg.bits, max(cfg.bits, AUTO_BITS_MAX))
            if bits != cfg.bits:
                cfg = make_config({**opts, "bits": bits})
        else:
            shared = _shared(keys, cfg.bits, width)
        self.bits_ = cfg.bits
        self.n_shared_columns_ = shared
        if shared:
            rows = max(1, (1 << cfg.bits) // width)
            per = f" per class (x {width} slots for {cfg.classes} classes)" if width > 1 else ""
            need, left = _fewest_bits(keys, width, cfg.bits + 1, 32)
            fix = (f"bits={need} gives every column its own" if not left
                   else "no bits up to 32 gives every column its own")
            chosen = (f"bits=None chose the largest automatic bits, {cfg.bits}" if self.bits is None
                      else f"bits={cfg.bits}")
            warnings.warn(
                f"{type(self).__name__}: {shared:,} of the {n_columns:,} columns of X share a weight with another "
                f"column: {chosen} gives {rows:,} weights{per}; {fix} (coef_ shows each shared weight once, at "
                f"the first of its columns)", HashCollisionWarning, stacklevel=4)
        return cfg

    def _validate(self, X, *y, reset: bool = True, **kw):
        """scikit-learn's ``validate_data`` between streamlearn's own checks (``streamlearn.api``): a
        sparse X's index arrays are checked before scikit-learn or SciPy read through them (neither
        checks that indices lie inside the matrix), and afterwards every value must fit the float32
        the learner stores. Returns the checked CSR matrix (and y)."""
        if sp.issparse(X):
            X = check_X(X)
        if not y:       # X alone (prediction)
            X = validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=reset)
            return check_X(X)
        X, y = validate_data(self, X, y[0], accept_sparse="csr", dtype=[np.float64, np.float32], reset=reset,
                             **kw)
        return check_X(X), y

    def _check_X(self, X, reset: bool):
        return self._validate(X, reset=reset)

    def _learn(self, X, y, sample_weight) -> None:
        eng = self.engine_
        for s in range(0, X.shape[0], CHUNK):
            sw = None if sample_weight is None else sample_weight[s:s + CHUNK]
            eng.learn(csr_block(X[s:s + CHUNK], y[s:s + CHUNK], sw, eng.cfg, self.column_offset, checked=True,
                                first_row=s))

    def _objective(self, X, y, sample_weight) -> dict:
        """The CLI's --objective after a pass: the regularized objective over the training rows
        (``streamlearn.run.objective.evaluate``: average loss + the learner's regularizer, ||w||_1,
        non-zero weights, data accesses so far)."""
        from streamlearn.run import objective
        from streamlearn.learners import allocate_table
        eng = self.engine_
        blocks = [csr_block(X[s:s + CHUNK], y[s:s + CHUNK], None if sample_weight is None else
                            sample_weight[s:s + CHUNK], eng.cfg, self.column_offset, checked=True)
                  for s in range(0, X.shape[0], CHUNK)]
        eng._predictor = eng._weights = None
        return objective.evaluate(eng.cfg, eng.run.arrays, blocks, allocate_table, eng.run.progress.entries)

    def _fit_passes(self, X, y, sample_weight) -> None:
        eng = self.engine_
        self.objective_ = []
        rng = np.random.default_rng(self.random_seed)
        for p in range(self.passes):
            if p:
                eng.end_pass()
                eng.start_pass()
            if self.shuffle and p:
                order = rng.permutation(X.shape[0])
                self._learn(X[order], y[order], None if sample_weight is None else sample_weight[order])
            else:
                self._learn(X, y, sample_weight)
            if self.objective:
                self.objective_.append(self._objective(X, y, sample_weight))
        self._publish()

    def _weights(self, sample_weight, n):
        sw = check_sample_weight(sample_weight, n)     # scikit-learn's checks and words
        if sw is None:
            return None
        if n and not np.any(sw):
            # scikit-learn's convention (and its wording): nothing to learn from is an error
            raise ValueError("Sample weights must contain at least one non-zero number.")
        return sw

    # ------------------------------------------------------------------ fitted state
    def _slot_rows(self, columns: bool = True):
        """The weight slots of the columns (K x d for a multiclass model) and of the constant."""
        cfg = self.engine_.cfg
        mask = (1 << cfg.bits) - 1
        d = self.n_features_in_ if columns else 0
        rows = column_rows(np.arange(d), cfg, self.column_offset).astype(np.int64)
        const = np.int64(CONSTANT_RAW_INDEX & mask)
        if not cfg.classes:
            return rows[None, :], np.array([const])
        W = cfg.class_width
        ks = np.arange(cfg.classes)[:, None]
        return (rows[None, :] * W + ks) & mask, ((const * W + ks[:, 0]) & mask)

    def _publish(self) -> None:
        self.progress_ = self.engine_.progress()

    def _fitted(self):
        check_is_fitted(self, "engine_")
        return self.engine_

    def _lookup(self, where: np.ndarray) -> np.ndarray:
        """The weights in force at the given slots (0 where none)."""
        slots, w = self._fitted().weights()
        if slots.shape[0] == 0:
            return np.zeros(where.shape)
        pos = np.minimum(np.searchsorted(slots, where), slots.shape[0] - 1)
        return np.where(slots[pos] == where, w[pos], 0.0)

    # the fitted state, computed from the run when read (weights in force; a copy of the run is caught up)
    @property
    def n_nonzero_(self) -> int:
        """The number of non-zero weights in force (the CLI's "non-zero weights")."""
        return int(self._fitted().weights()[0].shape[0])

    @property
    def weights_(self):
        """CSR (1, 2^bits): the weights in force by hashed slot."""
        slots, w = self._fitted().weights()
        return sp.csr_matrix((w, (np.zeros_like(slots), slots)), shape=(1, 1 << self.engine_.cfg.bits))

    @property
    def coef_(self):
        """CSR (1, n_features_in_), or (K, n_features_in_) one-against-all: each column's weight, every
        weight of the model shown once. Columns that share a weight (``n_shared_columns_``) show it at
        the first of them and 0 at the others; a column on the constant's slot shows 0 (the weight is
        ``intercept_``). So ``coef_.nnz`` plus the non-zero intercepts is ``n_nonzero_``, and without
        shared columns ``X @ coef_.T + intercept_`` is the decision function."""
        self._fitted()
        if getattr(self, "n_features_in_", None) is None:
            raise AttributeError("coef_ needs n_features_in_ (a model loaded from a file has no columns)")
        rows, const = self._slot_rows()
        w = self._lookup(rows)
        k, j = np.nonzero(w)          # row-major: by class, then by column
        slots = rows[k, j]
        keep = np.ones(slots.shape[0], bool) if self.engine_.cfg.noconstant else ~np.isin(slots, const)
        first = np.zeros(slots.shape[0], bool)
        first[np.flatnonzero(keep)[np.unique(slots[keep], return_index=True)[1]]] = True
        return sp.csr_matrix((w[k[first], j[first]], (k[first], j[first])), shape=rows.shape)

    @property
    def intercept_(self) -> np.ndarray:
        """The constant feature's weight (one per class one-against-all; 0 with noconstant)."""
        self._fitted()
        const = self._slot_rows(columns=False)[1]
        return np.zeros(const.shape[0]) if self.engine_.cfg.noconstant else self._lookup(const)

    def _scores(self, X) -> np.ndarray:
        eng = self._fitted()
        X = self._check_X(X, reset=False)
        out = []
        for s in range(0, X.shape[0], CHUNK):
            preds = eng.predict(csr_block(X[s:s + CHUNK], None, None, eng.cfg, self.column_offset, checked=True))
            out.append(preds[:, 1:1 + eng.cfg.classes] if eng.cfg.classes else preds)
        if out:
            return np.concatenate(out)
        return np.empty((0, eng.cfg.classes)) if eng.cfg.classes else np.empty(0)

    # ------------------------------------------------------------------ models shared with the CLI
    def to_bytes(self) -> bytes:
        """The CLI's model file of the fitted model (``streamlearn predict -i`` reads it)."""
        return self._fitted().to_bytes()

    def save(self, path) -> None:
        """Write the CLI's model file (atomically)."""
        from streamlearn.io.model_file import write_atomic
        write_atomic(str(path), [self.to_bytes()])

    @classmethod
    def load(cls, path, **params):
        """An estimator holding the model of a CLI model file (its options from the file)."""
        from streamlearn.api import as_value_error
        from streamlearn.io.model_file import read_model_bytes
        data = as_value_error(read_model_bytes, str(path))    # bounded; a FIFO or device never hangs
        return cls.from_bytes(data, name=str(path), **params)

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "model", **params):
        est = cls(**params)
        est.engine_ = Engine.from_bytes(data, name=name)
        cfg = est.engine_.cfg
        est.bits_ = cfg.bits
        for p in OPTIONS:
            if p in est.get_params() and hasattr(cfg, p) and p not in ("sgd",):
                setattr(est, p, getattr(cfg, p))
        est._after_load()
        est._publish()
        return est

    def _after_load(self) -> None:
        pass

    def __getstate__(self):
        state = dict(self.__dict__)
        eng = state.pop("engine_", None)
        if eng is not None:
            state["_model_bytes"] = eng.to_bytes()
            state["_counters"] = eng.counters_state()
        return state

    def __setstate__(self, state):
        data = state.pop("_model_bytes", None)
        saved = state.pop("_counters", None)
        self.__dict__.update(state)
        if data is not None:
            self.engine_ = Engine.from_bytes(data)
            self.engine_.start_pass()
            if saved is not None:       # the run's counters: an unpickled model goes on as the original
                self.engine_.restore_counters(saved)


class SparseLinearClassifier(ClassifierMixin, _SparseLinear):
    """A linear classifier trained online by a streamlearn learner (module docstring)."""

    _default_loss = "logistic"

    def _labels(self, y) -> np.ndarray:
        index = np.searchsorted(self.classes_, y)
        if np.any(index >= self.classes_.shape[0]) or np.any(self.classes_[np.minimum(index, len(self.classes_) - 1)] != y):
            raise ValueError("y contains labels not in classes_ (pass every class to the first partial_fit)")
        if not self.engine_.cfg.classes:
            return np.where(index == 1, 1.0, -1.0)
        return index + 1.0

    def _set_classes(self, classes) -> None:
        self.classes_ = np.unique(np.asarray(classes))
        if self.classes_.shape[0] < 2:
            raise ValueError(f"The number of classes has to be greater than one; got {self.classes_.shape[0]} "
                             f"class")
        if self.classes_.shape[0] > 2 and not self._multiclass():
            algo = make_config(self._options()).algo
            raise ValueError(f"Only binary classification is supported by --algo {algo} (it has no one-against-all "
                             f"learner); got {self.classes_.shape[0]} classes")

    def _multiclass(self) -> bool:
        """Whether the learner the parameters select learns K classes (one-against-all or softmax)."""
        if (self.loss or "") == "softmax":
            return True
        try:
            cfg = make_config(self._options())
        except ValueError:
            return True         # invalid parameters: fit says why
        return learners.get(cfg.algo).one_against_all

    def fit(self, X, y, sample_weight=None):
        """Learn from scratch (``passes`` passes over the rows, in order)."""
        X, y = self._validate(X, y, reset=True)
        check_classification_targets(y)
        self._set_classes(y)
        sw = self._weights(sample_weight, X.shape[0])
        self._start(X.shape[1], self.classes_.shape[0])
        self._fit_passes(X, self._labels(y), sw)
        return self

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Continue learning with more rows (one pass; ``classes`` on the first call)."""
        first = not hasattr(self, "engine_")
        X, y = self._validate(X, y, reset=first)
        check_classification_targets(y)
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit.")
            self._set_classes(classes)
            self._start(X.shape[1], self.classes_.shape[0])
        elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(f"`classes={np.unique(classes)!r}` is not the same as on the first call to "
                             f"partial_fit: {self.classes_!r}")
        self._learn(X, self._labels(y), self._weights(sample_weight, X.shape[0]))
        self._publish()
        return self

    def decision_function(self, X):
        """The learner's scores: one per row (two classes; > 0 means ``classes_[1]``) or one per class.
        A K-score model of two classes (softmax) gives the difference of its two scores, as
        scikit-learn's binary convention asks."""
        s = self._scores(X)
        return s[:, 1] - s[:, 0] if s.ndim == 2 and s.shape[1] == 2 else s

    def predict(self, X):
        s = self._scores(X)
        if s.ndim == 1:
            return self.classes_[(s > 0).astype(int)]
        return self.classes_[np.argmax(s, axis=1)]

    def _has_proba(self):
        return (self.loss or self._default_loss) in ("logistic", "softmax")

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities: the logistic of the score (two classes), VW's normalized logistics of
        the class scores (one-against-all), or their softmax (``loss="softmax"``)."""
        s = self._scores(X)
        if s.ndim == 1:
            p = 1.0 / (1.0 + np.exp(-s))
            return np.column_stack([1.0 - p, p])
        if (self.loss or "") == "softmax":
            e = np.exp(s - s.max(axis=1, keepdims=True))
        else:
            e = 1.0 / (1.0 + np.exp(-s))
        return e / e.sum(axis=1, keepdims=True)

    def _after_load(self) -> None:
        cfg = self.engine_.cfg
        if cfg.classes:
            first = self.engine_.run.first_class()
            self.classes_ = np.arange(first, first + cfg.classes)
        else:
            self.classes_ = np.array([-1, 1])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = self._multiclass()
        return tags


class SparseLinearRegressor(RegressorMixin, _SparseLinear):
    """A linear regressor trained online by a streamlearn learner (module docstring)."""

    def fit(self, X, y, sample_weight=None):
        X, y = self._validate(X, y, reset=True, y_numeric=True)
        y = check_targets(y, X.shape[0])       # labels beyond float32's range too
        sw = self._weights(sample_weight, X.shape[0])
        self._start(X.shape[1])
        self._fit_passes(X, y, sw)
        return self

    def partial_fit(self, X, y, sample_weight=None):
        first = not hasattr(self, "engine_")
        X, y = self._validate(X, y, reset=first, y_numeric=True)
        y = check_targets(y, X.shape[0])
        sw = self._weights(sample_weight, X.shape[0])
        if first:
            self._start(X.shape[1])
        self._learn(X, y, sw)
        self._publish()
        return self

    def predict(self, X):
        return self._scores(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
