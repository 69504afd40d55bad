"""A served model (``Service``) and the models of a process (``Registry``).

A ``Service`` holds one training run open (``streamlearn.api.Engine``: the CLI's block kernel over
parsed blocks, so learning through it equals ``streamlearn train`` on the same stream) and, for
requests that learn nothing or a daemon started with ``-t``, a predictor built as ``streamlearn
predict`` builds it (the weights in force). Its lines are parsed by the CLI's parser; the predictions
are written by the run's own outputs (``Outputs``: VW's number format and tag, as ``-p`` writes them)
into memory. One lock: one request at a time touches the run, so a prediction never reads a
half-updated weight row and a snapshot is a model between two requests.
"""

from __future__ import annotations

import io
import os
import re
import threading
import time

import numpy as np

from streamlearn.errors import OptionError, StreamlearnError
from streamlearn.io.writers import PredictionWriter, format_predictions

#: VW's save commands: a line (or an empty example's tag) ``save`` or ``save_<file>``
SAVE = re.compile(rb"^\s*'?save(?:_(\S+?))?\s*\|?\s*$")


class _Buffer(PredictionWriter):
    """A prediction writer into memory (the run's -p or -r lines of one request)."""

    def __init__(self):
        self.path = "<connection>"
        self.f = io.BytesIO()

    def take(self) -> list[bytes]:
        data = self.f.getvalue()
        self.f = io.BytesIO()
        return data.split(b"\n")[:-1] if data else []

    def close(self) -> None:
        pass


def save_command(line: bytes):
    """None, or the file a save line names ("" for a plain ``save``)."""
    m = SAVE.match(line)
    if m is None:
        return None
    return (m.group(1) or b"").decode("utf-8", "replace")


