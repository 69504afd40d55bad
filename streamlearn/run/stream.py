"""Streams of parsed blocks: the hashing options, text sources -> parsed blocks (``text_blocks``), and
the one-block-ahead pipeline (``pipelined``).

Parsing runs one block ahead on a worker thread while the main thread runs the learner on the current
block; both kernels release the GIL (``nogil=True``), so on two cores parsing and learning overlap.

With ``--threads N`` > 1 that worker becomes a dispatcher: it reads blocks in order, submits each
block's parse to a pool of N threads, keeps at most N blocks in flight (a window, oldest first) and
hands them over in input order, waiting for the oldest when the window is full. Blocks are
independent, so the parsed arrays are the one thread's; whatever depends on the order -- read errors
(carried with the block read when they happened), feature expansion (its namespace set grows), the
lines' text, the cache writer -- runs on the dispatcher, in order, after the parse, so predictions,
models, caches and messages are those of one thread. The reader's and the parser's rings of reusable
buffers hold N + 2 blocks (``streamlearn.io.reader.ring_size``): at most N + 1 are alive at once --
the learner's block k, the N - 1 after it in the window, and block k + N being read -- and one is
spare. The default N is the cores less one
(``streamlearn.config.default_threads``): the learner keeps a core, so on two cores N = 1, the one
parse thread that already overlaps the learner.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from streamlearn.features.hashing import HASH_MODES
from streamlearn.features.lowrank import lowrank_of
from streamlearn.io.blocks import (
    FMT_VW, FORMATS, IDENTITY_REDEFINE, Outputs, detect_format, example_texts, parse_block,
)
from streamlearn.io.cache import CacheWriter
from streamlearn.io.expand import ExpandedOutputs, make_expander
from streamlearn.io.interact import interact
from streamlearn.errors import InputError
from streamlearn.io.reader import Source, read_blocks, ring_size
from streamlearn.options import TEXT_FORMATS   # the converters (io/textformats.py) are imported when a run uses them


@dataclass(frozen=True)
class Hashing:
    """How text becomes features: VW's hashing options and the feature expansion (a
    ``streamlearn.features.expansion.FeatureSpec``; None or an identity spec: the parsed features as they are)."""

    bits: int
    noconstant: bool
    hash: str
    hash_seed: int
    features: object = None
    #: how a CSV or JSON source becomes VW text (``streamlearn.io.textformats.TextFormat``; None: VW text
    #: or LIBSVM)
    text: object = None
    #: VW's --affix (streamlearn.io.textformats.parse_affix), None: none
    affix: str | None = None
    #: VW's --dictionary [ns:]file arguments and --dictionary_path folders
    dictionaries: tuple = ()
    dictionary_path: tuple = ()
    #: parse threads (how the text is read, not what it becomes: not compared, not in as_dict)
    threads: int = field(default=1, compare=False)
    #: VW's --interact: the two namespace indices (bytes), or None
    interact: bytes | None = None
    #: the labels are cost-sensitive (--csoaa: ``streamlearn.io.costs``)
    costs: bool = False
    #: the classes' names (--named_labels), class 1 first: labels are names
    names: tuple = ()
    #: the labels are sets of classes (--multilabel_oaa)
    multilabels: bool = False
    #: multi-line examples of label-dependent features (--csoaa_ldf, --wap_ldf: ``streamlearn.io.ldf``); costs too
    ldf: bool = False
    #: --lrq/--lrqfa (``streamlearn.features.lowrank.LowRank``): the blocks carry the features of its
    #: namespaces by group; None: none
    lowrank: object = field(default=None, compare=False)
    #: --max-example-features (None: the memory-based default; ``streamlearn.io.expand``)
    max_features: int | None = field(default=None, compare=False)

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    @property
    def expands(self) -> bool:
        return (self.features is not None and not self.features.is_identity) or self.lowrank is not None

    def as_dict(self) -> dict:
        d = {"bits": self.bits, "noconstant": self.noconstant, "hash": self.hash,
             "hash_seed": self.hash_seed}
        if self.features is not None and not self.features.is_identity:
            d["features"] = self.features.to_dict()
        if self.interact is not None:
            d["interact"] = list(self.interact)
        if self.text is not None:
            d["text"] = self.text.as_dict()
        if self.affix:
            d["affix"] = self.affix
        if self.dictionaries:
            d["dictionaries"] = list(self.dictionaries)
            d["dictionary_path"] = list(self.dictionary_path)
        if self.costs:
            d["costs"] = True
        if self.names:
            d["names"] = list(self.names)
        if self.multilabels:
            d["multilabels"] = True
        if self.ldf:
            d["ldf"] = True
        if self.lowrank is not None:
            d["lowrank"] = self.lowrank.text
        return d

    def name_table(self) -> tuple:
        """(sorted murmur hashes of the names, their class ids 1..K) for the label parsers."""
        from streamlearn.features.hashing import murmur3
        hashes = np.array([murmur3(n.encode()) for n in self.names], np.int64)
        order = np.argsort(hashes, kind="stable")
        return hashes[order], (order + 1).astype(np.int64)

    def class_names(self) -> tuple | None:
        """``parse_block``'s class_names: the name table of --named_labels with --oaa, else None."""
        return self.name_table() if self.names and not self.costs else None

    def cost_names(self) -> tuple | None:
        """``parse_block``'s cost_names: None for plain labels, else the named labels' (hashes, ids)."""
        if not self.costs:
            return None
        return self.name_table()


