"""streamlearn from Python: the learner engine behind the scikit-learn estimators and the online handle.

``Engine`` is one training run held open: the CLI's configuration (``train_config``, so options are
the CLI's names and errors its one-line texts, raised as ``ValueError``), its weight table, settings
and state, and the CLI's ``session.Run``, whose ``process`` runs the learner's block kernel over
parsed blocks exactly as ``streamlearn train`` does. Python inputs become the blocks the CLI's parser
makes:

* a CSR matrix row by row (``csr_block``): column j is the LIBSVM feature j, so its weight row is
  (j + ``column_offset``) hashed as LIBSVM's numeric feature name (``(j + ns) & mask`` with the default
  hashing), values as float32, zeros dropped, then the constant feature: ``fit`` on a CSR matrix is
  ``streamlearn train`` on the same data written as LIBSVM (``dump_svmlight_file(..., zero_based=True)``);
* VW text lines (``text_block``): the CLI's compiled parser and feature expansion.

Predictions do not change the run: the weights in force are computed once per training call (the
learner's ``finalize`` catches lazy weights up; a learner with an open mini-batch is finalized on a
copy, as the CLI's snapshots are) into a one-column table, which the CLI's prediction kernel reads.
A model is the CLI's model file (``to_bytes``/``from_bytes``; ``save``/``load``), so the CLI and
Python share models both ways, and pickling stores those bytes, never the 2^b table.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from streamlearn import learners
from streamlearn.config import TrainConfig, train_config
from streamlearn.errors import StreamlearnError
from streamlearn.run import counters
from streamlearn.run.history import ProgressHistory
from streamlearn.features.hashing import CONSTANT_RAW_INDEX, HASH_MODES, default_namespace_hash, feature_index
from streamlearn.io.blocks import FMT_LIBSVM, FMT_VW, ParsedBlock, line_ends, parse_block
from streamlearn.io.model_file import model_bytes, parse_model
from streamlearn.core.table import nonzero_rows
from streamlearn.run.model_io import by_slot, model_content, model_options
from streamlearn.run.runstate import RunState
from streamlearn.run.report import Reporter
from streamlearn.run.session import Run
from streamlearn.run.views import CounterView


def as_value_error(fn, *args, **kwargs):
    """Call fn; a streamlearn error (the CLI's one-line message) becomes a ValueError with that text."""
    try:
        return fn(*args, **kwargs)
    except StreamlearnError as exc:
        raise ValueError(str(exc)) from None


def make_config(options: dict, model_opts: dict | None = None) -> TrainConfig:
    """The CLI's configuration of the options given (None values are left to the CLI's defaults)."""
    given = {k: v for k, v in options.items() if v is not None}
    given.setdefault("quiet", True)
    return as_value_error(train_config, given, model_opts)


class Engine:
    """One open training run (module docstring). ``model``: a model file's (header, index, rows)."""

    def __init__(self, cfg: TrainConfig, model=None):
        spec = learners.get(cfg.algo)
        if spec.batch:
            raise ValueError(f"--algo {cfg.algo} is a batch method; train it with the streamlearn CLI")
        self.cfg = cfg
        self.state = state = as_value_error(RunState.start, cfg, model, train=True, holdout=cfg.holdout)
        self.table, self.prm, self.iprm, self.st = state.table, state.prm, state.iprm, state.st
        self.run = Run.training(state, Reporter(True), history=ProgressHistory())
        counters.resume(cfg, self.run, model)       # as train -i (--preserve_performance_counters)
        self.passes = 0
        self._predictor = self._weights = None
        self.expander = None

    def text_block(self, lines, fmt: str = "vw", source: str = "lines") -> ParsedBlock:
        """``text_block`` with this run's feature expansion (one expander for the whole run)."""
        from streamlearn.run.stream import hashing_of
        hashing = hashing_of(self.cfg)
        if hashing.expands and self.expander is None:
            from streamlearn.io.expand import make_expander
            self.expander = make_expander(hashing.features, hashing.mask, hashing.lowrank, hashing.max_features)
        return text_block(lines, self.cfg, fmt, source, self.expander)

    # ------------------------------------------------------------------ learning
    def start_pass(self) -> None:
        """Counters of a new pass over the data (holdout from the second pass on, as the CLI)."""
        self.run.progress.holding_out = self.cfg.holdout != 0 and self.passes >= 1
        self.state.start_pass()

    def end_pass(self) -> None:
        self.passes += 1
        self.state.end_pass()

    def learn(self, block: ParsedBlock) -> np.ndarray:
        """Predict and learn the block's examples (progressive validation); their predictions as the
        kernel gives them (binary: the clamped score; multiclass: rows of label, K scores, status)."""
        self._predictor = self._weights = None
        preds = self.run.process(block)
        faults = self.run.faults
        if faults.diverged is not None and not faults.diverge_warned:
            faults.diverge_warned = True
            warnings.warn(f"training diverged: predictions or weights became infinite or NaN at {faults.diverged} "
                          f"(the first example whose prediction or update was not finite); try a smaller "
                          f"learning_rate", RuntimeWarning, stacklevel=3)
        return preds

    # ------------------------------------------------------------------ the weights in force
    def finalized(self):
        """(table, state, touched rows, their weights in force), the lazy weights caught up on a copy
        of the run's table, so that learning goes on exactly as if nothing had been read (the CLI
        finalizes once, at the end; any chunking of ``learn`` calls therefore gives the same model)."""
        cfg, table, st = self.cfg, self.state.used_table.copy(), self.st.copy()
        learners.finalize(cfg, table, self.prm, self.iprm, st)
        touched = nonzero_rows(table, learners.layout(cfg).saved)
        return (table, st) + by_slot(self.state, touched, learners.weights_in_force(cfg, table, st, touched))

    def weights(self) -> tuple[np.ndarray, np.ndarray]:
        """(weight indices, weights in force) of the non-zero weights, by increasing index."""
        if self._weights is None:
            _, _, touched, w, slots = self.finalized()
            keep = w != 0.0
            self._weights = ((touched if slots is None else slots)[keep], w[keep])
        return self._weights

    def to_bytes(self) -> bytes:
        """The model file ``streamlearn train -f`` would write now."""
        table, st, touched, w, slots = self.finalized()
        return model_bytes(*model_content(self.cfg, table, st, touched, w,
                                          counters.for_model(self.cfg, self.run, self.passes + 1), slots))

    def counters_state(self) -> tuple:
        """The run's counters and passes, for a pickle (``restore_counters`` puts them back), so that
        an unpickled model goes on exactly as this one."""
        return counters.state(self.run) + (self.passes,)

    def restore_counters(self, saved) -> None:
        if len(saved) == 2:         # a pickle of streamlearn before the counters were kept: (ctr, passes)
            self.run.ctr[:len(saved[0])] = saved[0]
        else:
            counters.restore_state(self.run, saved[:-1])
        self.passes = saved[-1]

    @classmethod
    def from_bytes(cls, data: bytes, options: dict | None = None, name: str = "model") -> "Engine":
        """An engine continuing a model file's run (its options, with ``options`` given on top, as
        ``train -i`` takes them)."""
        model = as_value_error(parse_model, bytes(data), name)
        cfg = make_config(dict(options or {}), as_value_error(model_options, model[0], name))
        return cls(cfg, model)

    def predictor(self):
        """The RunState of a predictor of the weights in force."""
        if self._predictor is None:
            rows, w = self.weights()
            self._predictor = RunState.predictor(self.cfg, rows, w, self.st)
        return self._predictor

    def predict(self, block: ParsedBlock) -> np.ndarray:
        """Predictions of the block's examples with the weights in force, nothing learned."""
        ctr = learners.make_counters()
        CounterView(ctr).dump = math.inf      # no progress rows
        n = block.n
        K = self.cfg.classes
        preds = np.empty((n, K + 2)) if K else np.empty(n)
        arrays, (table, prm, iprm, st, _) = self.predictor().for_kernel(block.arrays(preds))   # sparse: the store's rows
        learners.predict_kernel(self.cfg)(arrays, (table, prm, iprm, st.copy(), ctr), 0, n)
        return preds

    def nonzero(self) -> int:
        return int(self.weights()[0].shape[0])

    def progress(self) -> dict:
        history = self.run.progress.history
        return history.as_dict() if history is not None else {}


# ---------------------------------------------------------------------- input checks
# Python inputs are checked before any kernel sees them, with scikit-learn's exception types and
# wording (scikit-learn itself is not needed): indices inside the matrix, index pointers consistent,
# numeric dtypes, finite values that fit the float32 the learner stores (the CLI's rule for text:
# a value beyond float32 is a fault), and sizes that agree.

_F32_MAX = float(np.finfo(np.float32).max)


def _finite(values: np.ndarray, name: str) -> None:
    """scikit-learn's finiteness messages ("Input X contains NaN."), and its float32 one for a finite
    value beyond float32's range (the values are stored as float32)."""
    if values.size == 0:
        return
    if values.dtype.kind in "iub":
        big = values.dtype.itemsize >= 4 and np.abs(values.astype(np.float64)).max() > _F32_MAX
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            m = np.abs(values).max()
        if m != m:
            raise ValueError(f"Input {name} contains NaN.")
        if m == np.inf:
            raise ValueError(f"Input {name} contains infinity or a value too large for {np.dtype(np.float64)!r}.")
        big = m > _F32_MAX
    if big:
        raise ValueError(f"Input {name} contains infinity or a value too large for {np.dtype(np.float32)!r}.")


finite_values = _finite     # for the other Python entry points (streamlearn.online)


def _numeric(values: np.ndarray, name: str) -> np.ndarray:
    """The values as a real numeric array (scikit-learn's wording for complex and string data)."""
    kind = values.dtype.kind
    if kind == "c":
        raise ValueError("Complex data not supported")
    if kind in "USV":
        raise ValueError("dtype='numeric' is not compatible with arrays of bytes/strings."
                         f"Convert your data to numeric values explicitly instead (input {name}).")
    if kind in "fiub":
        return values
    try:
        return values.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"Input {name} has dtype {values.dtype!r}, which is not numeric: {exc}") from None


