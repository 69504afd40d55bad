"""``streamlearn.Model``: the river/VW-style online handle, one example (or many) at a time.

``Model(**options)`` takes the CLI's option names (``TrainConfig`` fields): ``Model(loss="logistic",
algo="tg", l1=1e-6, bits=20, quadratic=("ab",))``; bad options raise ``ValueError`` with the CLI's
one-line text. An example ``x`` is

* a VW text line (str or bytes), with its own label, importance and tag as the CLI reads them, or
* a dict ``{namespace: {feature: value}}`` (a list, tuple or set of features: value 1 each), written as
  the equivalent VW line (``|namespace feature:value ...``; namespace ``" "`` or ``""`` is the default
  namespace) and parsed by the CLI's parser, so its hashing is the CLI's.

``y`` and ``weight``, when given, set the example's label and importance (over the line's own).
Every input becomes a parsed block handed to the CLI's block kernel in order
(``streamlearn.api.Engine``), so ``learn_many`` equals a loop of ``learn_one`` exactly and both equal
``streamlearn train`` on the same lines: ``learn_one`` returns the progressive prediction the CLI's
``-p`` writes (after ``--binary`` or the link; ``--oaa K``: the class), ``predict_one``/``predict_many``
use the weights in force and learn nothing. Models are the CLI's model files (``save``/``load``,
``to_bytes``/``from_bytes``, pickling), so ``streamlearn predict -i`` serves a saved Model and
``Model.load`` reads a CLI model.

``Model(names=True)`` also collects the feature names (as ``train --invert_hash`` does; a slow,
plain-Python expansion of every example), which ``invert_hash()`` writes into the readable model.

``VWHasher`` (scikit-learn transformer, ``streamlearn.vwhasher``) is re-exported here lazily:
``import streamlearn.online`` does not import scikit-learn.
"""

from __future__ import annotations

import os
import re
import tempfile

import numpy as np

from streamlearn.api import Engine, check_targets, finite_values, make_config

__all__ = ["Model", "VWHasher", "dict_line"]

#: characters a VW line cannot carry inside a namespace or feature name
_BAD = re.compile(r"[\s:|]")

#: examples per block handed to the kernel by learn_many / predict_many
BLOCK = 16384


def __getattr__(name):
    if name == "VWHasher":
        from streamlearn.vwhasher import VWHasher
        return VWHasher
    raise AttributeError(f"module 'streamlearn.online' has no attribute {name!r}")


def _num(v) -> str:
    v = float(v)
    return repr(v) if not v.is_integer() or abs(v) >= 1e16 else str(int(v))


def _check_name(kind: str, name: str) -> str:
    if not isinstance(name, str):
        name = str(name)
    if _BAD.search(name):
        raise ValueError(f"{kind} name {name!r} cannot be written in a VW line (whitespace, ':' or '|')")
    return name


def dict_line(x: dict, y=None, weight=None) -> str:
    """The VW line of a dict example ``{namespace: {feature: value}}`` (or ``{namespace: [features]}``)."""
    head = []
    if y is not None:
        head.append(_num(y))
        if weight is not None:
            head.append(_num(weight))
    parts = [" ".join(head)] if head else [""]
    for ns, feats in x.items():
        ns = "" if ns is None or ns == " " else _check_name("namespace", ns)
        items = []
        if isinstance(feats, dict):
            for f, v in feats.items():
                f = _check_name("feature", f)
                if not f:
                    raise ValueError("feature name '' cannot be written in a VW line")
                v = float(v)
                if not abs(v) <= 3.4028234663852886e38:     # NaN, infinite or beyond float32: the
                    raise ValueError(f"namespace {ns or ' '!r}, feature {f!r}: value {v!r} is not a finite "
                                     f"number within float32's range (+-3.4e38)")   # CLI's fault, raised
                items.append(f if v == 1.0 else f"{f}:{_num(v)}")
        elif isinstance(feats, (list, tuple, set, frozenset)):
            for f in feats:
                f = _check_name("feature", f)
                if not f:
                    raise ValueError("feature name '' cannot be written in a VW line")
                items.append(f)
        else:
            raise ValueError(f"namespace {ns or ' '!r}: features must be a dict or a list, not "
                             f"{type(feats).__name__}")
        parts.append(ns + (" " + " ".join(items) if items else ""))
    return "|".join(parts) if len(parts) > 1 else (parts[0] + " |")


