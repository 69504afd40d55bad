"""``--audit_regressor FILE`` (VW's audit_regressor reduction): the weights of a model given with -i,
named by the examples that use them, learning nothing.

Every example is expanded with names (``streamlearn.features.audit.FeatureNames``: its linear
features, the constant, then its interactions, VW's order) and each feature whose weight is not 0 and
not yet written gives the line ``name:slot:weight`` (with --oaa K, ``k:name:slot:weight`` for class k
from 0, each class's features in turn); a weight is written once, for the first example that uses it.
The run stops when every non-zero weight of the model is written. stderr has VW's table (example,
values audited, progress) at examples 1, 2, 4, ... and, when some weights were never met, VW's note.
"""

from __future__ import annotations

import numpy as np

from streamlearn.errors import OptionError, StreamlearnError
from streamlearn.features.audit import FeatureNames
from streamlearn.io.atomic import write_atomic
from streamlearn.run.report import Reporter
from streamlearn.run.stream import hashing_of, pipelined, text_blocks


def check(cfg) -> None:
    """VW's refusals: several passes, a cache file, a model without non-zero weights (here: no -i)."""
    if cfg.passes > 1:
        raise OptionError("--audit_regressor cannot be used with --passes > 1")
    if cfg.cache_file is not None and not cfg.kill_cache:
        raise OptionError("--audit_regressor cannot be used with a cache file (single pass mode only)")
    if cfg.initial_model is None:
        raise OptionError("--audit_regressor needs a model to audit (-i MODEL): a new one has no non-zero weights")


def _row(example: int, audited: int, progress: int) -> str:
    return f"{example:<8} {audited:>9} {progress:>11}%"


def run(cfg, model) -> dict:
    check(cfg)
    _header, index, rows = model
    weights = np.asarray(rows[:, 0], np.float64)
    live = {int(s): float(w) for s, w in zip(np.asarray(index).tolist(), weights.tolist()) if w != 0}
    total = len(live)
    if total == 0:
        raise StreamlearnError("regressor has no non-zero weights. Nothing to audit.")
    rep = Reporter(cfg.quiet)
    rep.line(f"Regressor contains {total} values")
    rep.line(f"{'example':<8} {'values':>9} {'total':>12}")
    rep.line(f"{'counter':<8} {'audited':>9} {'progress':>12}")
    hashing = hashing_of(cfg)
    classes = cfg.classes
    names = FeatureNames(hashing.features, cfg.bits, cfg.noconstant, cfg.hash_seed, cfg.hash, 0)
    names.collecting = False
    mask = (1 << cfg.bits) - 1
    width = cfg.class_width if classes else 1
    lines, audited, example, dump = [], 0, 0, 1.0
    done = False
    for block in pipelined(text_blocks(cfg.sources, cfg.format, hashing, cfg.block_size, with_text=True)):
        for entries in names.entries(block):
            example += 1
            for k in range(max(classes, 1)):
                prefix = f"{k}:" if classes > 1 else ""
                for entry in entries:
                    slot = ((entry.index * width) & mask) + k if classes else entry.index
                    w = live.pop(slot, None)
                    if w is None:
                        continue
                    audited += 1
                    lines.append(f"{prefix}{entry.name}:{slot}:{np.float32(w):g}\n")
            printed = False
            if example >= dump:
                rep.line(_row(example, audited, audited * 100 // total))
                dump *= 2
                printed = True
            if audited == total:
                if not printed:
                    rep.line(_row(example, audited, 100))
                done = True
                break
        if done:
            break
    write_atomic(cfg.audit_regressor, ["".join(lines).encode("utf-8", "surrogateescape")], "audit_regressor output")
    if audited < total:
        rep.line(f"Note: for some reason audit couldn't find all regressor values in dataset ({audited} of "
                 f"{total} found).")
    return {"audited": audited, "total": total, "examples": example}
