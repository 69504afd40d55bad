"""Training on Dask: iterative parameter mixing over sharded inputs (issue 16, second slice; the
design is ``../shared/docs/scale-out.md``, "Design" items 1 to 3).

``train(client, files, passes, mix, **options)`` runs ``passes`` rounds. A round is one pass over
every shard: each shard (a file; no byte-range splitting yet) is a stateless task
``train_shard(path, options, model_bytes) -> model_bytes`` that continues the round's model on that
file for one pass through the CLI's own ``-i`` resume path (``driver.prepare_train`` and
``driver.train`` with ``-i``/``-f`` files in the worker's temporary directory, exactly what
``streamlearn train -i round.model -d shard -f out.model`` does), and returns the model file it
saved. The client gathers the k models in shard order and merges them with
``streamlearn.mix.merge`` (iterative parameter mixing: McDonald, Hall & Mann, NAACL 2010, as
scale-out.md cites it; VW's ``accumulate_weighted_avg`` at every pass end); the merged model is the
next round's model, and the last one is returned as model-file bytes.

Placement is deterministic: shards are balanced by bytes over the workers (sorted addresses),
largest first to the least loaded worker, and each task is submitted to its worker with
``allow_other_workers=True`` (sticky, but a dead worker's task can run elsewhere). The merge depends
on the shard order only, never on which worker ran a task or when it finished, so a rerun gives the
same bytes.

The first round's tasks get every option; later rounds resume from the merged model and get only the
options a model file does not keep (``--quiet``, ``--strict``, the reader's), as a user continuing a
model with ``train -i`` would. A streamlearn error in a task (a bad option, an unreadable file, a
malformed line under ``--strict``) is raised at the client as a one-line ``ValueError`` naming the
shard.

``streamlearn train --dask ADDRESS|local:N`` (issue 16, third slice) is ``run_cli``: ``connect``
starts or reaches the cluster, ``train`` reports each round to ``RoundTable`` (the progress table on
stderr, from the counts the tasks return) and the merged model is written atomically.

Dask is an optional extra (``pip install 'streamlearn[dask]'``); ``import streamlearn`` never imports
this module.
"""

from __future__ import annotations

import contextlib
import glob
import os
import sys
import tempfile
import time

import numpy as np

try:
    import distributed  # noqa: F401 (the Client and the workers come from the caller)
except ImportError:     # pragma: no cover - exercised only without the extra
    raise ImportError("streamlearn.dask needs Dask: pip install 'streamlearn[dask]'") from None

from streamlearn.mix import MIX_RULES

#: options this module sets itself
_OWN = ("passes", "sources", "initial_model", "final_model")
#: per-run outputs that have no meaning for a task on a shard (not supported on Dask yet)
_UNSUPPORTED = ("predictions", "raw_predictions", "readable_model", "invert_hash", "plot", "trace",
                "trace_data", "cache_file", "audit", "objective", "objective_data", "testonly",
                "predict_only_model")   # a weights-only model would drop every round's adaptive state


class ShardError(ValueError):
    """A streamlearn error in a shard's training (one line, naming the shard)."""


def expand_files(files) -> list[str]:
    """The shards of ``files`` (paths or globs; a single string is one entry): each glob's matches
    sorted, entries in the order given. A glob that matches nothing is a one-line ValueError."""
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    out = []
    for entry in files:
        entry = os.fspath(entry)
        if glob.has_magic(entry):
            found = sorted(glob.glob(entry))
            if not found:
                raise ValueError(f"no file matches {entry}")
            out.extend(found)
        else:
            out.append(entry)
    if not out:
        raise ValueError("no shards given")
    for path in out:
        if not os.path.isfile(path):
            raise ValueError(f"cannot read {path}: no such file")
    return out


def assign(sizes: list[int], workers: list[str]) -> list[str]:
    """The worker of each shard: shards by decreasing size (ties: in order) each go to the least
    loaded worker so far (ties: the first in ``workers``' order). Deterministic."""
    load = [0] * len(workers)
    where = [""] * len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        j = min(range(len(workers)), key=lambda j: (load[j], j))
        where[i] = workers[j]
        load[j] += sizes[i]
    return where


def train_shard(path: str, options: dict, model: bytes | None) -> bytes:
    """One pass of streamlearn's training over the file ``path``, continuing ``model`` (model-file
    bytes, or None to start fresh) through the ``-i`` resume path; the bytes of the model it saves
    (``-f``). A streamlearn error is a one-line ShardError (a ValueError) that names the shard."""
    return _train_shard(path, options, model)[0]


