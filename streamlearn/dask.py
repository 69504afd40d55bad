"""Training on Dask: iterative parameter mixing over sharded inputs (issue 16; the design is
``../shared/docs/scale-out.md``, "Design" items 1 to 6).

**Shards.** Every file (or glob match) is a shard; with ``split=N`` (``--split N``) every plain,
uncompressed file is cut into N line-aligned byte ranges (``split_ranges``), each a shard whose lines
keep their numbers in the file. Compressed files are never cut.

**Periods and syncs.** ``train(client, files, passes, mix, sync_every=None, **options)`` runs
``passes`` passes over every shard. A pass is one period per shard, or, with ``sync_every=N``
(``--sync-every N``), periods of N examples of each shard (a shard whose examples are used up sits the
remaining periods of the pass out). Each period is a stateless task
``train_shard(shard, options, model_bytes, window) -> model_bytes`` that continues the period's model
on its part of the shard through the CLI's own ``-i`` resume path (``driver.prepare_train`` and
``driver.train`` with ``-i``/``-f`` files in the worker's temporary directory: what ``streamlearn train
-i period.model -d shard -f out.model`` does, restricted to the shard's byte range and example window
by ``TrainConfig.shard_range``/``shard_window``). The saved model has every lazy weight caught up.
The client gathers the shards' models in shard order and merges them with ``streamlearn.mix.merge``
(iterative parameter mixing: McDonald, Hall & Mann, NAACL 2010, as scale-out.md cites it; VW's
``accumulate_weighted_avg`` at every pass end); the merged model starts the next period, and the last
one is returned as model-file bytes.

**Reading on, parse caches.** With one pass and ``sync_every``, each period of a plain file reads on
from the byte after the previous period's last example (the task returns that offset and its line
number, ``line_end``), so the text is read once and nothing is cached. A shard read more than once
(``passes`` > 1), or a compressed one synced within its pass (it cannot be resumed mid-file), keeps a
parse cache (the single-machine ``--cache-file`` format) in the worker's local directory: its first
period parses the whole shard into it (learning its window's examples on the way, only parsing the
rest) and later periods read their window from it, skipping the blocks before the window unread. A
task that Dask moves to another worker parses the text there. The caches are removed at the end of
the run. A shard that has no example left in a period takes no part in that period's merge.

**Placement and faults.** Shards are balanced by bytes over the workers (sorted addresses), largest
first to the least loaded worker, and each task is submitted to its worker with
``allow_other_workers=True`` (sticky, but a dead worker's task runs elsewhere). The merge depends on
the shard order only, never on which worker ran a task or when it finished, so a rerun, or a run that
lost a worker, gives the same bytes.

**Options.** The first period's tasks get every option (and ``initial_model``'s model, as ``train
-i``); later ones resume from the merged model and get only the options a model file does not keep
(``--quiet``, ``--strict``, the reader's). ``UNSUPPORTED`` lists what a Dask run refuses. A streamlearn
error in a task (a bad option, an unreadable file, a malformed line under ``--strict``) is raised at
the client as a one-line ``ValueError`` naming the shard.

``streamlearn train --dask ADDRESS|local:N`` is ``run_cli``: ``connect`` starts or reaches the
cluster, ``train`` reports each sync to ``RoundTable`` (the progress table on stderr, from the counts
the tasks return) and the merged model is written atomically.

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
import uuid
from dataclasses import dataclass

import numpy as np

try:
    import distributed  # noqa: F401 (the Client and the workers come from the caller)
except ImportError:     # pragma: no cover - exercised only without the extra
    raise ImportError("streamlearn.dask needs Dask: pip install 'streamlearn[dask]'") from None

from streamlearn.io.reader import COMPRESSED
from streamlearn.mix import MIX_RULES

#: options this module sets itself
_OWN = ("passes", "sources", "initial_model", "final_model", "shard_range", "shard_window", "cache_file")
#: train's options a Dask run refuses (not supported on Dask yet), by name, as ``streamlearn train``
#: spells them: per-run outputs that have no meaning for a task on a shard; the workers' own parse
#: caches; --shuffle (each task reads its shard once, in order); a weights-only model, which would
#: drop every round's adaptive state
def _unsupported() -> dict:
    """What a Dask run refuses (``Option.dask`` False), spelled as the messages spell it."""
    from streamlearn.config import OPTIONS
    return {o.name: o.spelling for o in OPTIONS if not o.dask}


UNSUPPORTED = _unsupported()


class ShardError(ValueError):
    """A streamlearn error in a shard's training (one line, naming the shard)."""