def hashing_of(cfg) -> Hashing:
    """The Hashing of a run's configuration."""
    pair = getattr(cfg, "interact", None)
    return Hashing(cfg.bits, cfg.noconstant, cfg.hash, cfg.hash_seed,
                   cfg.feature_spec() if cfg.expands else None, text_format_of(cfg),
                   getattr(cfg, "affix", None) or None, tuple(getattr(cfg, "dictionary", ()) or ()),
                   tuple(getattr(cfg, "dictionary_path", ()) or ()), getattr(cfg, "threads", 1),
                   None if pair is None else pair.encode("utf-8", "surrogateescape"),
                   costs=bool(getattr(cfg, "csoaa", 0)) or getattr(cfg, "ldf", None) is not None,
                   names=tuple(cfg.named_labels.split(",")) if getattr(cfg, "named_labels", None) else (),
                   multilabels=bool(getattr(cfg, "multilabel_oaa", 0)), ldf=getattr(cfg, "ldf", None) is not None,
                   lowrank=lowrank_of(cfg), max_features=getattr(cfg, "max_example_features", None))


def text_format_of(cfg):
    """The TextFormat of a run reading CSV or JSON (``--csv``, ``--json``), else None."""
    if getattr(cfg, "format", None) not in TEXT_FORMATS:
        return None
    from streamlearn.io.textformats import TextFormat
    return TextFormat(cfg.format, getattr(cfg, "csv_separator", ","), getattr(cfg, "csv_ns_value", "") or "",
                      bool(getattr(cfg, "chain_hash", False)), getattr(cfg, "csv_header", "") or "",
                      bool(getattr(cfg, "csv_no_file_header", False)))


def text_blocks(sources, fmt: str, hashing: Hashing, block_size: int, cache: CacheWriter | None = None,
                on_error=None, with_text: bool = False, threads: int | None = None, byte_range=None):
    """Parsed blocks of the text sources, in order (format detected per source with 'auto'). With
    ``with_text`` every block also carries its examples' lines (``text_lines``, for feature names).
    ``byte_range`` (start, end[, line]): only those bytes of the one source, whose first line is
    number ``line`` (``streamlearn.io.reader.Source``).

    ``threads`` (default ``hashing.threads``) > 1 parses that many blocks at once on a pool of
    threads; the blocks come out in input order all the same, and everything that depends on the
    order (feature expansion, the cache, the lines' text, read errors) happens here, in order.

    Blocks are parsed into a ring of reusable output arrays (see streamlearn.io.reader for the
    lifetime rule: the consumer is done with a block before it asks for the next one)."""
    threads = hashing.threads if threads is None else threads
    ring = ring_size(threads)
    mode = HASH_MODES[hashing.hash]
    outputs = [Outputs() for _ in range(ring)]
    cost_names = hashing.cost_names()
    class_names = hashing.class_names()
    expander = redefine = None
    if hashing.expands:
        expander = make_expander(hashing.features, hashing.mask, hashing.lowrank, hashing.max_features)
        redefine = (IDENTITY_REDEFINE if hashing.features is None
                    else np.array(hashing.features.redefine_map, np.uint8))
        expanded = [ExpandedOutputs() for _ in range(ring)]
    elif hashing.interact is not None:      # the namespace of every feature, for --interact
        redefine = IDENTITY_REDEFINE

    def parse(k, name, data, ends, first_line, code, error):
        """Block k parsed into ring slot k (touches nothing else: safe on any thread)."""
        return parse_block(name, data, first_line, code, hashing.mask, hashing.noconstant,
                           hashing.hash_seed, mode, ends=ends, out=outputs[k % ring], redefine=redefine,
                           cost_names=cost_names, class_names=class_names, multilabels=hashing.multilabels,
                           shared=hashing.ldf)

    def finish(block, k, name, data, ends, first_line, code, error):
        """The order-dependent rest, in input order: a read error first (then the lines read before
        it), expansion, the lines' text, the cache."""
        if error is not None:
            if on_error is None:
                raise InputError(error)
            on_error(error)
        if block is None:
            return None
        if grouper is not None:     # multi-line examples: their lines' text first (the block's buffer is this one)
            if with_text:
                buf = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray)) else data
                block.text_lines = example_texts(buf, ends, first_line, block.lines)
            return [grouped(b, k) for b in grouper.feed(block)]
        if hashing.interact is not None:
            block, _ = interact(block, hashing.interact, hashing.mask)
        if expander is not None:
            block = expander.expand(block, expanded[k % ring])
        if with_text:
            buf = np.frombuffer(data, np.uint8) if isinstance(data, (bytes, bytearray)) else data
            texts = example_texts(buf, ends, first_line, block.lines)
            block.text_lines = texts if code == FMT_VW else [libsvm_as_vw(t) for t in texts]
        if cache is not None:
            cache.write(block)
        return block

    def grouped(block, k):
        """A block of whole multi-line examples, expanded (its text, groups and faults' lines kept through it)."""
        texts, groups, at, heads = block.text_lines, block.groups, block.fault_line, block.head_tags
        if hashing.interact is not None:
            block, _ = interact(block, hashing.interact, hashing.mask)
        if expander is not None:    # into arrays of its own: one read may give two blocks (a source's last group)
            block = expander.expand(block, ExpandedOutputs())
        block.text_lines, block.groups, block.fault_line, block.head_tags = texts, groups, at, heads
        return block

    def emit(result):
        """The blocks ``finish`` made: none, one, or (multi-line examples) a list."""
        if result is None:
            return []
        return result if isinstance(result, list) else [result]

    grouper = None
    if hashing.ldf:
        from streamlearn.io.ldf import LdfGroups
        grouper = LdfGroups(hashing.noconstant)

    text_format = None
    if fmt in TEXT_FORMATS:
        from streamlearn.io.textformats import TextFormat
        text_format = hashing.text if hashing.text is not None else TextFormat(fmt)
    items = _read_items(sources, fmt, block_size, ring, byte_range, text_format, hashing)
    if (hashing.affix or hashing.dictionaries) and text_format is None:
        items = _with_affixes(items, hashing)
    last = 0
    if threads == 1:
        for item in items:
            last = item[0]
            yield from emit(finish(parse(*item) if item[2] is not None else None, *item))
        if grouper is not None:
            yield from (grouped(b, last + 1) for b in grouper.flush())
        return
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="streamlearn-parse")
    window = deque()    # (future or None, item), oldest first: at most `threads` in flight

    def ready():
        fut, item = window.popleft()
        return finish(None if fut is None else fut.result(), *item)

    try:
        for item in items:
            last = item[0]
            window.append((pool.submit(parse, *item) if item[2] is not None else None, item))
            if len(window) >= threads:
                yield from emit(ready())
        while window:
            yield from emit(ready())
        if grouper is not None:
            yield from (grouped(b, last + 1) for b in grouper.flush())
    finally:
        for fut, _ in window:
            if fut is not None:
                fut.cancel()
        pool.shutdown(wait=True)