def _train_shard(path: str, options: dict, model: bytes | None) -> tuple[bytes, dict]:
    """``train_shard``'s model bytes and the shard's counts for the progress table: examples, and the
    summed progressive loss and labeled weight (absent for batch learners, which keep no counters)."""
    from streamlearn import driver
    from streamlearn.errors import StreamlearnError
    from streamlearn.kernels import state as S

    with tempfile.TemporaryDirectory(prefix="streamlearn-dask-") as tmp:
        explicit = {"quiet": True, **options, "sources": (path,), "passes": 1,
                    "final_model": os.path.join(tmp, "out.model")}
        if model is not None:
            explicit["initial_model"] = os.path.join(tmp, "in.model")
            with open(explicit["initial_model"], "wb") as f:
                f.write(model)
        try:
            cfg, restored = driver.prepare_train(explicit)
            result = driver.train(cfg, restored)
        except StreamlearnError as exc:
            msg = str(exc)
            raise ShardError(msg if path in msg else f"{path}: {msg}") from None
        ctr = result.get("counters")
        stats = {} if ctr is None else {"examples": int(ctr[S.C_EXAMPLES]), "loss": float(ctr[S.C_SUM_LOSS]),
                                        "weight": float(ctr[S.C_W_LABELED])}
        with open(explicit["final_model"], "rb") as f:
            return f.read(), stats


def _task(path: str, options: dict, model: bytes | None) -> tuple[bool, bytes | str, dict]:
    """``_train_shard`` as a Dask task: (True, model bytes, counts) or (False, the one-line error, {}),
    so that a user's error is neither logged by the worker as a failed computation nor sent with a
    traceback."""
    try:
        return (True, *_train_shard(path, options, model))
    except ShardError as exc:
        return False, str(exc), {}


def _run_options(options: dict) -> dict:
    """The options a resumed round gives its tasks: those a model file does not keep."""
    from streamlearn.config import MODEL_OPTIONS
    return {k: v for k, v in options.items() if k not in MODEL_OPTIONS and k not in ("algo", "sgd")}


def check(files, passes: int, mix: str, options: dict) -> list[str]:
    """The shards of ``files`` once ``passes``, ``mix`` and ``options`` are checked (``train``'s
    arguments); a one-line ValueError otherwise."""
    from streamlearn.api import make_config

    if mix not in MIX_RULES:
        raise ValueError(f"unknown mix rule {mix!r}: choose weighted or uniform")
    if not isinstance(passes, int) or isinstance(passes, bool) or passes < 1:
        raise ValueError(f"passes must be a positive integer, not {passes!r}")
    for name in options:
        if name in _OWN:
            raise ValueError(f"option {name} is set by streamlearn.dask.train itself")
        if name in _UNSUPPORTED:
            raise ValueError(f"option {name} is not supported on Dask yet")
    shards = expand_files(files)
    make_config({**options, "sources": tuple(shards)})      # a bad option: one line, before any task
    return shards


def train(client, files, passes: int = 1, mix: str = "weighted", on_round=None, **options) -> bytes:
    """Train on the shards ``files`` (paths or globs) across ``client``'s workers: ``passes`` rounds of
    one pass per shard, each round's k models merged with ``streamlearn.mix.merge(rule=mix)``
    (module docstring). ``options`` are ``streamlearn train``'s, by their Python names (``l1=1e-4``,
    ``algo="tg"``, ``bits=18``). Returns the final model file's bytes (``streamlearn predict -i``
    reads them; the header's "mix" key records the workers, rounds and rule).

    ``on_round``, if given, is called after every round with a dict: ``round`` (1-based), ``rounds``,
    ``shards``, ``workers``, ``examples`` (summed over the shards), ``loss`` (the round's average
    progressive loss over all shards, None for batch learners or no labels), ``nonzero`` (non-zero
    weights of the merged model), ``wall`` (the round's seconds), ``sync`` (the merge's seconds) and the
    sync's messages: ``sent`` (the bytes of each shard's model, in shard order: only touched rows, the
    model file's sparse layout) and ``start`` (the bytes of the round's starting model, 0 in round 1)."""
    from streamlearn.io.model_file import model_bytes, parse_model
    from streamlearn.mix import merge

    shards = check(files, passes, mix, options)
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        raise ValueError("the Dask cluster has no workers")
    where = assign([os.path.getsize(p) for p in shards], workers)

    model = None
    later = _run_options(options)
    for round_ in range(passes):
        started = time.perf_counter()
        opts = options if round_ == 0 else later
        start_bytes = model
        start = None if model is None else client.scatter(model, hash=False)   # sent once, not per task
        futures = [client.submit(_task, path, opts, start, workers=[addr], allow_other_workers=True,
                                 pure=False)
                   for path, addr in zip(shards, where)]
        results = client.gather(futures)
        for ok, payload, _ in results:     # the first error in shard order (deterministic)
            if not ok:
                raise ValueError(payload)
        synced = time.perf_counter()
        stats = [counts for _, _, counts in results]
        base = None if model is None else parse_model(model, "the round's model")
        merged = merge(base, [parse_model(b, p) for (_, b, _), p in zip(results, shards)], rule=mix)
        model = model_bytes(*merged)
        if on_round is not None:
            done = time.perf_counter()
            weight = sum(c.get("weight", 0.0) for c in stats)
            on_round({"round": round_ + 1, "rounds": passes, "shards": len(shards), "workers": len(workers),
                      "examples": sum(c.get("examples", 0) for c in stats),
                      "loss": (sum(c["loss"] for c in stats) / weight
                               if weight > 0 and all("loss" in c for c in stats) else None),
                      "nonzero": int(np.count_nonzero(merged[2][:, 0])) if len(merged[2]) else 0,
                      "wall": done - started, "sync": done - synced,
                      "sent": [len(b) for _, b, _ in results], "start": 0 if base is None else len(start_bytes)})
    return model


