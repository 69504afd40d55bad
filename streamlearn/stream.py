"""Streams of parsed blocks: the hashing options, text sources -> parsed blocks (``text_blocks``), and
the one-block-ahead pipeline (``pipelined``).

Parsing runs one block ahead on a worker thread while the main thread runs the learner on the current
block; both kernels release the GIL (``nogil=True``), so on two cores parsing and learning overlap.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from streamlearn.hashing import HASH_MODES
from streamlearn.io.blocks import FMT_VW, FORMATS, Outputs, detect_format, example_texts, parse_block
from streamlearn.io.cache import CacheWriter
from streamlearn.io.expand import ExpandedOutputs, make_expander
from streamlearn.io.reader import RING, Source, read_blocks


@dataclass(frozen=True)
class Hashing:
    """How text becomes features: VW's hashing options and the feature expansion (a
    ``streamlearn.expansion.FeatureSpec``; None or an identity spec: the parsed features as they are)."""

    bits: int
    noconstant: bool
    hash: str
    hash_seed: int
    features: object = None

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    @property
    def expands(self) -> bool:
        return self.features is not None and not self.features.is_identity

    def as_dict(self) -> dict:
        d = {"bits": self.bits, "noconstant": self.noconstant, "hash": self.hash,
             "hash_seed": self.hash_seed}
        if self.expands:
            d["features"] = self.features.to_dict()
        return d


def hashing_of(cfg) -> Hashing:
    """The Hashing of a run's configuration."""
    return Hashing(cfg.bits, cfg.noconstant, cfg.hash, cfg.hash_seed,
                   cfg.feature_spec() if cfg.expands else None)


def text_blocks(sources, fmt: str, hashing: Hashing, block_size: int, cache: CacheWriter | None = None,
                on_error=None, with_text: bool = False):
    """Parsed blocks of the text sources, in order (format detected per source with 'auto'). With
    ``with_text`` every block also carries its examples' lines (``text_lines``, for feature names).

    Blocks are parsed into a ring of reusable output arrays (see streamlearn.io.reader for the
    lifetime rule: the consumer is done with a block before it asks for the next one)."""
    mode = HASH_MODES[hashing.hash]
    outputs = [Outputs() for _ in range(RING)]
    k = 0
    expander = redefine = None
    if hashing.expands:
        expander = make_expander(hashing.features, hashing.mask)
        redefine = np.array(hashing.features.redefine_map, np.uint8)
        expanded = [ExpandedOutputs() for _ in range(RING)]

    def parse(name, data, ends, first_line, code):
        nonlocal k
        block = parse_block(name, data, first_line, code, hashing.mask, hashing.noconstant,
                            hashing.hash_seed, mode, ends=ends, out=outputs[k % RING], redefine=redefine)
        if expander is not None:
            block = expander.expand(block, expanded[k % RING])
        if with_text:
            buf = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray)) else data
            texts = example_texts(buf, ends, first_line, block.lines)
            block.text_lines = texts if code == FMT_VW else [libsvm_as_vw(t) for t in texts]
        k += 1
        if cache is not None:
            cache.write(block)
        return block

    for path in sources:
        source = Source(path)
        code = None if fmt == "auto" else FORMATS[fmt]
        pending = []   # blocks read before a line decided the format (blank or comment lines)
        for data, ends, first_line in read_blocks(source, block_size, RING, on_error):
            if code is None:
                code = detect_format(data)
                if code is None:
                    pending.append((data.copy(), ends.copy(), first_line))
                    continue
                for item in pending:
                    yield parse(source.name, *item, code)
                pending = []
            yield parse(source.name, data, ends, first_line, code)
        for item in pending:
            yield parse(source.name, *item, FMT_VW)


def libsvm_as_vw(line: bytes) -> bytes:
    """A LIBSVM line as the VW line with the same features: ``label | index:value ...`` (the
    comment and qid tokens dropped), for the names of --audit / --invert_hash."""
    tokens = line.split(b"#", 1)[0].split()
    if not tokens:
        return b""
    return tokens[0] + b" | " + b" ".join(t for t in tokens[1:] if not t.startswith(b"qid:"))


def pipelined(blocks):
    """Iterate ``blocks`` with the next item produced on a worker thread while the caller works."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="streamlearn-parse")
    fut = pool.submit(next, blocks, None)
    try:
        while True:
            item = fut.result()
            if item is None:
                return
            fut = pool.submit(next, blocks, None)
            yield item
    finally:
        try:
            fut.result()
        except BaseException:
            pass
        blocks.close()
        pool.shutdown(wait=True)