@dataclass(frozen=True)
class Shard:
    """A file, or the line-aligned byte range ``start`` .. ``end - 1`` of a plain file (``end`` None:
    the whole file); ``line``: the number of the line at ``start``, when known."""

    path: str
    start: int = 0
    end: int | None = None
    line: int | None = None

    def rest(self, start: int, line: int) -> "Shard":
        """The shard from byte ``start`` on, where line number ``line`` begins."""
        return Shard(self.path, start, os.path.getsize(self.path) if self.end is None else self.end, line)

    @property
    def ranged(self) -> bool:
        return self.end is not None

    @property
    def size(self) -> int:
        return (self.end - self.start) if self.ranged else os.path.getsize(self.path)

    def __str__(self) -> str:
        return f"{self.path} bytes {self.start}-{self.end}" if self.ranged else self.path


def split_ranges(path: str, pieces: int) -> list[tuple[int, int]]:
    """``path`` cut into at most ``pieces`` line-aligned byte ranges of about equal size: each cut moves
    on to just after the next newline (a range that would be empty, inside one long line, is
    dropped)."""
    size = os.path.getsize(path)
    cuts = [0]
    for i in range(1, pieces):
        at = line_end(path, max(size * i // pieces, cuts[-1]), 1, 1)   # just after the next newline
        if cuts[-1] < at < size:
            cuts.append(at)
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a] or [(0, size)]


def expand_files(files, split: int = 1) -> list[Shard]:
    """The shards of ``files`` (paths or globs; a single string is one entry): each glob's matches
    sorted, entries in the order given; with ``split`` > 1 every plain (uncompressed) file is cut into
    ``split`` line-aligned byte ranges (``split_ranges``), compressed files stay whole. A glob that
    matches nothing is a one-line ValueError."""
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
    shards = []
    for path in out:
        if split > 1 and not path.lower().endswith(COMPRESSED):
            shards.extend(Shard(path, a, b) for a, b in split_ranges(path, split))
        else:
            shards.append(Shard(path))
    return shards


def line_end(path: str, start: int, line: int, last: int) -> int:
    """The byte offset just after line ``last`` of ``path``, scanning from byte ``start``, where line
    number ``line`` begins (the end of the file if it has fewer lines)."""
    need = last - line + 1      # newlines to pass
    pos = start
    with open(path, "rb") as f:
        f.seek(start)
        while need > 0:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            count = chunk.count(b"\n")
            if count < need:
                need -= count
                pos += len(chunk)
                continue
            at = -1
            for _ in range(need):
                at = chunk.index(b"\n", at + 1)
            return pos + at + 1
    return pos


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


def train_shard(shard, options: dict, model: bytes | None, window: tuple | None = None,
                cache: str | None = None) -> bytes:
    """One pass of streamlearn's training over the shard (a path or a ``Shard``), continuing ``model``
    (model-file bytes, or None to start fresh) through the ``-i`` resume path; the bytes of the model it
    saves (``-f``). ``window`` (start, stop): only those examples of the shard (a ``--sync-every``
    period). ``cache``: a parse cache file for the shard (``--cache-file``), kept for later passes.
    A streamlearn error is a one-line ShardError (a ValueError) that names the shard."""
    return _train_shard(shard, options, model, window, cache)[0]


def _train_shard(shard, options: dict, model: bytes | None, window: tuple | None = None,
                 cache: str | None = None) -> tuple[bytes, dict]:
    """``train_shard``'s model bytes and the shard's counts for the progress table: examples, and the
    summed progressive loss and labeled weight (absent for batch learners, which keep no counters);
    ``total``, the shard's examples (read from the cache when there is one), or, for a window read from
    a byte offset without a cache, ``next``: the byte offset and line number where the next period
    begins (just after the window's last example)."""
    from streamlearn.run import driver
    from streamlearn.errors import StreamlearnError
    from streamlearn.io.cache import cache_examples
    from streamlearn.io.reader import Source, first_line
    from streamlearn.run.views import CounterView

    if not isinstance(shard, Shard):
        shard = Shard(os.fspath(shard))
    if window is not None and cache is None and shard.ranged and shard.line is None:
        shard = Shard(shard.path, shard.start, shard.end, first_line(Source(shard.path, shard.start)))
    with tempfile.TemporaryDirectory(prefix="streamlearn-dask-") as tmp:
        explicit = {"quiet": True, **options, "sources": (shard.path,), "passes": 1,
                    "final_model": os.path.join(tmp, "out.model")}
        if shard.ranged:
            explicit["shard_range"] = (shard.start, shard.end) + (() if shard.line is None else (shard.line,))
        if window is not None:
            explicit["shard_window"] = tuple(window)
        if cache is not None:
            explicit["cache_file"] = cache
        if model is not None:
            explicit["initial_model"] = os.path.join(tmp, "in.model")
            with open(explicit["initial_model"], "wb") as f:
                f.write(model)
        try:
            cfg, restored = driver.prepare_train(explicit)
            result = driver.train(cfg, restored)
        except StreamlearnError as exc:
            msg = str(exc)
            raise ShardError(msg if shard.path in msg else f"{shard}: {msg}") from None
        ctr = result.get("counters")
        counters = None if ctr is None else CounterView(ctr)
        stats = {} if ctr is None else {"examples": int(counters.examples), "loss": float(counters.sum_loss),
                                        "weight": float(counters.w_labeled)}
        if cache is not None and os.path.exists(cache):
            stats["total"] = cache_examples(cache)
        elif ctr is not None and window is None:
            stats["total"] = int(counters.examples)
        elif shard.line is not None and result.get("last_line"):    # a streamed period: where the next begins
            stats["next"] = (line_end(shard.path, shard.start, shard.line, result["last_line"]),
                             result["last_line"] + 1)
        with open(explicit["final_model"], "rb") as f:
            return f.read(), stats


#: a test hook (``tests/api/test_dask.py``): a path set in the worker processes by ``_arm_fault``; the
#: first task to create the file kills its worker process after it has trained its part of the shard,
#: before it returns (a worker lost mid-round: Dask runs the task again, elsewhere)
_FAULT = None


def _arm_fault(marker: str | None) -> None:
    global _FAULT
    _FAULT = marker


def _run_folder(run: str) -> str:
    """The folder of run ``run``'s parse caches in this worker's local directory (Dask's, removed with
    the worker; the system's temporary directory outside a worker)."""
    try:
        from distributed import get_worker
        base = get_worker().local_directory
    except ValueError:      # not in a worker
        base = tempfile.gettempdir()
    return os.path.join(base, f"streamlearn-{run}")


def _cache_path(run: str, index: int) -> str:
    """The parse cache of shard ``index`` of run ``run`` on this worker."""
    folder = _run_folder(run)
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"shard{index}.cache")


