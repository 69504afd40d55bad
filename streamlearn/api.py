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

import numpy as np

from streamlearn import learners
from streamlearn.config import TrainConfig, train_config
from streamlearn.errors import StreamlearnError
from streamlearn.history import ProgressHistory
from streamlearn.hashing import CONSTANT_RAW_INDEX, HASH_MODES, default_namespace_hash, feature_index
from streamlearn.io.blocks import FMT_LIBSVM, FMT_VW, ParsedBlock, line_ends, parse_block
from streamlearn.io.model_file import model_bytes, parse_model
from streamlearn.kernels import state as S
from streamlearn.kernels.table import nonzero_rows
from streamlearn.model_io import model_content, model_options, restore_model
from streamlearn.report import Reporter
from streamlearn.session import Run, _class_outputs, allocate_table


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
        self.prm, self.iprm = learners.make_settings(cfg, train=True, holdout=cfg.holdout)
        self.table = allocate_table(cfg.bits, learners.layout(cfg).columns)
        if model is not None:
            self.st = as_value_error(restore_model, cfg, self.table, model, self.prm)
            learners.after_load(cfg, self.table, self.prm, self.iprm, self.st)
        else:
            self.st = learners.make_state(cfg, self.prm)
        self.run = Run(spec, self.table, self.prm, self.st, Reporter(True), cfg.link, cfg.binary, None, False,
                       iprm=self.iprm, ctr=learners.make_counters(), kernel=learners.block_kernel(cfg),
                       history=ProgressHistory(), cfg=cfg, **_class_outputs(cfg, spec))
        self.passes = 0
        self._predictor = self._weights = None
        self.expander = None

    def text_block(self, lines, fmt: str = "vw", source: str = "lines") -> ParsedBlock:
        """``text_block`` with this run's feature expansion (one expander for the whole run)."""
        from streamlearn.stream import hashing_of
        hashing = hashing_of(self.cfg)
        if hashing.expands and self.expander is None:
            from streamlearn.io.expand import make_expander
            self.expander = make_expander(hashing.features, hashing.mask)
        return text_block(lines, self.cfg, fmt, source, self.expander)

    # ------------------------------------------------------------------ learning
    def start_pass(self) -> None:
        """Counters of a new pass over the data (holdout from the second pass on, as the CLI)."""
        ctr = self.run.ctr
        self.run.holding_out = self.cfg.holdout > 0 and self.passes >= 1
        ctr[S.C_PASS_EX] = 0.0
        ctr[S.C_HO_W_PASS] = 0.0
        ctr[S.C_HO_LOSS_PASS] = 0.0

    def end_pass(self) -> None:
        self.passes += 1
        self.st[S.S_ETA] *= self.cfg.decay_learning_rate

    def learn(self, block: ParsedBlock) -> np.ndarray:
        """Predict and learn the block's examples (progressive validation); their predictions as the
        kernel gives them (binary: the clamped score; multiclass: rows of label, K scores, status)."""
        self._predictor = self._weights = None
        return self.run.process(block)

    # ------------------------------------------------------------------ the weights in force
    def finalized(self):
        """(table, state, touched rows, their weights in force), the lazy weights caught up on a copy
        of the run's table, so that learning goes on exactly as if nothing had been read (the CLI
        finalizes once, at the end; any chunking of ``learn`` calls therefore gives the same model)."""
        cfg, table, st = self.cfg, self.table.copy(), self.st.copy()
        learners.finalize(cfg, table, self.prm, self.iprm, st)
        touched = nonzero_rows(table, learners.layout(cfg).saved)
        return table, st, touched, learners.weights_in_force(cfg, table, st, touched)

    def weights(self) -> tuple[np.ndarray, np.ndarray]:
        """(weight indices, weights in force) of the non-zero weights, by increasing index."""
        if self._weights is None:
            _, _, touched, w = self.finalized()
            keep = w != 0.0
            self._weights = (touched[keep], w[keep])
        return self._weights

    def to_bytes(self) -> bytes:
        """The model file ``streamlearn train -f`` would write now."""
        table, st, touched, w = self.finalized()
        return model_bytes(*model_content(self.cfg, table, st, touched, w))

    @classmethod
    def from_bytes(cls, data: bytes, options: dict | None = None, name: str = "model") -> "Engine":
        """An engine continuing a model file's run (its options, with ``options`` given on top, as
        ``train -i`` takes them)."""
        model = as_value_error(parse_model, bytes(data), name)
        cfg = make_config(dict(options or {}), as_value_error(model_options, model[0], name))
        return cls(cfg, model)

    def predictor(self):
        """(one-column table of the weights in force, prm, iprm, state) for prediction."""
        if self._predictor is None:
            rows, w = self.weights()
            table = allocate_table(self.cfg.bits, 1)
            table[rows, 0] = w
            st = self.st.copy()
            prm, iprm = learners.make_settings(self.cfg, train=False, algo=learners.predictor().name)
            self._predictor = (table, prm, iprm, st.copy())
        return self._predictor

    def predict(self, block: ParsedBlock) -> np.ndarray:
        """Predictions of the block's examples with the weights in force, nothing learned."""
        table, prm, iprm, st = self.predictor()
        ctr = learners.make_counters()
        ctr[S.C_DUMP] = math.inf
        n = block.n
        K = self.cfg.classes
        preds = np.empty((n, K + 2)) if K else np.empty(n)
        learners.predict_kernel(self.cfg)(block.indptr, block.idx, block.val, block.labels, block.weights,
                                          block.bases, block.feature_counts(), 0, n, table, prm, iprm,
                                          st.copy(), ctr, preds)
        return preds

    def nonzero(self) -> int:
        return int(self.weights()[0].shape[0])

    def progress(self) -> dict:
        history = self.run.history
        return history.as_dict() if history is not None else {}


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


def csr_block(X, y, sample_weight, cfg: TrainConfig, column_offset: int = 0, source: str = "X") -> ParsedBlock:
    """The parsed block of a CSR matrix's rows (module docstring); y None: unlabeled (NaN)."""
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
    return ParsedBlock(source, labels, weights, np.zeros(n), np.arange(1, n + 1, dtype=np.int64), new_ptr, idx,
                       val, np.zeros(0, np.uint8), empty, empty, np.zeros((0, 4), np.int64), [])


def text_block(lines, cfg: TrainConfig, fmt: str = "vw", source: str = "lines", expander=None) -> ParsedBlock:
    """The parsed block of VW (or LIBSVM) text lines, with the CLI's parser and feature expansion
    (``expander``: the run's ``make_expander``, which remembers the namespaces seen so far)."""
    from streamlearn.stream import hashing_of
    parts = [ln.encode() if isinstance(ln, str) else bytes(ln) for ln in lines]
    data = b"\n".join(p.rstrip(b"\n") for p in parts) + (b"\n" if parts else b"")
    hashing = hashing_of(cfg)
    redefine = None
    if hashing.expands:
        redefine = np.array(hashing.features.redefine_map, np.uint8)
    buf = np.frombuffer(data, np.uint8).copy()
    block = parse_block(source, buf, 1, FMT_VW if fmt == "vw" else FMT_LIBSVM, hashing.mask, hashing.noconstant,
                        hashing.hash_seed, HASH_MODES[hashing.hash], ends=line_ends(buf), redefine=redefine)
    if hashing.expands:
        from streamlearn.io.expand import ExpandedOutputs, make_expander
        if expander is None:
            expander = make_expander(hashing.features, hashing.mask)
        block = expander.expand(block, ExpandedOutputs())
    return block
