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

Dask is an optional extra (``pip install 'streamlearn[dask]'``); ``import streamlearn`` never imports
this module.
"""

from __future__ import annotations

import glob
import os
import tempfile

try:
    import distributed  # noqa: F401 (the Client and the workers come from the caller)
except ImportError:     # pragma: no cover - exercised only without the extra
    raise ImportError("streamlearn.dask needs Dask: pip install 'streamlearn[dask]'") from None

from streamlearn.mix import MIX_RULES

#: options this module sets itself
_OWN = ("passes", "sources", "initial_model", "final_model")
#: per-run outputs that have no meaning for a task on a shard (not supported on Dask yet)
_UNSUPPORTED = ("predictions", "readable_model", "invert_hash", "plot", "trace", "trace_data",
                "cache_file", "audit", "objective", "objective_data", "testonly")


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
    from streamlearn import driver
    from streamlearn.errors import StreamlearnError

    with tempfile.TemporaryDirectory(prefix="streamlearn-dask-") as tmp:
        explicit = {"quiet": True, **options, "sources": (path,), "passes": 1,
                    "final_model": os.path.join(tmp, "out.model")}
        if model is not None:
            explicit["initial_model"] = os.path.join(tmp, "in.model")
            with open(explicit["initial_model"], "wb") as f:
                f.write(model)
        try:
            cfg, restored = driver.prepare_train(explicit)
            driver.train(cfg, restored)
        except StreamlearnError as exc:
            msg = str(exc)
            raise ShardError(msg if path in msg else f"{path}: {msg}") from None
        with open(explicit["final_model"], "rb") as f:
            return f.read()


def _task(path: str, options: dict, model: bytes | None) -> tuple[bool, bytes | str]:
    """``train_shard`` as a Dask task: (True, model bytes) or (False, the one-line error), so that a
    user's error is neither logged by the worker as a failed computation nor sent with a traceback."""
    try:
        return True, train_shard(path, options, model)
    except ShardError as exc:
        return False, str(exc)


def _run_options(options: dict) -> dict:
    """The options a resumed round gives its tasks: those a model file does not keep."""
    from streamlearn.config import MODEL_OPTIONS
    return {k: v for k, v in options.items() if k not in MODEL_OPTIONS and k not in ("algo", "sgd")}


def train(client, files, passes: int = 1, mix: str = "weighted", **options) -> bytes:
    """Train on the shards ``files`` (paths or globs) across ``client``'s workers: ``passes`` rounds of
    one pass per shard, each round's k models merged with ``streamlearn.mix.merge(rule=mix)``
    (module docstring). ``options`` are ``streamlearn train``'s, by their Python names (``l1=1e-4``,
    ``algo="tg"``, ``bits=18``). Returns the final model file's bytes (``streamlearn predict -i``
    reads them; the header's "mix" key records the workers, rounds and rule)."""
    from streamlearn.api import make_config
    from streamlearn.io.model_file import model_bytes, parse_model
    from streamlearn.mix import merge

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
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        raise ValueError("the Dask cluster has no workers")
    where = assign([os.path.getsize(p) for p in shards], workers)

    model = None
    later = _run_options(options)
    for round_ in range(passes):
        opts = options if round_ == 0 else later
        start = None if model is None else client.scatter(model, hash=False)   # sent once, not per task
        futures = [client.submit(_task, path, opts, start, workers=[addr], allow_other_workers=True,
                                 pure=False)
                   for path, addr in zip(shards, where)]
        results = client.gather(futures)
        for ok, payload in results:     # the first error in shard order (deterministic)
            if not ok:
                raise ValueError(payload)
        results = [payload for _, payload in results]
        base = None if model is None else parse_model(model, "the round's model")
        merged = merge(base, [parse_model(b, p) for b, p in zip(results, shards)], rule=mix)
        model = model_bytes(*merged)
    return model