#: seconds a ``--dask ADDRESS`` run waits for the scheduler
CONNECT_TIMEOUT = 5.0


class DaskSetupError(ValueError):
    """A ``--dask`` value that cannot be used (one line)."""


@contextlib.contextmanager
def connect(address: str):
    """A ``distributed.Client`` for ``--dask ADDRESS|local:N``: ``local:N`` starts
    ``LocalCluster(n_workers=N, threads_per_worker=1, processes=True)`` for the run and closes it; an
    address connects to a running scheduler within ``CONNECT_TIMEOUT`` seconds. Errors are one-line
    DaskSetupErrors."""
    from distributed import Client, LocalCluster

    if address.startswith("local:"):
        n = address[len("local:"):]
        if not n.isdigit() or int(n) < 1:
            raise DaskSetupError(f"--dask {address}: local:N needs a whole number of workers N >= 1")
        # the scheduler's HTTP server on a free port (8787 may be taken), no dashboard
        with LocalCluster(n_workers=int(n), threads_per_worker=1, processes=True, dashboard_address=":0",
                          scheduler_kwargs={"dashboard": False}) as cluster, Client(cluster) as client:
            yield client
        return
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT)
    except Exception:   # refused, timed out, or an address Dask cannot parse: all one message
        raise DaskSetupError(f"cannot connect to a Dask scheduler at {address} (waited up to "
                             f"{CONNECT_TIMEOUT:g} s; give a running scheduler's address, e.g. "
                             f"tcp://host:8786, or local:N)") from None
    with client:
        yield client


class RoundTable:
    """The progress of a Dask run on ``out`` (stderr): one row per round (``train``'s ``on_round``
    dicts), and under it, when ``out`` is a terminal, a bar with the ETA that the next row overwrites."""

    HEADER = (f"{'round':>7} {'examples':>12} {'avg loss':>10} {'non-zero':>10} {'wall s':>9} "
              f"{'sync s':>8}")

    def __init__(self, out=None):
        self.out = out if out is not None else sys.stderr
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self.started = time.perf_counter()
        self.rounds_time = 0.0      # the rounds' wall time so far (the ETA's base; not the cluster's start)
        self.nonzero = 0            # the last round's merged model's non-zero weights: the final model's

    def start(self, shards: int, workers: int, rounds: int, mix: str) -> None:
        self.out.write(f"Dask: {shards} shard{'s' * (shards != 1)} on {workers} worker"
                       f"{'s' * (workers != 1)}, {rounds} round{'s' * (rounds != 1)}, mix {mix}\n")
        self.out.write(self.HEADER + "\n")
        self._bar(0, rounds)
        self.out.flush()

    @staticmethod
    def format_row(r: dict) -> str:
        loss = "n.a." if r["loss"] is None else f"{r['loss']:.6f}"
        return (f"{r['round']:>7} {r['examples']:>12} {loss:>10} {r['nonzero']:>10} {r['wall']:>9.3f} "
                f"{r['sync']:>8.3f}")

    def __call__(self, r: dict) -> None:
        if self.tty:
            self.out.write("\r\033[K")
        self.out.write(self.format_row(r) + "\n")
        self.rounds_time += r["wall"]
        self.nonzero = r["nonzero"]
        self._bar(r["round"], r["rounds"])
        self.out.flush()

    def _bar(self, done: int, total: int) -> None:
        if not self.tty or done >= total:
            return
        width = 30
        fill = width * done // total
        eta = f"ETA {self.rounds_time / done * (total - done):.0f} s" if done else "ETA unknown"
        self.out.write(f"[{'#' * fill}{'.' * (width - fill)}] round {done + 1}/{total}, {eta}")

    def finish(self, path: str | None) -> None:
        wall = time.perf_counter() - self.started
        self.out.write(f"\nfinished run\nnon-zero weights = {self.nonzero}\nwall time = {wall:.3f} s\n")
        if path:
            self.out.write(f"final model = {path}\n")
        self.out.flush()


def run_cli(address: str, files, passes: int, mix: str, final_model: str | None, quiet: bool,
            options: dict) -> bytes:
    """``streamlearn train --dask ADDRESS -d FILES``: connect (or start ``local:N``), train, write
    ``final_model`` atomically, print the round table on stderr unless ``quiet``. Every error is a
    one-line ValueError (the CLI turns it into a usage error)."""
    from streamlearn.io.model_file import write_atomic

    options = {**options, "quiet": True}     # the workers print nothing; the table is the client's
    shards = check(files, passes, mix, options)     # before a cluster starts: bad input fails fast
    table = None if quiet else RoundTable()
    with connect(address) as client:
        if table is not None:
            table.start(len(shards), len(client.scheduler_info()["workers"]), passes, mix)
        model = train(client, shards, passes=passes, mix=mix, on_round=table, **options)
    if final_model:
        write_atomic(final_model, [model])
    if table is not None:
        table.finish(final_model)
    return model