def _drop_caches(run: str) -> None:
    """Remove this worker's parse caches of run ``run`` (``client.run`` at the end of ``train``)."""
    import shutil
    shutil.rmtree(_run_folder(run), ignore_errors=True)


def _task(shard: Shard, options: dict, model: bytes | None, window: tuple | None = None,
          cache: tuple | None = None) -> tuple[bool, bytes | str, dict]:
    """``_train_shard`` as a Dask task: (True, model bytes, counts) or (False, the one-line error, {}),
    so that a user's error is neither logged by the worker as a failed computation nor sent with a
    traceback. ``cache``: (run id, shard index) of the worker-local parse cache, or None."""
    try:
        out = (True, *_train_shard(shard, options, model, window,
                                   None if cache is None else _cache_path(*cache)))
    except ShardError as exc:
        return False, str(exc), {}
    if _FAULT is not None:
        try:
            fd = os.open(_FAULT, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass
        else:
            os.close(fd)
            os._exit(1)
    return out


def _run_options(options: dict) -> dict:
    """The options a resumed round gives its tasks: those a model file does not keep."""
    from streamlearn.config import STORED_OPTIONS
    return {k: v for k, v in options.items() if k not in STORED_OPTIONS and k not in ("algo", "sgd")}


def _positive(name: str, value, cli: bool) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"--{name.replace('_', '-')} must be at least 1 (got {value})" if cli
                         else f"{name} must be a positive integer, not {value!r}")