def _index_array(a, what: str, name: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise ValueError(f"Input {name} has {what} of dtype {a.dtype!r} and shape {a.shape}; expected a "
                         f"1d array of integers.")
    return a


def _in_range(a: np.ndarray, bound: int, what: str, name: str) -> None:
    if a.size:
        lo, hi = int(a.min()), int(a.max())
        if lo < 0 or hi >= bound:
            bad = lo if lo < 0 else hi
            raise ValueError(f"Input {name} has {what} out of range: {bad} is not in [0, {bound}).")


def _compressed(X, name: str, major: int, minor: int, what: str):
    """Check a CSR (major = rows) or CSC (major = columns) matrix's arrays before scipy or a kernel
    reads through them."""
    indptr = _index_array(X.indptr, "an index pointer (indptr)", name)
    indices = _index_array(X.indices, what, name)
    data = np.asarray(X.data)
    if data.ndim != 1:
        raise ValueError(f"Input {name} has stored values of shape {data.shape}; expected a 1d array.")
    if indptr.shape[0] != major + 1:
        raise ValueError(f"Input {name} has an index pointer (indptr) of {indptr.shape[0]} entries; expected "
                         f"{major + 1} (one more than its {major} {'rows' if X.format == 'csr' else 'columns'}).")
    nnz = int(indptr[-1]) if major >= 0 and indptr.shape[0] else 0
    if int(indptr[0]) != 0 or np.any(np.diff(indptr) < 0) or nnz > min(indices.shape[0], data.shape[0]):
        raise ValueError(f"Input {name} has an invalid index pointer (indptr): it must start at 0, never "
                         f"decrease, and end at most at the number of stored values "
                         f"({min(indices.shape[0], data.shape[0])}).")
    _in_range(indices[:nnz], minor, what, name)
    return indptr, indices[:nnz], data[:nnz]


def check_X(X, name: str = "X"):
    """X (a SciPy sparse matrix or array in any format, or anything ``numpy.asarray`` reads as a 2d
    numeric array) checked (module section above) and returned as a CSR matrix with float64 values,
    int64 indices and no explicit entries past ``indptr[-1]``. Raises ValueError in scikit-learn's
    style; nothing is read through an unchecked index."""
    import scipy.sparse as sp

    if sp.issparse(X):
        if len(X.shape) != 2:
            raise ValueError(f"Expected 2D input {name}, got shape {X.shape} instead.")
        n, d = (int(v) for v in X.shape)
        fmt = X.format
        if fmt == "csr":
            indptr, indices, data = _compressed(X, name, n, d, "column indices")
        elif fmt == "csc":
            _compressed(X, name, d, n, "row indices")
            X = sp.csc_matrix((X.data, X.indices, X.indptr), shape=(n, d))
        elif fmt == "coo":
            row = _index_array(X.row if hasattr(X, "row") else X.coords[0], "row indices", name)
            col = _index_array(X.col if hasattr(X, "col") else X.coords[1], "column indices", name)
            if not (row.shape[0] == col.shape[0] == np.asarray(X.data).shape[0]):
                raise ValueError(f"Input {name} has {row.shape[0]} row indices, {col.shape[0]} column indices and "
                                 f"{np.asarray(X.data).shape[0]} stored values; they must agree.")
            _in_range(row, n, "row indices", name)
            _in_range(col, d, "column indices", name)
        else:
            try:
                X.check_format(full_check=True) if hasattr(X, "check_format") else None
            except ValueError as exc:
                raise ValueError(f"Input {name} is not a valid sparse matrix: {exc}") from None
        if fmt != "csr":
            X = X.tocsr()
            indptr, indices, data = _compressed(X, name, n, d, "column indices")
        data = _numeric(data, name)
        _finite(data, name)
        return sp.csr_matrix((data.astype(np.float64, copy=False), indices.astype(np.int64, copy=False),
                              indptr.astype(np.int64, copy=False)), shape=(n, d))
    try:
        A = np.asarray(X)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"Input {name} cannot be read as an array: {exc}") from None
    if A.ndim != 2:
        raise ValueError(f"Expected 2D array, got {'scalar array' if A.ndim == 0 else f'{A.ndim}D array'} instead:\n"
                         f"array={A}.\nReshape your data either using array.reshape(-1, 1) if your data has a "
                         f"single feature or array.reshape(1, -1) if it contains a single sample.")
    A = _numeric(A, name)
    _finite(A, name)
    return sp.csr_matrix(A.astype(np.float64, copy=False))


