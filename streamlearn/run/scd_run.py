"""Training with stochastic coordinate descent (``--algo scd``), the batch learner: the input is read
once (into a cache, counting its examples and feature entries), the memory the in-memory data will
take is printed and checked against ``--max-memory`` before anything is loaded, then ``--passes``
epochs of coordinate steps run over the data in memory (``streamlearn.learners.scd.fit``), and the model is saved
like every other learner's. Progressive predictions do not exist for a batch method: ``-p`` writes
the final model's predictions for the training examples.

Progress (unless ``--quiet``): after every epoch one line on stderr with the objective (the average
loss of the training examples + lambda ||w||_1, from the scores kept in memory: no pass over the data)
and the non-zero weights; when stderr is a terminal, also a progress bar with the time left, redrawn
in place (``\r``) below the last epoch line and erased at the end."""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from streamlearn import learners
from streamlearn.learners.scd import fit as scd
from streamlearn.run import objective
from streamlearn.config import TrainConfig, memory_limit
from streamlearn.errors import OptionError
from streamlearn.io.cache import CacheWriter, read_cache
from streamlearn.io.reader import check_readable
from streamlearn.io.writers import PredictionWriter
from streamlearn.run.model_io import restore_model, save_outputs
from streamlearn.run.report import Reporter
from streamlearn.learners import allocate_table
from streamlearn.run.runstate import RunState
from streamlearn.run.session import Run, preamble
from streamlearn.run.stream import hashing_of, pipelined, text_blocks


def train_scd(cfg: TrainConfig, model=None) -> dict:
    check_readable(cfg.sources + ((cfg.objective_data,) if cfg.objective_data else ()))
    started = time.perf_counter()
    learner = learners.get(cfg.algo)
    hashing = hashing_of(cfg)
    # coordinate descent starts from the -i model's weights (its state is the batch run's own)
    state = RunState.fresh(cfg, train=False).quiet()
    table, prm, st = state.table, state.prm, state.st
    init = None
    if model is not None:
        restore_model(cfg, table, model, prm)
        rows = np.flatnonzero(table[:, 0])
        init = (rows, table[rows, 0].copy())
    rep = Reporter(cfg.quiet)
    run = Run.training(state, rep, strict=cfg.strict)
    preamble(cfg, rep, learner, None)

    fd, cache_path = tempfile.mkstemp(prefix="streamlearn-scd-", suffix=".cache")
    os.close(fd)
    source_name = cfg.sources[0] if len(cfg.sources) == 1 else "cache"
    try:
        writer = CacheWriter(cache_path, dict(hashing.as_dict(), format=cfg.format, sources=list(cfg.sources)))
        n = entries = 0
        try:
            for block in pipelined(text_blocks(cfg.sources, cfg.format, hashing, cfg.block_size,
                                               writer, run.faults.read_error, byte_range=cfg.shard_range)):
                run.faults.report(block)
                n += block.n
                entries += int(block.indptr[block.n])
        except BaseException:
            writer.discard()
            raise
        writer.commit()
        run.progress.examples = n
        need, limit = scd.memory_needed(n, entries), memory_limit(cfg)
        rep.line(f"scd: {n} examples with {entries} feature entries take about {need / 2**20:.1f} MiB "
                 f"in memory (limit {limit / 2**20:.0f} MiB)")
        if need > limit:
            raise OptionError(f"--algo scd needs about {need / 2**20:.0f} MiB to hold the {n} examples in "
                              f"memory, more than --max-memory {limit / 2**20:.0f} MiB; raise --max-memory "
                              f"or use an online learner (--algo smidas, tg, fobos)")
        objectives = []

        def on_epoch(epoch, index, values, accesses):
            if cfg.objective:
                table[:, 0] = 0.0
                table[index, 0] = values
                if cfg.objective_data:
                    blocks = text_blocks([cfg.objective_data], cfg.format, hashing, cfg.block_size)
                    where = cfg.objective_data
                else:
                    blocks, where = read_cache(cache_path, source_name, bits=cfg.bits), "training examples"
                result = objective.evaluate(cfg, state, blocks, allocate_table, accesses)
                rep.out.write(objective.describe(result, epoch, where) + "\n")
                rep.out.flush()
                objectives.append(result)

        bar = EpochProgress(rep.out, quiet=cfg.quiet)
        try:
            index, values, info = scd.fit_scd(read_cache(cache_path, source_name, bits=cfg.bits), cfg.bits,
                                              cfg.loss, cfg.l1, cfg.passes, cfg.cd_order, cfg.random_seed,
                                              on_epoch, init=init, step=cfg.cd_step, progress=bar.update)
        finally:
            bar.close()
        table[:, 0] = 0.0
        table[index, 0] = values
        if cfg.predictions:
            _predict(cfg, table, st, rep, read_cache(cache_path, source_name, bits=cfg.bits))
        nonzero = save_outputs(cfg, run)
    finally:
        try:
            os.unlink(cache_path)
        except OSError:
            pass
    wall = time.perf_counter() - started
    rep.summary([f"number of examples = {n}", f"epochs = {cfg.passes} ({cfg.cd_order} coordinates, "
                 f"{cfg.cd_step} step)",
                 f"objective = {info['objective']:f}" if "objective" in info else "objective = n.a.",
                 f"non-zero weights = {nonzero} ({100.0 * nonzero / (1 << cfg.bits):.4g}% of 2^{cfg.bits})",
                 f"data accesses = {info.get('accesses', 0)}", f"wall time = {wall:.3f} s",
                 f"malformed lines = {run.faults.malformed}"])
    return {"state": st, "table": table, "nonzero": nonzero, "malformed": run.faults.malformed,
            "passes": cfg.passes, "objectives": objectives, "info": info}


