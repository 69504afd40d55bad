"""One run's arrays, built in one place (issue 26): the weight table, the settings (``prm`` real,
``iprm`` integer), the learner's state ``st`` and the counters ``ctr``
(``streamlearn.core.state`` names their slots).

A run starts in one of three ways, each a constructor: ``fresh`` (a new model: the learner's own
start, ``LearnerSpec.start``, sets what a new table holds), ``restored`` (a ``-i`` model: its
weights and state loaded, then what the learner derives from them rebuilt, ``LearnerSpec.after_load``)
and ``predictor`` (the weights in force of a model in a one-column table, predicted with the plain
kernel). The training session, the Python API and the batch learner build their arrays here.

The Python side reads and writes the slots by name through views of the arrays
(``streamlearn.run.views``): ``settings`` (``prm``), ``int_settings`` (``iprm``), ``state`` (``st``)
and ``counters`` (``ctr``), e.g. ``run_state.counters.w_labeled``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from streamlearn import learners
from streamlearn.config import SPARSE_REFUSED
from streamlearn.core import sparse
from streamlearn.errors import OptionError
from streamlearn.learners import allocate_table
from streamlearn.run import feature_mask
from streamlearn.run.model_io import restore_model
from streamlearn.run.views import CounterView, IntSettingsView, SettingsView, StateView


@dataclass
class RunState:
    cfg: object
    table: np.ndarray
    prm: np.ndarray
    iprm: np.ndarray
    st: np.ndarray
    ctr: np.ndarray = field(default_factory=learners.make_counters)
    #: the sparse weight store (``streamlearn.core.sparse``; None: the dense table of 2^b rows): the
    #: kernels see its rows (``rows``), model files its slots
    store: sparse.SparseStore | None = None
    #: new features get a row (a predictor's, and a -t run's, go to a row that stays zero)
    inserts: bool = True

    @staticmethod
    def sparse_store(cfg, lay) -> sparse.SparseStore | None:
        """The sparse store of a run: with --sparse_weights, or when the dense table would take more
        than ``sparse.AUTO_SHARE`` of the memory; else None. A run the store cannot serve
        (``sparse.refusal``) keeps the dense table (the same numbers) while it fits, and is an error
        naming why when it does not."""
        size = (lay.columns, np.dtype(lay.dtype).itemsize)
        large = sparse.wants_sparse(cfg.bits, *size)
        if not (large or getattr(cfg, "sparse_weights", False)):
            return None
        why = sparse.refusal(cfg, learners.get(cfg.algo), SPARSE_REFUSED)
        if why is not None:
            if large:
                raise OptionError(f"-b {cfg.bits} needs {sparse.dense_bytes(cfg.bits, *size) / 2**30:.1f} GiB "
                                  f"for a dense weight table and the sparse one (--sparse_weights) does not "
                                  f"apply to {why}; use a smaller -b")
            return None
        width = cfg.class_width if cfg.classes else 1
        return sparse.SparseStore(cfg.bits, width, sparse.capacity_rows(cfg.bits, width, *size))

    @staticmethod
    def _table(cfg, lay, store) -> np.ndarray:
        if store is None:
            return allocate_table(cfg.bits, lay.columns, lay.dtype)
        return sparse.reserve_table(store.capacity * store.width, lay.columns, lay.dtype)

    @classmethod
    def fresh(cls, cfg, train: bool = True, holdout: int = 0) -> "RunState":
        """A new model of the configured learner."""
        prm, iprm = learners.make_settings(cfg, train=train, holdout=holdout)
        lay = learners.layout(cfg)
        store = cls.sparse_store(cfg, lay)
        table = cls._table(cfg, lay, store)
        st = learners.make_state(cfg, prm)
        learners.start(cfg, table if store is None else store.in_use(table), prm, iprm, st)
        return cls(cfg, table, prm, iprm, st, store=store, inserts=train or store is None)

    @classmethod
    def restored(cls, cfg, model, train: bool = True, holdout: int = 0) -> "RunState":
        """A model file's (header, index, rows) continued: its weights and per-feature state in the
        table, its saved state in ``st``, and what the learner derives from them rebuilt."""
        prm, iprm = learners.make_settings(cfg, train=train, holdout=holdout)
        lay = learners.layout(cfg)
        store = cls.sparse_store(cfg, lay)
        table = cls._table(cfg, lay, store)
        if store is not None:       # the file's slots -> the store's rows
            model = (model[0], store.table_rows_of_slots(model[1]), model[2])
        st = restore_model(cfg, table, model, prm)
        learners.after_load(cfg, table if store is None else store.in_use(table), prm, iprm, st)
        # a run that only predicts (-t) maps the features its model lacks to the zero row, as a predictor does
        return cls(cfg, table, prm, iprm, st, store=store, inserts=train or store is None)

    @classmethod
    def start(cls, cfg, model=None, train: bool = True, holdout: int = 0) -> "RunState":
        """``restored`` when a model is given, else ``fresh``."""
        mask = feature_mask.load(cfg) if getattr(cfg, "feature_mask", None) is not None else None
        if model is not None:
            return cls.restored(cfg, model, train=train, holdout=holdout)
        state = cls.fresh(cfg, train=train, holdout=holdout)
        if mask is not None:        # VW's --feature_mask without -i: the mask's weights (and bounds) are the start
            state.table[mask[0], 0] = mask[1]
            for name, value in mask[2].items():
                setattr(state.state, name, value)
        return state

    @classmethod
    def predictor(cls, cfg, rows, weights, state) -> "RunState":
        """The weights in force (``weights`` of the slots ``rows``) in a one-column table, predicted
        with the plain kernel; ``state``: a model file's saved state (a dict) or a run's ``st``."""
        prm, iprm = learners.make_settings(cfg, train=False, algo=learners.predictor().name)
        rows = np.asarray(rows, np.int64)
        store = None
        if getattr(cfg, "sparse_weights", False) or sparse.wants_sparse(cfg.bits, 1):
            # the model's features and one more, a row that stays zero for the features it lacks
            width = cfg.class_width if cfg.classes else 1
            features = np.unique(rows // width).shape[0] + 1
            store = sparse.SparseStore(cfg.bits, width, 1 << max(0, (features - 1).bit_length()))
            rows = store.table_rows_of_slots(rows)
            table = sparse.reserve_table(store.capacity * width, 1)
        else:
            table = allocate_table(cfg.bits, 1)
        table[rows, 0] = weights
        st = state.copy() if isinstance(state, np.ndarray) else learners.make_state(cfg, prm, state)
        return cls(cfg, table, prm, iprm, st, store=store, inserts=store is None)

    def twin(self) -> "RunState":
        """A predictor's twin: the same table (read only: a predictor learns nothing), its own settings,
        state and counters, so that twins predict on several threads at once (``streamlearn serve``)."""
        return RunState(self.cfg, self.table, self.prm.copy(), self.iprm.copy(), self.st.copy(),
                        store=self.store, inserts=self.inserts)

    @property
    def used_table(self) -> np.ndarray:
        """The table's rows in use: all of a dense table, a sparse store's rows of its features (a view)."""
        return self.table if self.store is None else self.store.in_use(self.table)

    def rows(self, idx: np.ndarray) -> np.ndarray:
        """The table rows of a block's feature indices: themselves (dense), the store's rows (sparse)."""
        if self.store is None:
            return idx
        if self.inserts:
            return self.store.rows(idx)
        # a predictor's twins predict on several threads: reads only, each into its own array
        return self.store.rows(idx, insert=False, out=np.empty(idx.shape[0], np.uint32))

    def kernel_view(self) -> tuple:
        """``kernel_state`` for a block whose indices are the store's rows (after ``rows``): a sparse
        table cut to the first power of two of features at least those in use, so that the
        operations a learner's kernel applies to every row (gravity's sync, pegasos's rescale, fobos's
        folds) cost the rows in use, not the capacity, and one-against-all's mask (the table's length
        less 1) still keeps a row's classes. The rows past it are zero, on which those operations
        change nothing (they act on non-zero weights, or write 0). A predictor's table is whole (its
        zero row for unseen features is the last)."""
        if self.store is None or not self.inserts:
            return self.kernel_state
        need = max(1, self.store.n_rows)
        rows = min(self.store.capacity, 1 << (need - 1).bit_length()) * self.store.width
        return (self.table[:rows],) + self.kernel_state[1:]

    def for_kernel(self, arrays: tuple) -> tuple[tuple, tuple]:
        """(block arrays, kernel state) for a block kernel, from a block's arrays (``ParsedBlock.arrays``):
        themselves and ``kernel_state`` (dense), or with the indices replaced by the store's rows
        (``rows``) and the table of ``kernel_view`` (sparse)."""
        if self.store is None:
            return arrays, self.kernel_state
        return (arrays[0], self.rows(arrays[1])) + arrays[2:], self.kernel_view()

    def slots(self, rows: np.ndarray) -> np.ndarray:
        """The model file's weight slots of table rows."""
        return rows if self.store is None else self.store.slots_of(rows)

    # ------------------------------------------------------------------ named views of the arrays
    # Made once, on first use (a run's arrays are its own for its whole life: no field is assigned a
    # new array), so that the per-block code reads them at the cost of an attribute.
    @cached_property
    def settings(self) -> SettingsView:
        """``prm`` by name (a view: writes store into the array)."""
        return SettingsView(self.prm)

    @cached_property
    def int_settings(self) -> IntSettingsView:
        """``iprm`` by name."""
        return IntSettingsView(self.iprm)

    @cached_property
    def state(self) -> StateView:
        """``st`` by name: the shared slots and the learner's own (``LearnerSpec.slots``)."""
        return StateView(self.st, extra=learners.get(self.cfg.algo).slots)

    @cached_property
    def counters(self) -> CounterView:
        """``ctr`` by name."""
        return CounterView(self.ctr)

    @cached_property
    def kernel_state(self) -> tuple:
        """(table, prm, iprm, st, ctr): the state a block kernel takes (``streamlearn.core.loop``)."""
        return (self.table, self.prm, self.iprm, self.st, self.ctr)

    def start_pass(self) -> None:
        """The counters of a new pass over the data: its examples and its holdout loss from 0."""
        c = self.counters
        c.pass_ex = 0.0
        c.ho_w_pass = 0.0
        c.ho_loss_pass = 0.0

    def end_pass(self) -> None:
        """After a pass: the learning rate times --decay-learning-rate, and the learner's own end of a
        pass (``LearnerSpec.end_pass``) when training."""
        self.state.eta *= self.cfg.decay_learning_rate
        spec = learners.get(self.cfg.algo)
        if spec.end_pass is not None and not self.cfg.testonly:
            spec.end_pass(self.cfg, self.used_table, self.st)

    def quiet(self) -> "RunState":
        """No progress rows (the counters' next row never comes)."""
        self.counters.dump = math.inf
        return self