def check_targets(y, n: int, name: str = "y") -> np.ndarray | None:
    """y (None: unlabeled) as float64 of n entries: numeric, 1d (a column vector is taken as 1d),
    finite and within float32's range; a C-contiguous, writable copy."""
    if y is None:
        return None
    a = np.asarray(y)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim != 1:
        raise ValueError(f"{name} should be a 1d array, got an array of shape {a.shape} instead.")
    if a.shape[0] != n:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: [{n}, {a.shape[0]}]")
    a = _numeric(a, name)
    _finite(a, name)
    return np.array(a, np.float64, order="C")


def check_sample_weight(sample_weight, n: int) -> np.ndarray | None:
    """sample_weight (None: all 1; a scalar: that weight for every row) as float64 of n entries,
    finite and non-negative (an importance weight), in scikit-learn's words."""
    if sample_weight is None:
        return None
    a = np.asarray(sample_weight)
    if a.ndim == 0:
        a = np.full(n, a)
    if a.ndim != 1:
        raise ValueError("Sample weights must be 1D array or scalar")
    if a.shape[0] != n:
        raise ValueError(f"sample_weight.shape == {a.shape}, expected {(n,)}!")
    a = _numeric(a, "sample_weight")
    _finite(a, "sample_weight")
    if a.size and a.min() < 0:
        raise ValueError("Negative values in data passed to `sample_weight`.")
    return np.array(a, np.float64, order="C")