class Service:
    """One served model: the learner's state, one learner at a time, predictions on a consistent model."""

    def __init__(self, cfg, name: str = "default", model=None):
        from streamlearn import learners
        self.cfg = cfg
        self.name = name
        if getattr(cfg, "ldf", None) is not None:
            raise OptionError("serve: multi-line examples (--csoaa_ldf, --wap_ldf) cannot be served")
        if learners.get(cfg.algo).batch and not cfg.testonly:
            raise OptionError(f"serve: --algo {cfg.algo} is a batch method; serve its model with -t")
        self.lock = threading.RLock()
        self.fmt = "libsvm" if getattr(cfg, "format", "vw") == "libsvm" else "vw"
        self._counts = {"examples": 0, "learned": 0, "requests": 0, "errors": 0}
        self.last_save_at = None
        #: test mode (``daemon.OrderLog``): ``extend(lines)`` gets the lines learned, in the order applied,
        #: and ``saved(path, data)`` each snapshot, both under the lock
        self.order_log = None
        #: set by ``close`` (the daemon's final save): later requests are refused, nothing is learned after it
        self.closed = False
        self._load(model)

    # ------------------------------------------------------------------ the model
    def _read_model(self):
        path = self.cfg.initial_model
        if not path:
            return None
        from streamlearn.run.vw_models import load_initial
        return load_initial(path, {}, predicting=bool(self.cfg.testonly))

    def _load(self, model=None) -> None:
        from streamlearn.api import Engine
        if model is None:
            model = self._read_model()
        engine = predictor = None
        if self.cfg.testonly:
            predictor = self._predictor_of(model)
        else:
            try:
                engine = Engine(self.cfg, model)
            except ValueError as exc:
                raise StreamlearnError(str(exc)) from None
            engine.run.progress.history = None
            engine.run.arrays.quiet()
            engine.start_pass()
        with self.lock:
            self.engine, self._predicting = engine, predictor
            self.loss_base = self._loss()
            self.model_loaded_at = time.time()

    def _predictor_of(self, model):
        from streamlearn.run.runstate import RunState
        from streamlearn.run.report import Reporter
        from streamlearn.run.session import Run
        cfg = self.cfg
        if model is None:
            rows, w, st = np.zeros(0, np.int64), np.zeros(0), {}
        elif isinstance(model, tuple) and len(model) == 3 and isinstance(model[0], dict):
            header, index, table = model
            rows, w, st = index, table[:, 0], header.get("state", {})
        else:   # an engine's weights in force: (rows, weights, state array)
            rows, w, st = model
        state = RunState.predictor(cfg, rows, w, st)
        state.quiet()
        run = Run.predicting(state, Reporter(True), _Buffer())
        if run.outputs.classes and getattr(cfg, "raw_predictions", None) is None:
            run.outputs.raw_writer = _Buffer()
        return run, self._expander()

    def _expander(self):
        from streamlearn.run.stream import hashing_of
        hashing = hashing_of(self.cfg)
        if not hashing.expands:
            return None
        from streamlearn.io.expand import make_expander
        return make_expander(hashing.features, hashing.mask, hashing.lowrank)

    def _loss(self) -> tuple[float, float]:
        from streamlearn.core.state import C_SUM_LOSS, C_W_LABELED
        run = self.engine.run if self.engine is not None else self._predicting[0]
        return float(run.ctr[C_SUM_LOSS]), float(run.ctr[C_W_LABELED])

    def reload(self) -> None:
        """Re-read the model file (-i, else -f) and serve it from the next request on."""
        path = self.cfg.initial_model or self.cfg.final_model
        if not path:
            raise StreamlearnError("reload: the daemon has no model file (-i or -f)")
        from streamlearn.run.vw_models import load_initial
        model = load_initial(path, {}, predicting=bool(self.cfg.testonly))
        self._load(model)

    def model_bytes(self) -> bytes:
        with self.lock:
            if self.engine is not None:
                return self.engine.to_bytes()
            path = self.cfg.initial_model
            if not path:
                raise StreamlearnError("save: a -t daemon without -i has no model to save")
            with open(path, "rb") as f:
                return f.read()

    def save(self, path: str | None = None) -> str:
        """Write the model atomically (temporary file in the same directory, fsync, rename) to
        ``path`` or the -f path; returns the path."""
        from streamlearn.io.atomic import write_atomic
        path = path or self.cfg.final_model
        if not path:
            raise StreamlearnError("save: no file named and no -f given")
        with self.lock:
            data = self.model_bytes()
            write_atomic(path, [data], "model")
            self.last_save_at = time.time()
            if self.order_log is not None:
                self.order_log.saved(path, data)
        return path

    def close(self, save: bool = True) -> str | None:
        """The final save (to -f, when there is one and the model learns) and no request after it."""
        with self.lock:
            path = self.save() if save and self.cfg.final_model and self.engine is not None else None
            self.closed = True
            return path

    # ------------------------------------------------------------------ requests
    def _block(self, lines: list[bytes], expander):
        from streamlearn.api import text_block
        return text_block(lines, self.cfg, self.fmt, "connection", expander)

    def _parse(self, lines: list[bytes], expander, strict: bool = False):
        """(block of the good lines, index of the input line of each example, {line: error})."""
        block = self._block(lines, expander)
        errors = {}
        for ln, reason, _ in block.fault_lines():
            errors[ln - 1] = reason
        for i, ln in enumerate(lines):
            if b"\n" in ln or b"\r" in ln:
                errors[i] = "a request line holds a line break"
        if errors and strict:     # the lines before the first bad one only
            first = min(errors)
            errors = {first: errors[first]}
            lines = lines[:first]
        if errors:
            good = [i for i in range(len(lines)) if i not in errors]
            block = self._block([lines[i] for i in good], expander)
            where = [good[int(k) - 1] for k in block.lines[:block.n]]
        else:
            where = [int(k) - 1 for k in block.lines[:block.n]]
        return block, where, errors

    def handle(self, lines: list[bytes], learn: bool | None = None, raw: bool = False,
               strict: bool = False) -> list[bytes]:
        """One output line per example line, in order; labelled examples learned unless -t (learn
        False: never learn; True: learn; None: the daemon's setting). A bad line gives
        b"error: <reason>" for that line (and a counter); a line that is no example (empty, a
        comment) gives b"". ``strict``: nothing after the first bad line is read (its outputs are
        b"" too)."""
        lines = [bytes(x).rstrip(b"\r\n") for x in lines]
        if learn is None:
            learn = not self.cfg.testonly
        with self.lock:
            if self.closed:
                raise StreamlearnError(f"model {self.name}: the daemon is stopping")
            self._counts["requests"] += 1
            if learn and self.engine is None:
                raise StreamlearnError(f"model {self.name}: started with -t, it learns nothing")
            out = [b""] * len(lines)
            if learn:
                engine = self.engine
                expander = engine.expander
                if expander is None:
                    from streamlearn.run.stream import hashing_of
                    if hashing_of(self.cfg).expands:
                        engine.text_block([b"|"])  # makes the run's expander (no example processed)
                    expander = engine.expander
                block, where, errors = self._parse(lines, expander, strict)
                run = engine.run
                writer = _Buffer()
                raw_writer = _Buffer() if (raw and run.outputs.classes) else None
                run.outputs.writer, saved_raw = writer, run.outputs.raw_writer
                if raw_writer is not None:
                    run.outputs.raw_writer = raw_writer
                try:
                    preds = engine.learn(block) if block.n else None
                finally:
                    run.outputs.writer, run.outputs.raw_writer = None, saved_raw
                engine._predictor = engine._weights = None
                if self._predicting is not None:
                    self._predicting = None
                labelled = int(np.count_nonzero(block.labels[:block.n] == block.labels[:block.n]))
                self._counts["learned"] += labelled
                if self.order_log is not None:
                    self.order_log.extend(lines[i] for i in where)
            else:
                if self._predicting is None:
                    rows, w = self.engine.weights()
                    self._predicting = self._predictor_of((rows, w, self.engine.st))
                run, expander = self._predicting
                block, where, errors = self._parse(lines, expander, strict)
                writer = run.outputs.writer
                raw_writer = run.outputs.raw_writer if raw else None
                preds = run.process(block) if block.n else None
                if raw_writer is None and run.outputs.raw_writer is not None:
                    run.outputs.raw_writer.take()
            if raw and not run.outputs.classes:
                text = [t.encode() for t in format_predictions(preds)] if preds is not None else []
                if block.n and block.has_tags():
                    text = [t + b" " + tag if tag else t for t, tag in zip(text, block.tag_list())]
                writer.take()
            else:
                text = (raw_writer if raw_writer is not None else writer).take()
                if raw_writer is not None:
                    writer.take()
                text = [t[1:] if t.startswith(b" ") and raw_writer is not None else t for t in text]
            for i, t in zip(where, text):
                out[i] = t
            for i, reason in errors.items():
                out[i] = b"error: " + reason.encode("utf-8", "replace")
            self._counts["examples"] += block.n
            self._counts["errors"] += len(errors)
        return out

    def stats(self) -> dict:
        with self.lock:
            loss, weighted = self._loss()
            return {**self._counts, "loss_sum": loss, "weighted": weighted,
                    "model_loaded_at": self.model_loaded_at, "last_save_at": self.last_save_at}


class Registry:
    """name -> Service (``--model name=path``, repeatable; a single -i/-f model is "default")."""

    def __init__(self, services=()):
        self._services = {}
        for s in services:
            self.add(s)

    def add(self, service: Service) -> None:
        if service.name in self._services:
            raise OptionError(f"--model {service.name}: the name is given twice")
        self._services[service.name] = service

    def get(self, name: str) -> Service:
        return self._services[name]

    def names(self) -> list[str]:
        return list(self._services)

    def __iter__(self):
        return iter(self._services.values())