def check(files, passes: int, mix: str, options: dict, split: int = 1, sync_every: int | None = None,
          initial_model: str | None = None, cli: bool = False) -> list[Shard]:
    """The shards of ``files`` once ``passes``, ``mix``, ``split``, ``sync_every``, ``initial_model``
    and ``options`` are checked (``train``'s arguments); a one-line ValueError otherwise, naming the
    options as ``streamlearn train --dask`` spells them with ``cli``."""
    from streamlearn import learners
    from streamlearn.api import make_config
    from streamlearn.errors import StreamlearnError
    from streamlearn.run.model_io import model_options
    from streamlearn.io.model_file import load_model

    if mix not in MIX_RULES:
        raise ValueError(f"unknown mix rule {mix!r}: choose weighted or uniform")
    for name in options:
        if name in UNSUPPORTED and options[name] not in (None, False):
            raise ValueError(f"{UNSUPPORTED[name]} is not supported with --dask yet" if cli
                             else f"option {name} is not supported on Dask yet")
        if name in _OWN:
            raise ValueError(f"option {name} is set by streamlearn.dask.train itself")
    _positive("passes", passes, cli)
    _positive("split", split, cli)
    if sync_every is not None:
        _positive("sync_every", sync_every, cli)
    shards = expand_files(files, split)
    model_opts = None
    if initial_model is not None:
        try:
            model_opts = model_options(load_model(initial_model)[0], initial_model)
        except StreamlearnError as exc:
            raise ValueError(str(exc)) from None
    cfg = make_config({**options, "sources": tuple(s.path for s in shards)}, model_opts)  # a bad option: one line
    if sync_every is not None and learners.get(cfg.algo).batch:
        raise ValueError(f"--algo {cfg.algo} is a batch method: it cannot sync every N examples")
    return shards


def _periods(passes: int, sync_every: int | None, lengths: list):
    """(pass, window, active shards) of each period, in order: one per pass, or windows of
    ``sync_every`` examples while some shard has examples left. ``lengths`` (each shard's examples, None
    until a task has read the shard) is read afresh at every period: the caller fills it in."""
    for pass_ in range(1, passes + 1):
        at = 0      # the period's first example, in every shard
        while True:
            active = [i for i, n in enumerate(lengths) if n is None or n > at]
            if not active:
                break
            yield pass_, None if sync_every is None else (at, at + sync_every), active
            if sync_every is None:
                break
            at += sync_every