class Model:
    """An online linear learner with the CLI's options (module docstring)."""

    def __init__(self, names: bool = False, **options):
        self.options = dict(options)
        self.collect_names = bool(names)
        self.cfg = make_config(self.options)
        self._engine = None

    # ------------------------------------------------------------------ the run
    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = self._new_engine(Engine(self.cfg))
        return self._engine

    def _new_engine(self, engine: Engine) -> Engine:
        self.cfg = engine.cfg
        engine.run.progress.history = None      # no progress rows kept (the CLI keeps them only for --plot)
        if self.collect_names and engine.run.audit.names is None:
            from streamlearn.features.audit import FeatureNames
            from streamlearn.run.stream import hashing_of
            cfg = engine.cfg
            engine.run.audit.names = FeatureNames(hashing_of(cfg).features, cfg.bits, cfg.noconstant, cfg.hash_seed,
                                            cfg.hash, cfg.classes)
        engine.start_pass()
        return engine

    def _lines(self, xs) -> list[bytes]:
        out = []
        for i, x in enumerate(xs):
            if isinstance(x, dict):
                out.append(dict_line(x).encode())
            elif isinstance(x, str):
                out.append(x.rstrip("\r\n").encode())
            elif isinstance(x, (bytes, bytearray, memoryview)):
                out.append(bytes(x).rstrip(b"\r\n"))
            else:
                raise ValueError(f"example {i}: a VW line (str or bytes) or a dict, not {type(x).__name__}")
        return out

    def _text(self, xs):
        """(the lines as bytes, or None, and the text of the block). Fast path: all bytes or all str
        lines without line ends are joined as they are (the per-line list only when names are kept)."""
        n = len(xs)
        if n and self.engine.run.audit.names is None:
            first = type(xs[0])
            if first is bytes or first is str:
                try:
                    joined = (b"\n" if first is bytes else "\n").join(xs)
                except TypeError:       # mixed types: line by line
                    joined = None
                if joined is not None:
                    if first is str:
                        joined = joined.encode()
                    if b"\r" not in joined and b"\n\n" not in joined and not joined.endswith(b"\n"):
                        return None, joined
        lines = self._lines(xs)
        return lines, b"\n".join(lines)

    def _block(self, xs, ys, weights):
        engine = self.engine
        lines, joined = self._text(xs)
        block = engine.text_block([joined])
        if block.n != len(xs):
            if lines is None:
                lines = self._lines(xs)
            got = set(block.lines.tolist())
            bad = next(i for i in range(len(lines)) if i + 1 not in got or b"\n" in lines[i])
            raise ValueError(f"example {bad}: {lines[bad][:80].decode('utf-8', 'replace')!r} is not one VW example")
        if ys is not None:
            block.labels[:] = np.asarray(ys, np.float64)
        if weights is not None:
            block.weights[:] = np.asarray(weights, np.float64)
        if engine.run.audit.names is not None:
            block.text_lines = lines
        return block

    def _shown(self, preds: np.ndarray) -> np.ndarray:
        if self.cfg.classes:
            return preds[:, 0].copy()
        return self.engine.run.outputs.shown(preds)

    def _chunks(self, xs, ys, weights):
        if len(xs) <= BLOCK:
            yield xs, ys, weights
            return
        for start in range(0, len(xs), BLOCK):
            sl = slice(start, start + BLOCK)
            yield xs[sl], None if ys is None else ys[sl], None if weights is None else weights[sl]

    # ------------------------------------------------------------------ learning and predicting
    def learn_many(self, xs, ys=None, weights=None) -> np.ndarray:
        """Predict then learn each example in order; the progressive predictions (as ``-p``). Blocks of
        ``BLOCK`` examples; the next block is parsed on a worker thread while one is learned (the CLI's
        pipeline: parsing does not depend on learning, so the result is that of one block at a time)."""
        xs = xs if isinstance(xs, (list, tuple)) else list(xs)
        if ys is not None:
            ys = np.asarray(ys, np.float64)
            if ys.shape[0] != len(xs):
                raise ValueError(f"{ys.shape[0]} labels for {len(xs)} examples")
            ys = check_targets(ys, len(xs))     # finite, within float32 (the CLI's rule for a label)
        if weights is not None:
            weights = np.asarray(weights, np.float64)
            if weights.shape[0] != len(xs):
                raise ValueError(f"{weights.shape[0]} weights for {len(xs)} examples")
            finite_values(weights, "weights")
            if weights.size and weights.min() < 0:
                raise ValueError("Negative values in data passed to `weights`.")
        engine = self.engine
        blocks = (self._block(cx, cy, cw) for cx, cy, cw in self._chunks(xs, ys, weights))
        if len(xs) > BLOCK:
            from streamlearn.run.stream import pipelined
            blocks = pipelined(blocks)
        out = [self._shown(engine.learn(block)) for block in blocks]
        return np.concatenate(out) if out else np.zeros(0)

    def learn_one(self, x, y=None, weight=None) -> float:
        """Predict then learn one example; its progressive prediction (as ``-p`` shows it)."""
        return float(self.learn_many([x], None if y is None else [y], None if weight is None else [weight])[0])

    def predict_many(self, xs) -> np.ndarray:
        """Predictions with the weights in force; nothing is learned."""
        out = []
        xs = xs if isinstance(xs, (list, tuple)) else list(xs)
        for cx, _, _ in self._chunks(xs, None, None):
            block = self._block(cx, None, None)
            out.append(self._shown(self.engine.predict(block)))
        return np.concatenate(out) if out else np.zeros(0)

    def predict_one(self, x) -> float:
        return float(self.predict_many([x])[0])

    # ------------------------------------------------------------------ the model
    def weights(self) -> dict:
        """{slot: weight in force} of the non-zero weights."""
        rows, w = self.engine.weights()
        return dict(zip(rows.tolist(), w.tolist()))

    def _readable(self, names: bool) -> str:
        from streamlearn import learners
        from streamlearn.io.writers import write_readable_model
        from streamlearn.run.model_io import readable_content
        cfg, engine = self.cfg, self.engine
        table, st, touched, in_force, slots = engine.finalized()
        header, rows, values = readable_content(cfg, table, st, touched, in_force, engine.run.ctr,
                                                engine.run.passes_before + max(1, engine.passes),
                                                engine.run.counters_loaded, slots)
        fd, path = tempfile.mkstemp(suffix=".txt", prefix="streamlearn-readable-")
        os.close(fd)
        try:
            if names:
                run_names = engine.run.audit.names.names if engine.run.audit.names is not None else {}
                write_readable_model(path, header, rows, values, run_names,
                                     name_zero_weights=learners.get(cfg.algo).readable is not None)
            else:
                write_readable_model(path, header, rows, values)
            with open(path, encoding="utf-8") as f:
                return f.read()
        finally:
            os.unlink(path)

    def readable(self) -> str:
        """The readable model, as ``streamlearn train --readable_model`` writes it."""
        return self._readable(False)

    def invert_hash(self) -> str:
        """The readable model with feature names, as ``streamlearn train --invert_hash`` writes it
        (names are collected with ``Model(names=True)``)."""
        return self._readable(True)

    def to_bytes(self) -> bytes:
        """The model file ``streamlearn train -f`` would write now."""
        return self.engine.to_bytes()

    def save(self, path) -> None:
        with open(path, "wb") as f:
            f.write(self.to_bytes())

    @classmethod
    def from_bytes(cls, data: bytes, names: bool = False, **options) -> "Model":
        """A Model continuing a model file's run (its options, with ``options`` on top, as ``train -i``)."""
        engine = Engine.from_bytes(data, options)
        model = cls.__new__(cls)
        model.options = dict(options)
        model.collect_names = bool(names)
        model.cfg = engine.cfg
        model._engine = None
        model._engine = model._new_engine(engine)
        return model

    @classmethod
    def load(cls, path, names: bool = False, **options) -> "Model":
        with open(path, "rb") as f:
            return cls.from_bytes(f.read(), names=names, **options)

    def __getstate__(self):
        names = None
        if self._engine is not None and self._engine.run.audit.names is not None:
            names = dict(self._engine.run.audit.names.names)
        counters = None
        if self._engine is not None:        # the run's counters and passes (a readable model prints them)
            counters = self._engine.counters_state()
        return {"options": self.options, "collect_names": self.collect_names,
                "model": self.to_bytes() if self._engine is not None else None, "names": names,
                "counters": counters}

    def __setstate__(self, state):
        self.options = state["options"]
        self.collect_names = state["collect_names"]
        self.cfg = make_config(self.options)
        self._engine = None
        if state["model"] is not None:
            self._engine = self._new_engine(Engine.from_bytes(state["model"], self.options))
            if state["names"] is not None and self._engine.run.audit.names is not None:
                self._engine.run.audit.names.names.update(state["names"])
            if state.get("counters") is not None:
                self._engine.restore_counters(state["counters"])

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"Model({args})"