class EpochProgress:
    """Per-epoch progress of a fit on ``out`` (``fit_scd``'s ``progress`` callback): one line per epoch,
    ``scd epoch 3/100: objective 0.0797640587 = average loss 0.0741 + l1 0.0056; non-zero weights
    1245; 12.3 s``, and, when ``out`` is a terminal (``tty``: None = ask ``out.isatty()``), a bar
    ``[#######.............]  35/100 epochs, 12.3 s, ETA 22.8 s`` kept on the last line with ``\r``
    (the time left: the mean time of an epoch so far times the epochs left). Nothing when quiet."""

    WIDTH = 30

    def __init__(self, out, quiet: bool = False, tty: bool | None = None):
        self.out = out
        self.quiet = quiet
        if tty is None:
            try:
                tty = bool(out.isatty())
            except (AttributeError, ValueError, OSError):
                tty = False
        self.tty = tty
        self.shown = 0      # characters of the bar on the terminal's last line

    def _erase(self) -> None:
        if self.shown:
            self.out.write("\r" + " " * self.shown + "\r")
            self.shown = 0

    def update(self, state: dict) -> None:
        if self.quiet:
            return
        epoch, epochs, seconds = state["epoch"], state["epochs"], state["seconds"]
        self._erase()
        if epoch > 0:
            self.out.write(f"scd epoch {epoch}/{epochs}: objective {state['objective']:.10g} = average loss "
                           f"{state['loss']:.10g} + l1 {state['regularizer']:.6g}; non-zero weights "
                           f"{state['nonzero']}; {seconds:.1f} s\n")
        if self.tty and epoch < epochs:
            done = int(self.WIDTH * epoch / epochs) if epochs else self.WIDTH
            eta = f"ETA {seconds / epoch * (epochs - epoch):.1f} s" if epoch else "ETA n.a."
            text = (f"[{'#' * done}{'.' * (self.WIDTH - done)}] {epoch:>{len(str(epochs))}}/{epochs} epochs, "
                    f"{seconds:.1f} s, {eta}")
            self.out.write(text)
            self.shown = len(text)
        self.out.flush()

    def close(self) -> None:
        """Erase the bar (after the last epoch, or when the fit stops early)."""
        if not self.quiet:
            self._erase()
            self.out.flush()


def _predict(cfg, table, st, rep, blocks) -> None:
    """The final model's predictions for the training examples (-p)."""
    writer = PredictionWriter(cfg.predictions)
    prm, iprm = learners.make_settings(cfg, train=False, algo=learners.predictor().name)
    run = Run.predicting(RunState(cfg, table, prm, iprm, st), Reporter(True), writer)
    try:
        for block in blocks:
            run.process(block)
    finally:
        writer.close()