# ---------------------------------------------------------------------- inputs as blocks

def column_rows(columns: np.ndarray, cfg: TrainConfig, column_offset: int = 0) -> np.ndarray:
    """The weight row of each column index: LIBSVM's numeric feature ``column + column_offset`` in
    the default namespace (``(j + ns) & mask`` with --hash strings; murmur of its text with --hash all)."""
    mask = (1 << cfg.bits) - 1
    j = np.asarray(columns, np.int64) + column_offset
    if HASH_MODES[cfg.hash] == HASH_MODES["strings"]:
        ns = int(default_namespace_hash(cfg.hash_seed))
        return ((j + ns) & mask).astype(np.uint32)
    uniq, inv = np.unique(j, return_inverse=True)
    rows = np.array([feature_index(" ", str(int(u)), cfg.bits, cfg.hash_seed, cfg.hash) for u in uniq], np.uint32)
    return rows[inv]


def csr_block(X, y, sample_weight, cfg: TrainConfig, column_offset: int = 0, source: str = "X",
              checked: bool = False, first_row: int = 0) -> ParsedBlock:
    """The parsed block of a matrix's rows (module docstring); y None: unlabeled (NaN). X, y and
    sample_weight are checked first (``check_X``, ``check_targets``, ``check_sample_weight``: a
    ValueError names what is wrong) unless ``checked`` says that a caller did it already. The
    examples' "lines" are their 1-based row numbers, counted from ``first_row`` (a chunk's first row
    in the whole matrix), as messages name them."""
    if getattr(cfg, "lowrank", None) is not None:
        raise ValueError("lrq/lrqfa need the namespaces of VW text input, which a matrix has not")
    if not checked:
        X = check_X(X)
        y = check_targets(y, X.shape[0])
        sample_weight = check_sample_weight(sample_weight, X.shape[0])
    else:
        X = X.tocsr()
    n = X.shape[0]
    data = np.asarray(X.data, np.float32)
    keep = data != 0.0
    row_ids = np.repeat(np.arange(n), np.diff(np.asarray(X.indptr, np.int64)))
    counts = np.bincount(row_ids[keep], minlength=n).astype(np.int64)
    const = 0 if cfg.noconstant else 1
    per_row = counts + const
    new_ptr = np.zeros(n + 1, np.int64)
    np.cumsum(per_row, out=new_ptr[1:])
    idx = np.empty(new_ptr[-1], np.uint32)
    val = np.empty(new_ptr[-1], np.float32)
    rows = column_rows(X.indices[keep], cfg, column_offset)
    starts = new_ptr[:-1]
    # positions of the kept entries in the new arrays: row start + rank within the row
    rank = np.arange(rows.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
    pos = np.repeat(starts, counts) + rank
    idx[pos] = rows
    val[pos] = data[keep]
    if const:
        idx[new_ptr[1:] - 1] = CONSTANT_RAW_INDEX & ((1 << cfg.bits) - 1)
        val[new_ptr[1:] - 1] = 1.0
    # fresh C-contiguous, writable arrays: a read-only or strided input (a joblib memmap, a view)
    # would otherwise be a new array type to the kernels, compiled again for it
    labels = np.full(n, np.nan) if y is None else np.array(y, np.float64, order="C")
    weights = np.ones(n) if sample_weight is None else np.array(sample_weight, np.float64, order="C")
    empty = np.zeros(n, np.int64)
    lines = np.arange(first_row + 1, first_row + n + 1, dtype=np.int64)
    return ParsedBlock(source, labels, weights, np.zeros(n), lines, new_ptr, idx, val, np.zeros(0, np.uint8),
                       empty, empty, np.zeros((0, 4), np.int64), [])


def text_block(lines, cfg: TrainConfig, fmt: str = "vw", source: str = "lines", expander=None) -> ParsedBlock:
    """The parsed block of VW (or LIBSVM) text lines, with the CLI's parser and feature expansion
    (``expander``: the run's ``make_expander``, which remembers the namespaces seen so far)."""
    from streamlearn.run.stream import hashing_of
    parts = [ln.encode() if isinstance(ln, str) else bytes(ln) for ln in lines]
    data = b"\n".join(p.rstrip(b"\n") for p in parts) + (b"\n" if parts else b"")
    return buffer_block(data, cfg, fmt, source, expander)


def buffer_block(data: bytes, cfg: TrainConfig, fmt: str = "vw", source: str = "lines", expander=None) -> ParsedBlock:
    """``text_block`` of the lines of ``data`` (bytes, each line ending in a newline)."""
    from streamlearn.run.stream import hashing_of
    hashing = hashing_of(cfg)
    redefine = None
    if hashing.expands:
        redefine = (np.arange(256, dtype=np.uint8) if hashing.features is None
                    else np.array(hashing.features.redefine_map, np.uint8))
    elif hashing.interact is not None:
        redefine = np.arange(256, dtype=np.uint8)
    buf = np.frombuffer(data, np.uint8).copy()
    block = parse_block(source, buf, 1, FMT_VW if fmt == "vw" else FMT_LIBSVM, hashing.mask, hashing.noconstant,
                        hashing.hash_seed, HASH_MODES[hashing.hash], ends=line_ends(buf), redefine=redefine)
    if hashing.interact is not None:      # VW's --interact, before the expansion as in text_blocks
        from streamlearn.io.interact import interact
        block, _ = interact(block, hashing.interact, hashing.mask)
    if hashing.expands:
        from streamlearn.io.expand import ExpandedOutputs, make_expander
        if expander is None:
            expander = make_expander(hashing.features, hashing.mask, hashing.lowrank, hashing.max_features)
        block = expander.expand(block, ExpandedOutputs())
    return block
