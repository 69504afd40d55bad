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

    @classmethod
    def fresh(cls, cfg, train: bool = True, holdout: int = 0) -> "RunState":
        """A new model of the configured learner."""
        prm, iprm = learners.make_settings(cfg, train=train, holdout=holdout)
        lay = learners.layout(cfg)
        table = allocate_table(cfg.bits, lay.columns, lay.dtype)
        st = learners.make_state(cfg, prm)
        learners.start(cfg, table, prm, iprm, st)
        return cls(cfg, table, prm, iprm, st)

    @classmethod
    def restored(cls, cfg, model, train: bool = True, holdout: int = 0) -> "RunState":
        """A model file's (header, index, rows) continued: its weights and per-feature state in the
        table, its saved state in ``st``, and what the learner derives from them rebuilt."""
        prm, iprm = learners.make_settings(cfg, train=train, holdout=holdout)
        lay = learners.layout(cfg)
        table = allocate_table(cfg.bits, lay.columns, lay.dtype)
        st = restore_model(cfg, table, model, prm)
        learners.after_load(cfg, table, prm, iprm, st)
        return cls(cfg, table, prm, iprm, st)

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
        table = allocate_table(cfg.bits, 1)
        table[np.asarray(rows, np.int64), 0] = weights
        st = state.copy() if isinstance(state, np.ndarray) else learners.make_state(cfg, prm, state)
        return cls(cfg, table, prm, iprm, st)

    def twin(self) -> "RunState":
        """A predictor's twin: the same table (read only: a predictor learns nothing), its own settings,
        state and counters, so that twins predict on several threads at once (``streamlearn serve``)."""
        return RunState(self.cfg, self.table, self.prm.copy(), self.iprm.copy(), self.st.copy())

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
            spec.end_pass(self.cfg, self.table, self.st)

    def quiet(self) -> "RunState":
        """No progress rows (the counters' next row never comes)."""
        self.counters.dump = math.inf
        return self
