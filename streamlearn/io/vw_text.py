"""The header of VW's readable models (``--readable_model``, ``--invert_hash``), as VW 9 writes it
(parse_regressor.cc's save_load_header and gd.cc's save_load_online_state, in text mode).

A readable model is::

    Version 9.11.2
    Id
    Min label:0
    Max label:0.73251
    bits:18
    lda:0
    0 ngram:
    0 skip:
    options: --ftrl --noconstant
    Checksum: 2919628460
    :1
    initial_t 0                      (the save_resume block: the run's counters, 17 lines,
    ...                               without --predict_only_model; ":0" and no block with it)
    l2_state 1
    [name:]slot:w [state...]         (the weight lines)

Numbers are printed as a C++ stream prints them (6 significant digits, ``%g``). The checksum is
VW's: MurmurHash3 (x86, 32 bits) chained over the text pieces VW writes after the Version line, each
piece hashed with the previous hash as its seed, from the ``Id`` line through the ``options:`` line.
Only text is produced here; the values come from the caller (``streamlearn.run.model_io``).
"""

from __future__ import annotations

import math

from streamlearn.features.hashing import murmur3

#: the VW version of the layout written (that of the reference files of VW's own test suite; VW
#: 9.11.9's Python build writes the same layout)
VW_VERSION = "9.11.2"


def cpp_g(value) -> str:
    """A number as a C++ ``ostream`` prints it by default (``%g``, 6 significant digits)."""
    if isinstance(value, (int,)) and not isinstance(value, bool):
        return str(value)
    v = float(value)
    if math.isnan(v):
        return "nan" if math.copysign(1.0, v) > 0 else "-nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v + 0.0:g}"     # + 0.0: -0.0 prints 0, not -0 (issue 29)


def header_pieces(min_label: float, max_label: float, bits: int, ngrams=(), skips=(),
                  options: str = "") -> list[str]:
    """The text pieces of the header from ``Id`` to ``options:``, as VW writes them one at a time
    (the checksum chains over these pieces). ``options`` is VW's options line without ``options:``
    (``" --ftrl --noconstant"``, each option with a leading space)."""
    pieces = ["Id \n", f"Min label:{cpp_g(min_label)}\n", f"Max label:{cpp_g(max_label)}\n",
              f"bits:{bits}\n", "lda:0\n", f"{len(ngrams)} ngram:"]
    pieces += [f"{g} " for g in ngrams]
    pieces += ["\n", f"{len(skips)} skip:"]
    pieces += [f"{s} " for s in skips]
    pieces += ["\n", f"options:{options}\n"]
    return pieces


def checksum(pieces) -> int:
    """VW's header checksum: MurmurHash3 chained over the pieces (each seeded with the hash so far)."""
    h = 0
    for piece in pieces:
        data = piece.encode("utf-8")
        if data:
            h = murmur3(data, h)
    return h


def header_lines(pieces) -> list[str]:
    """The header's lines: Version, the pieces (as lines) and the Checksum line."""
    text = f"Version {VW_VERSION}\n" + "".join(pieces) + f"Checksum: {checksum(pieces)}\n"
    return text.splitlines()


#: the save_resume block's names, in VW's order (gd.cc save_load_online_state)
RESUME_NAMES = ("initial_t", "norm normalizer", "t", "sum_loss", "sum_loss_since_last_dump", "dump_interval",
                "min_label", "max_label", "weighted_labeled_examples", "weighted_labels",
                "weighted_unlabeled_examples", "example_number", "total_features", "total_weight",
                "sd::oec.weighted_labeled_examples", "current_pass", "l1_state", "l2_state")


def resume_lines(values: dict) -> list[str]:
    """``:1`` and the save_resume block of ``values`` (name -> number, every name of
    ``RESUME_NAMES``); ``example_number``, ``total_features`` and ``current_pass`` are integers."""
    out = [":1"]
    for name in RESUME_NAMES:
        v = values[name]
        if name in ("example_number", "total_features", "current_pass"):
            v = int(v)
        out.append(f"{name} {cpp_g(v)}")
    return out


def vw_float_option(value: float) -> str:
    """A real option's value as VW's options line holds it: the float32 value with 15 significant
    digits (``-l 0.3`` is ``--learning_rate 0.300000011920929``)."""
    import numpy as np
    return f"{float(np.float32(value)) + 0.0:.15g}"
