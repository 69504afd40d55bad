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
from functools import cached_property

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
        data = self.take_bytes()
        return data.split(b"\n")[:-1] if data else []

    def take_bytes(self) -> bytes:
        data = self.f.getvalue()
        self.f = io.BytesIO()
        return data

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
        #: predictions on several threads: each thread's twin of the predictor (``_twin``), remade when the
        #: weights in force change (``_generation``); the twins of the model in force (their counters)
        self._local = threading.local()
        self._generation = 0
        self._twins: list = []
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
            self.engine = engine
            self._set_predicting(predictor)
            self._twins = []
            self.loss_base = self._loss()
            self.model_loaded_at = time.time()

    def _set_predicting(self, predictor) -> None:
        """The predictor of the weights in force (None: made again when asked, after learning)."""
        self._predicting = predictor
        self._generation += 1

    def _run_of(self, state):
        """(a predicting run writing into memory, its expander) of a predictor's arrays."""
        from streamlearn.run.report import Reporter
        from streamlearn.run.session import Run
        state.quiet()
        run = Run.predicting(state, Reporter(True), _Buffer())
        if run.outputs.classes and getattr(self.cfg, "raw_predictions", None) is None:
            run.outputs.raw_writer = _Buffer()
        return run, self._expander()

    def _twin(self):
        """This thread's twin of the predictor in force (under the lock): the same weights, its own
        counters and outputs, so predictions run on several threads at once while the kernels release
        the GIL. Each thread keeps its own twin, as each of VW's forked children its own copy."""
        local = self._local
        if getattr(local, "generation", None) != self._generation:
            run, _ = self._runner(False)
            twin = self._run_of(run.arrays.twin())
            local.generation, local.runner = self._generation, twin
            if self.engine is None:
                self._twins.append(twin[0])
        return local.runner

    def _predictor_of(self, model):
        from streamlearn.run.runstate import RunState
        cfg = self.cfg
        if model is None:
            rows, w, st = np.zeros(0, np.int64), np.zeros(0), {}
        elif isinstance(model, tuple) and len(model) == 3 and isinstance(model[0], dict):
            header, index, table = model
            rows, w, st = index, table[:, 0], header.get("state", {})
        else:   # an engine's weights in force: (rows, weights, state array)
            rows, w, st = model
        return self._run_of(RunState.predictor(cfg, rows, w, st))

    def _expander(self):
        from streamlearn.run.stream import hashing_of
        hashing = hashing_of(self.cfg)
        if not hashing.expands:
            return None
        from streamlearn.io.expand import make_expander
        return make_expander(hashing.features, hashing.mask, hashing.lowrank)

    def _loss(self) -> tuple[float, float]:
        from streamlearn.core.state import C_SUM_LOSS, C_W_LABELED
        if self.engine is not None:
            runs = [self.engine.run]
        else:       # a -t daemon: its predictor's and the threads' twins'
            runs = [self._predicting[0], *self._twins]
        return (float(sum(r.ctr[C_SUM_LOSS] for r in runs)), float(sum(r.ctr[C_W_LABELED] for r in runs)))

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

    def parse_chunk(self, data: bytes):
        """A chunk's block parsed ahead, outside the model's lock (the parser releases the GIL, so a
        connection parses its next chunk while the model answers the last): the block; None when it is
        parsed under the lock (the run expands features: its expander remembers the namespaces seen);
        False when some line is not a plain example (``handle`` answers those lines)."""
        if self._expands:
            return None
        block = self._plain_block(data, None)
        return False if block is None else block

    def chunk(self, data: bytes, learn: bool | None = None, block=None) -> bytes | None:
        """The answer to a chunk of complete example lines (``data``: each line ends in a newline; none
        is a save command) as one bytes, or None when some line is not a plain example (a bad line, an
        empty line, a comment, a carriage return: ``handle`` on its lines answers those). The fast path of
        a connection: no work per line in Python. ``block``: ``parse_chunk``'s, when parsed ahead."""
        if learn is None:
            learn = not self.cfg.testonly
        if block is None:
            block = self.parse_chunk(data)
        if block is False:
            return None
        if not learn:       # predictions: this thread's twin, outside the lock
            with self.lock:
                self._check(False)
                run, expander = self._twin()
            if block is None:
                block = self._plain_block(data, expander)
                if block is None:
                    return None
            run.process(block)
            if run.outputs.raw_writer is not None:
                run.outputs.raw_writer.take()
            with self.lock:
                self._counts["requests"] += 1
                self._counts["examples"] += block.n
            return run.outputs.writer.take_bytes()
        with self.lock:
            self._check(True)
            run, expander = self._runner(True)
            if block is None:
                block = self._plain_block(data, expander)
                if block is None:
                    return None
            self._counts["requests"] += 1
            writer = run.outputs.writer = _Buffer()
            try:
                self.engine.learn(block)
            finally:
                run.outputs.writer = None
            self._learned(block, data.split(b"\n")[:-1] if self.order_log is not None else ())
            self._counts["examples"] += block.n
            return writer.take_bytes()

    def _plain_block(self, data: bytes, expander):
        """The block of a chunk whose every line is a plain example, else None."""
        from streamlearn.api import buffer_block
        if b"\r" in data:
            return None
        block = buffer_block(data, self.cfg, self.fmt, "connection", expander)
        return block if block.n == data.count(b"\n") and not block.faults.shape[0] else None

    @cached_property
    def _expands(self) -> bool:
        from streamlearn.run.stream import hashing_of
        return hashing_of(self.cfg).expands

    def _check(self, learn: bool) -> None:
        if self.closed:
            raise StreamlearnError(f"model {self.name}: the daemon is stopping")
        if learn and self.engine is None:
            raise StreamlearnError(f"model {self.name}: started with -t, it learns nothing")

    def _runner(self, learn: bool):
        """(run, expander) of a request: the training run, or the predictor of the weights in force."""
        if learn:
            engine = self.engine
            if engine.expander is None and self._expands:
                engine.text_block([b"|"])  # makes the run's expander (no example processed)
            return engine.run, engine.expander
        if self._predicting is None:
            rows, w = self.engine.weights()
            self._set_predicting(self._predictor_of((rows, w, self.engine.st)))
        return self._predicting

    def _learned(self, block, lines: list[bytes]) -> None:
        """After learning a block: the predictor of the weights in force is stale; the counters; the
        order log (test mode)."""
        self.engine._predictor = self.engine._weights = None
        self._set_predicting(None)
        labels = block.labels[:block.n]
        self._counts["learned"] += int(np.count_nonzero(labels == labels))
        if self.order_log is not None:
            self.order_log.extend(lines)

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
            self._check(learn)
            self._counts["requests"] += 1
            out = [b""] * len(lines)
            run, expander = self._runner(learn)
            if learn:
                block, where, errors = self._parse(lines, expander, strict)
                writer = _Buffer()
                raw_writer = _Buffer() if (raw and run.outputs.classes) else None
                run.outputs.writer, saved_raw = writer, run.outputs.raw_writer
                if raw_writer is not None:
                    run.outputs.raw_writer = raw_writer
                try:
                    preds = self.engine.learn(block) if block.n else None
                finally:
                    run.outputs.writer, run.outputs.raw_writer = None, saved_raw
                self._learned(block, [lines[i] for i in where])
            else:
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
