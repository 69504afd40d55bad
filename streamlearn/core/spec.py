"""What the rest of the code asks about a learner, declared once per learner next to its kernel
(at the end of each learner module: ``LEARNER`` in ``streamlearn/learners/<name>.py``;
``streamlearn.learners.SPECS`` finds them).

A spec holds plain Python functions of the run configuration ``cfg`` (a ``TrainConfig``) and the
compiled kernels. Everything else -- option checks, the table layout, the settings arrays, the
preamble line, restoring and saving models, the objective -- is derived from the specs, so a new
learner is one module (``streamlearn.learners`` finds it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Layout:
    """Columns of a learner's weight table, by name (``names[j]`` is column j). The first ``saved``
    columns hold the weight and the per-feature state a row needs (a row whose saved columns are all
    0 is unused); the others are the learner's bookkeeping (last-touch values, heap, lists).

    ``dtype`` is the table's: "float64", or "float32" (sgd's and tg's tables, issue 30: VW's 4 bytes a
    value). A float32 table keeps its float64 quantities (the last-touch value and the penalty, which
    must stay exact) in two adjacent columns at an even index, the name and the name + ":2"; the
    kernels read them through the table's float64 view (``streamlearn.core.table.get64``) and Python
    through ``column``. ``saved`` then counts the 32-bit columns only (the bits of a float64 half
    are no float32 value). tg's 16-byte table (w g n a) has no float64 column: its "a" is the stamped
    penalty (``acc``; ``streamlearn.core.table.catch_up_stamped``), saved as the model's "p"."""
    names: tuple
    saved: int
    dtype: str = "float64"

    @property
    def columns(self) -> int:
        return len(self.names)

    def wide(self, col: int) -> bool:
        """Column ``col`` is the first half of a float64 value of a float32 table."""
        return (self.dtype != "float64" and 0 <= col < len(self.names) - 1
                and self.names[col + 1] == self.names[col] + ":2")

    def column(self, table, col: int) -> np.ndarray:
        """Column ``col`` of ``table`` (of this layout) as an array of its values, a view (writes
        store into the table): a float64 column of a float32 table read through the float64 view."""
        if self.wide(col) and table.dtype != np.float64:
            return table.view(np.float64)[:, col // 2]
        return table[:, col]

    def col(self, name: str) -> int:
        """Index of the named column, -1 when the table has none."""
        return self.names.index(name) if name in self.names else -1

    # the columns the update rules and lazy learners read (-1: absent)
    g = property(lambda self: self.col("g"))
    n = property(lambda self: self.col("n"))
    last = property(lambda self: self.col("last"))
    pen = property(lambda self: self.col("p"))
    last2 = property(lambda self: self.col("last2"))
    rate = property(lambda self: self.col("rate"))
    acc = property(lambda self: self.col("a"))


def no_regularizer(cfg, w: np.ndarray) -> tuple[float, str]:
    return 0.0, "0"


def l1_regularizer(cfg, w: np.ndarray) -> tuple[float, str]:
    """lambda ||w||_1 (tg's gravity stands for its lambda)."""
    return cfg.l1 * float(np.abs(w).sum()), f"{cfg.l1:g} ||w||_1"


def weight_column(cfg, table, st, rows) -> np.ndarray:
    """The weights in force of learners whose weight column holds them (after finalize)."""
    return table[rows, 0]


def weights_only(cfg) -> list:
    return []


def never(cfg) -> bool:
    return False


@dataclass(frozen=True)
class Variant:
    """The compiled functions of one variant of a learner whose kernels depend on its configuration
    (``LearnerSpec.variants``: fobos's and softmax's, one per regularizer), as ``LearnerSpec.kernel``,
    ``oaa_kernel``, ``finalize`` and ``after_load`` are a learner's with one of each; ``example``: the
    options (after ``--algo NAME``) of a small run of the variant (warm-up runs it, so every variant
    is compiled)."""
    kernel: Callable
    oaa_kernel: Callable | None = None
    finalize: Callable | None = None
    after_load: Callable | None = None
    example: tuple = ()


@dataclass(frozen=True)
class LearnerSpec:
    name: str
    describe: Callable           # cfg -> the preamble's "learner = ..." text
    layout: Callable             # cfg -> Layout: the table columns by name
    #: the compiled block kernel: (block, state, start, end) -> the next example, with block =
    #: (indptr, idx, val, labels, weights, bases, nfeat, preds) and state = (table, prm, iprm, st, ctr)
    #: (``streamlearn.core.loop``); None for a learner with ``variants``
    kernel: Callable | None = None
    #: the learner's place among the learners (``--algo``'s list; of two learners an option selects,
    #: the later one wins)
    order: int = 100
    #: options that make a small run of the learner valid (after ``--algo NAME``): the warm-up's run,
    #: the contract tests' and the golden runs' options
    example: tuple = ()
    #: table columns of its own a model of the learner may store, beyond the update rule's and the
    #: older learners' (``streamlearn.io.model_file.KNOWN_COLUMNS``): (name, never negative) pairs
    columns: tuple = ()
    #: the learner computes in float32, as VW does (an example's score then depends on the order of
    #: its features in the last float32 bit: the contract tests allow 1e-4 there)
    float32: bool = False
    #: the paper (or VW's behaviour) it implements, for the docs' table of learners
    paper: str = ""
    #: what the learner is, in a few words (``--algo``'s help: "tg (truncated gradient)")
    summary: str = ""
    #: the learner's own options (``streamlearn.options.Option``), declared next to the code that
    #: reads them; ``options`` lists them with the shared ones the learner takes
    declares: tuple = ()
    #: option -> this learner's default where it differs from the option's (VW's --coin takes
    #: --ftrl_alpha and --ftrl_beta with defaults of its own)
    defaults: dict = field(default_factory=dict)
    finalize: Callable | None = None    # (table, prm, iprm, st): catch every weight up before saving
    #: (cfg, table, st): the learner's own step after each training pass (gravity: VW's weight sync
    #: with --predict_only_model)
    end_pass: Callable | None = None
    after_load: Callable | None = None  # (table, prm, iprm, st): rebuild what the -i weights imply
    #: (cfg, table, prm, iprm, st): what a new model holds before its first example, beyond zeros
    start: Callable | None = None
    #: cfg, prm, iprm -> None: the learner's own settings (the common ones are set by the registry)
    settings: Callable | None = None
    #: (cfg, table, st, rows) -> the weights in force of the rows (after finalize)
    in_force: Callable = weight_column
    #: cfg -> [(name in the model file, table column)]: what a model saves beside the weights in
    #: force ("w") so that -i resumes exactly
    saved: Callable = weights_only
    #: a saved "w" can be restored into the weight column (False: only the saved state resumes)
    resumes_from_weights: bool = True
    #: cfg -> True when, after finalize, the weight column holds the weights in force on its own
    weights_in_column: Callable = never
    #: (cfg, w) -> (value, how it reads) for --objective; w: the weights in force by slot (length 2^b,
    #: so a norm over a feature's class weights, softmax's rows, can find them)
    regularizer: Callable = no_regularizer
    #: (cfg, st) -> the factor --objective applies to the regularizer (1: it is added to the average
    #: loss as it is)
    regularizer_scale: Callable = lambda cfg, st: 1.0
    #: (cfg, merged, inputs, models, state) -> None: the learner's own part of merging k models of it
    #: (``streamlearn.mix``, after each saved column is averaged): ``merged`` maps the saved columns'
    #: names to the merged values (views: the hook writes them), ``inputs`` to the models' values
    #: (k x rows, 0 where a model lacks the row), ``models`` each model's (index, {name: its
    #: values}) and ``state`` the merged saved state.
    #: A learner whose weights in force follow from other saved columns sets ``merged["w"]``
    merge: Callable | None = None
    #: cfg -> the table columns a readable model prints after the weight in VW's save_resume form
    #: (None: the update rule's G and N; a learner with its own columns names every --invert_hash
    #: line, as VW's --ftrl does, where gd names only the lines whose weight is not 0)
    readable: Callable | None = None
    #: the readable model prints the stored (raw) weight, not the weight in force, beside the state
    #: that turns one into the other (VW's --l1: raw weights and the "l1_state" gravity)
    readable_raw: bool = False
    #: the learner's own state slots, name -> slot (``streamlearn.core.state.own_slots``, declared
    #: in its module beside the kernels that read them)
    slots: dict = field(default_factory=dict)
    #: name -> the value an own slot holds in a new or restored run's state (default 0)
    slot_start: dict = field(default_factory=dict)
    #: cfg -> the float64 slots the learner keeps in ``st`` after the normalizer states (tg's block
    #: stamps under --sgd); None: none
    state_extra: Callable | None = None
    #: options that belong to this learner (given to another learner, they are an error)
    options: tuple = ()
    #: options that choose this learner when --algo is not given (a later learner in the registry
    #: takes precedence)
    selected_by: tuple = ()
    #: options that choose this learner when --algo is not given, no -i model is, every learner
    #: option given is this learner's, and none of ``default_unless`` is given either (after
    #: ``selected_by``: gravity, the default for --l1 and --l2)
    default_for: tuple = ()
    default_unless: tuple = ()
    #: options that must be given too for ``default_for`` to choose this learner (gravity: --oaa)
    default_needs: tuple = ()
    #: cfg -> a one-line hint the run prints on stderr (None: none), such as where a better learner is
    #: (gravity: when a bare --l1 chose it)
    hint: Callable | None = None
    #: option -> the names it accepts, for the options whose values this learner defines
    choices: dict = field(default_factory=dict)
    #: (cfg, flag) -> None: the learner's own checks of a configuration, raising OptionError
    #: (``flag``: how each option is spelled on the command line)
    check: Callable | None = None
    #: when ``check`` runs among the option checks (streamlearn.config.OPTION_STAGES; "end": last)
    check_stage: str = "end"
    #: cfg -> why the learner takes only the plain schedule (no --adaptive / --normalized) with these
    #: options, for the message; None when per-feature rates apply
    plain_only: Callable = lambda cfg: None
    takes_invariant: bool = True     # --invariant applies (an SGD step)
    rate_schedule: bool = True       # the steps follow -l, --power-t and --initial-t
    #: -p shows a first prediction made with the bounds before the example's label; learning predicts
    #: again with the widened bounds (VW's learners whose learn returns no prediction, --ftrl), and
    #: --audit prints the example twice
    predicts_twice: bool = False
    batch: bool = False              # a batch method, trained by ``flow``
    #: "module:function" training a batch learner, (cfg, model) -> results (imported by the runs that use it)
    flow: str = "streamlearn.run.scd_run:train_scd"
    #: the block kernel of --oaa K: the learner one-against-all (``streamlearn.core.multiclass``);
    #: None when the learner does not run one-against-all
    oaa_kernel: Callable | None = None
    #: the block kernel of --csoaa K: the learner cost-sensitive one-against-all
    #: (``streamlearn.core.multiclass.csoaa_loop``); None when the learner does not run it
    csoaa_kernel: Callable | None = None
    #: the block kernel of --lrq/--lrqfa (``streamlearn.core.lowrank``); None when the learner does not run it
    lowrank_kernel: Callable | None = None
    #: the block kernel of --nn K (``streamlearn.core.nn``); None when the learner does not run it
    nn_kernel: Callable | None = None
    #: the block kernel of --nn K with --lrq/--lrqfa (the low-rank features under the network)
    lowrank_nn_kernel: Callable | None = None
    #: the block kernel of --multilabel_oaa K (``streamlearn.core.multiclass.multilabel_loop``); None: not run
    multilabel_kernel: Callable | None = None
    #: the block kernels of --csoaa_ldf / --wap_ldf by kind ("m", "mc", "wap"; ``streamlearn.core.multiclass.ldf_loop``);
    #: None: not run
    ldf_kernels: dict | None = None
    #: the learner has a multiclass loss of its own (softmax): ``kernel`` runs the joint loop of
    #: ``streamlearn.core.multiclass`` and --oaa K gives its number of classes
    joint: bool = False
    #: a learner whose compiled functions depend on its configuration (fobos and softmax: one set per
    #: regularizer, so the choice is made once, at set-up, and no kernel branches on it): name ->
    #: ``Variant``, and ``variant`` (cfg -> name) the one a configuration runs; the learner's
    #: ``kernel``, ``oaa_kernel``, ``finalize`` and ``after_load`` are then None (``kernels``)
    variants: dict = field(default_factory=dict)
    variant: Callable | None = None

    def kernels(self, cfg) -> Variant:
        """The compiled functions a run of ``cfg`` calls: its variant's, or the learner's own."""
        if self.variant is not None:
            return self.variants[self.variant(cfg)]
        return Variant(self.kernel, self.oaa_kernel, self.finalize, self.after_load, self.example)

    @property
    def one_against_all(self) -> bool:
        """--oaa K runs the learner one-against-all (it has an oaa kernel, or its variants have)."""
        if self.variant is not None:
            return all(v.oaa_kernel is not None for v in self.variants.values())
        return self.oaa_kernel is not None