def _read_items(sources, fmt: str, block_size: int, ring: int, byte_range=None, text_format=None, hashing=None):
    """The blocks of the sources as (k, source name, data, line ends, first line, format code, read
    error) in order; k counts blocks from 0. A read error (reported by ``read_blocks``) travels with
    the block read when it happened (data None: no line was left), so that it is reported in order.
    With ``text_format`` (CSV, JSON) every block is turned into VW text, line for line."""
    k = 0
    for path in sources:
        source = Source(path) if byte_range is None else Source(path, *byte_range)
        if text_format is not None:
            conv = text_format.converter(source.name, hashing.hash_seed, hashing.hash)
            errors = []
            for data, ends, first_line in read_blocks(source, block_size, ring, errors.append):
                error = errors.pop() if errors else None
                buf, vw_ends = conv.block(data, ends, first_line)
                yield k, source.name, buf, vw_ends, first_line, FMT_VW, error
                k += 1
            if errors:
                yield k, source.name, None, None, 0, FMT_VW, errors.pop()
            continue
        code = None if fmt == "auto" else FORMATS[fmt]
        pending = []   # blocks read before a line decided the format (blank or comment lines)
        errors = []
        for data, ends, first_line in read_blocks(source, block_size, ring, errors.append):
            error = errors.pop() if errors else None
            if code is None:
                code = detect_format(data)
                if code is None:
                    pending.append((data.copy(), ends.copy(), first_line, error))
                    continue
                for data0, ends0, first0, error0 in pending:
                    yield k, source.name, data0, ends0, first0, code, error0
                    k += 1
                pending = []
            yield k, source.name, data, ends, first_line, code, error
            k += 1
        for data0, ends0, first0, error0 in pending:
            yield k, source.name, data0, ends0, first0, FMT_VW, error0
            k += 1
        if errors:
            yield k, source.name, None, None, 0, code, errors.pop()


def _with_affixes(items, hashing: Hashing):
    """The items with VW's --affix and --dictionary features added to the VW text blocks
    (``AffixConverter``)."""
    from streamlearn.io.textformats import AffixConverter, load_dictionaries, parse_affix
    affix = parse_affix(hashing.affix or "")
    try:
        tables = load_dictionaries(hashing.dictionaries, hashing.dictionary_path, hashing.bits, hashing.hash_seed,
                                   hashing.hash)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    convs = {}
    for k, name, data, ends, first_line, code, error in items:
        if data is not None and code == FMT_VW:
            conv = convs.get(name)
            if conv is None:
                conv = convs[name] = AffixConverter(affix, name, hashing.hash_seed, hashing.hash, hashing.features,
                                                    tables)
            data, ends = conv.block(data, ends, first_line)
        yield k, name, data, ends, first_line, code, error


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