def _planned(passes: int, sync_every: int | None, lengths: list, shards: list, resume: list, syncs: int) -> int:
    """The run's syncs as far as they can be told after ``syncs`` of them (the progress bar's total): one
    per pass; with ``sync_every``, the longest shard's periods, known from its examples (a parse cache
    or a finished shard), or estimated from the bytes a streamed shard read so far."""
    if sync_every is None:
        return passes
    periods = 0
    for n, whole, now in zip(lengths, shards, resume):
        if n is not None:
            periods = max(periods, -(-n // sync_every))
        elif now.start > whole.start:       # streamed: bytes per period so far
            size = now.end - whole.start
            periods = max(periods, -(-size * syncs // (now.start - whole.start)))
    return max(periods * passes, syncs)


def train(client, files, passes: int = 1, mix: str = "weighted", on_round=None, *, split: int = 1,
          sync_every: int | None = None, initial_model: str | None = None, **options) -> bytes:
    """Train on the shards ``files`` (paths or globs) across ``client``'s workers: ``passes`` passes over
    every shard, the shards' models merged with ``streamlearn.mix.merge(rule=mix)`` at the end of every
    pass, or every ``sync_every`` examples of each shard (module docstring). ``split`` > 1 cuts every
    plain file into that many line-aligned byte ranges, each a shard. ``initial_model``: a model file
    to continue (``-i``). ``options`` are ``streamlearn train``'s, by their Python names
    (``l1=1e-4``, ``algo="tg"``, ``bits=18``). Returns the final model file's bytes (``streamlearn
    predict -i`` reads them; the header's "mix" key records the workers, syncs and rule).

    ``on_round``, if given, is called after every sync with a dict: ``round`` (1-based sync number),
    ``rounds`` (the syncs of the run, known after the first), ``pass``, ``shards`` (that trained in this
    period), ``workers``, ``examples`` (summed over the shards), ``loss`` (the period's average
    progressive loss over its shards, None for batch learners or no labels), ``nonzero`` (non-zero
    weights of the merged model), ``wall`` (the period's seconds), ``sync`` (the merge's seconds) and
    the sync's messages: ``sent`` (the bytes of each shard's model, in shard order: only touched rows,
    the model file's sparse layout) and ``start`` (the bytes of the period's starting model, 0 at
    first)."""
    shards = check(files, passes, mix, options, split, sync_every, initial_model)
    return _mix(client, shards, passes, mix, on_round, sync_every, initial_model, options)


def _mix(client, shards: list[Shard], passes: int, mix: str, on_round, sync_every: int | None,
         initial_model: str | None, options: dict) -> bytes:
    """``train`` once its arguments are checked (``check``)."""
    from streamlearn.io.model_file import model_bytes, parse_model
    from streamlearn.mix import merge

    try:        # a cluster just started may not have registered its workers yet
        client.wait_for_workers(1, timeout=WORKERS_TIMEOUT)
    except TimeoutError:
        raise ValueError(f"the Dask cluster has no workers (waited {WORKERS_TIMEOUT:g} s)") from None
    workers = sorted(client.ncores())     # every worker's address (scheduler_info may list only some)
    where = assign([s.size for s in shards], workers)
    model = None
    if initial_model is not None:
        with open(initial_model, "rb") as f:
            model = f.read()
    later = _run_options(options)
    run_id = uuid.uuid4().hex
    # one pass with syncs: each period of a plain file reads on from where the last one stopped; a shard
    # read more than once (or a compressed one, which cannot be resumed mid-file) keeps a parse cache
    streamed = [sync_every is not None and passes == 1 and not s.path.lower().endswith(COMPRESSED)
                for s in shards]
    cached = [not st and (passes > 1 or sync_every is not None) for st in streamed]
    resume = [s.rest(s.start, s.line if s.ranged else 1) if st else s for s, st in zip(shards, streamed)]
    lengths = [None] * len(shards)     # each shard's examples, once known
    syncs = 0
    try:
        for pass_, window, active in _periods(passes, sync_every, lengths):
            started = time.perf_counter()
            start = None if model is None else client.scatter(model, hash=False)   # sent once, not per task
            futures = [client.submit(_task, resume[i], options if syncs == 0 else later, start,
                                     (0, sync_every) if streamed[i] else window,
                                     (run_id, i) if cached[i] else None, workers=[where[i]],
                                     allow_other_workers=True, pure=False)
                       for i in active]
            results = client.gather(futures)
            for ok, payload, _ in results:     # the first error in shard order (deterministic)
                if not ok:
                    raise ValueError(payload)
            synced = time.perf_counter()
            stats = [counts for _, _, counts in results]
            for i, counts in zip(active, stats):
                if not streamed[i]:
                    lengths[i] = counts.get("total", lengths[i])
                    continue
                at = window[0]
                read, after = counts.get("examples", 0), counts.get("next")
                if read < sync_every or after is None or after[0] >= resume[i].end:
                    lengths[i] = at + read      # the shard ends in this period
                else:
                    resume[i] = resume[i].rest(*after)
            # a shard that had no example left in the period takes no part in the merge
            used = [j for j, c in enumerate(stats) if c.get("examples", 1) > 0] or list(range(len(stats)))
            base = None if model is None else parse_model(model, "the round's model")
            merged = merge(base, [parse_model(results[j][1], str(shards[active[j]])) for j in used], rule=mix)
            start_bytes = 0 if base is None else len(model)
            model = model_bytes(*merged)
            syncs += 1
            if on_round is not None:
                done = time.perf_counter()
                weight = sum(c.get("weight", 0.0) for c in stats)
                on_round({"round": syncs, "rounds": _planned(passes, sync_every, lengths, shards, resume, syncs),
                          "pass": pass_, "shards": len(active), "workers": len(workers),
                          "examples": sum(c.get("examples", 0) for c in stats),
                          "loss": (sum(c["loss"] for c in stats) / weight
                                   if weight > 0 and all("loss" in c for c in stats) else None),
                          "nonzero": int(np.count_nonzero(merged[2][:, 0])) if len(merged[2]) else 0,
                          "wall": done - started, "sync": done - synced,
                          "sent": [len(b) for _, b, _ in results], "start": start_bytes})
    finally:
        if any(cached):
            with contextlib.suppress(Exception):
                client.run(_drop_caches, run_id)
    return model


#: seconds a ``--dask ADDRESS`` run waits for the scheduler
CONNECT_TIMEOUT = 5.0
#: seconds ``train`` waits for a first worker to register with the scheduler
WORKERS_TIMEOUT = 30.0


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
            client.wait_for_workers(int(n))
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

    def start(self, shards: int, workers: int, passes: int, mix: str, sync_every: int | None = None) -> None:
        when = "" if sync_every is None else f", a sync every {sync_every} examples per shard"
        self.out.write(f"Dask: {shards} shard{'s' * (shards != 1)} on {workers} worker"
                       f"{'s' * (workers != 1)}, {passes} pass{'es' * (passes != 1)}{when}, mix {mix}\n")
        self.out.write(self.HEADER + "\n")
        if sync_every is None:      # the syncs are known once the first period has read the shards
            self._bar(0, passes)
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
            options: dict, split: int = 1, sync_every: int | None = None,
            initial_model: str | None = None) -> bytes:
    """``streamlearn train --dask ADDRESS -d FILES``: connect (or start ``local:N``), train, write
    ``final_model`` atomically, print the round table on stderr unless ``quiet``. Every error is a
    one-line ValueError (the CLI turns it into a usage error)."""
    from streamlearn.io.model_file import write_atomic

    options = {**options, "quiet": True}     # the workers print nothing; the table is the client's
    # before a cluster starts: bad input fails fast
    shards = check(files, passes, mix, options, split, sync_every, initial_model, cli=True)
    table = None if quiet else RoundTable()
    with connect(address) as client:
        if table is not None:
            table.start(len(shards), len(client.ncores()), passes, mix, sync_every)
        model = _mix(client, shards, passes, mix, table, sync_every, initial_model, options)
    if final_model:
        write_atomic(final_model, [model])
    if table is not None:
        table.finish(final_model)
    return model
