"""Line-aligned blocks from files, stdin and compressed files; block-boundary invariance."""

import bz2
import gzip
import lzma

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from streamlearn.cli import main
from streamlearn.errors import InputError
from streamlearn.io.reader import Source, read_blocks

TEXT = b"1 |a x\n\n-1 'tag |b y:2\nlong " + b"z" * 5000 + b"\n0.5 |c w\nlast |d q"


def collect(path, block_size):
    blocks = [(v.tobytes(), e.copy(), first) for v, e, first in read_blocks(Source(str(path)), block_size)]
    data = b"".join(b for b, _, _ in blocks)
    return blocks, data


@pytest.mark.parametrize("block_size", [1, 2, 7, 64, 4096, 1 << 20])
def test_blocks_cover_the_input_and_end_at_newlines(tmp_path, block_size):
    p = tmp_path / "d.vw"
    p.write_bytes(TEXT)
    blocks, data = collect(p, block_size)
    assert data == TEXT
    line = 1
    for b, ends, first in blocks:
        assert first == line
        assert b.endswith(b"\n") or b is blocks[-1][0]
        assert list(ends) == [i for i, c in enumerate(b) if c == 10] + ([] if b.endswith(b"\n") else [len(b)])
        line += b.count(b"\n")


@pytest.mark.parametrize("opener,ext", [(gzip.open, ".gz"), (bz2.open, ".bz2"), (lzma.open, ".xz")])
def test_compressed_inputs(tmp_path, opener, ext):
    p = tmp_path / ("d.vw" + ext)
    with opener(p, "wb") as f:
        f.write(TEXT)
    assert collect(p, 100)[1] == TEXT


def test_unreadable_inputs(tmp_path):
    with pytest.raises(InputError, match=r"^cannot read .*nope\.vw: No such file or directory$"):
        list(read_blocks(Source(str(tmp_path / "nope.vw"))))
    with pytest.raises(InputError, match=r"it is a directory$"):
        list(read_blocks(Source(str(tmp_path))))
    bad = tmp_path / "bad.vw.gz"
    bad.write_bytes(b"this is not gzip data")
    with pytest.raises(InputError, match=r"^cannot read .*bad\.vw\.gz: "):
        list(read_blocks(Source(str(bad))))
    full = gzip.compress(TEXT * 50)
    cut = tmp_path / "cut.vw.gz"
    cut.write_bytes(full[: len(full) // 2])
    with pytest.raises(InputError, match=r"compressed data ends early \(truncated file\?\)$"):
        list(read_blocks(Source(str(cut))))


def train_outputs(tmp_path, data_path, block_size, extra=()):
    pred = tmp_path / f"p{block_size}.txt"
    model = tmp_path / f"m{block_size}.slm"
    res = CliRunner().invoke(main, ["train", "-d", str(data_path), "-p", str(pred), "-f", str(model),
                                    "--block-size", str(block_size), *extra])
    assert res.exit_code == 0, res.output
    warnings = [l for l in res.stderr.splitlines() if "warning" in l]
    return pred.read_bytes(), model.read_bytes(), warnings


line_st = st.one_of(
    st.just(""),
    st.builds(lambda l, f: f"{l} |a {f}", st.sampled_from(["1", "-1", "0.5", "2 3", "x", "1 'tg"]),
              st.lists(st.sampled_from(["p", "q:2", "r:1,5", "s:nan", "7", ":3", "t:u"]), max_size=5)
              .map(" ".join)),
    st.sampled_from(["1 |b z\r", "'only |c w", "1|d v", "   "]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(line_st, min_size=1, max_size=30), trailing=st.booleans())
@example(lines=["   ", "1 |b z\r"], trailing=False)    # a block of blank lines before the format is known
@example(lines=["", "", "# c", "1 |a p"], trailing=True)
def test_any_block_size_gives_identical_results(tmp_path, lines, trailing):
    p = tmp_path / "rand.vw"
    p.write_text("\n".join(lines) + ("\n" if trailing else ""), encoding="utf-8")
    outs = [train_outputs(tmp_path, p, bs, ["--algo", "tg", "--l1", "0.01", "--passes", "2", "--quiet"])
            for bs in (1, 3, 17, 1 << 19)]
    assert all(o == outs[0] for o in outs[1:])


def test_truncated_compressed_input_warns_and_keeps_what_was_read(tmp_path):
    full = gzip.compress(b"".join(b"1 |a x%d\n" % i for i in range(20000)))
    cut = tmp_path / "cut.vw.gz"
    cut.write_bytes(full[: len(full) * 3 // 4])
    model = tmp_path / "m.slm"
    r = CliRunner().invoke(main, ["train", "-d", str(cut), "-p", str(tmp_path / "p.txt"), "-f", str(model)])
    assert r.exit_code == 0, r.output
    warning = [l for l in r.stderr.splitlines() if l.startswith("streamlearn: warning")]
    assert warning == [f"streamlearn: warning: cannot read {cut}: compressed data ends early (truncated file?); "
                       "the lines before are used, the last partial line is not"]
    n = len((tmp_path / "p.txt").read_text().splitlines())
    assert 0 < n < 20000 and f"number of examples = {n}" in r.stderr and model.exists()
    assert "inputs not read to the end = 1" in r.stderr
    r = CliRunner().invoke(main, ["train", "-d", str(cut), "--strict", "--quiet"])
    assert r.exit_code == 1
    assert r.stderr == f"Error: cannot read {cut}: compressed data ends early (truncated file?)\n"


def test_missing_input_fails_before_any_work(tmp_path):
    good = tmp_path / "good.vw"
    good.write_text("1 |a b\n" * 10)
    model = tmp_path / "m.slm"
    r = CliRunner().invoke(main, ["train", "-d", str(good), "-d", str(tmp_path / "gone.vw"), "-f", str(model)])
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr == f"Error: cannot read {tmp_path / 'gone.vw'}: No such file or directory\n"
    assert not model.exists()


# --- byte ranges and example windows (the parts of a shard a Dask task reads: streamlearn.dask) ---

def test_a_byte_range_reads_its_lines_with_their_numbers(tmp_path):
    """``Source(path, start, end)`` reads exactly those bytes, and its lines keep their numbers in the
    whole file (the first block's first line)."""
    p = tmp_path / "d.vw"
    p.write_bytes(TEXT)
    cut = TEXT.index(b"\n0.5") + 1          # line 5 starts here
    for block_size in (3, 64, 1 << 20):
        head = list(read_blocks(Source(str(p), 0, cut), block_size))
        tail = list(read_blocks(Source(str(p), cut, len(TEXT)), block_size))
        assert b"".join(v.tobytes() for v, _, _ in head) == TEXT[:cut]
        assert b"".join(v.tobytes() for v, _, _ in tail) == TEXT[cut:]
        assert tail[0][2] == 5 and head[0][2] == 1
    with pytest.raises(InputError, match="by byte range: it is compressed"):
        gz = tmp_path / "d.vw.gz"
        gz.write_bytes(gzip.compress(TEXT))
        list(read_blocks(Source(str(gz), 0, 10)))


def test_cache_windows_are_the_windows_of_the_text(tmp_path):
    """``read_cache(path, name, start, stop)`` (blocks before the window skipped unread) gives the
    examples ``window`` cuts from the text's blocks, and ``cache_examples`` counts them all."""
    from streamlearn.io.blocks import window
    from streamlearn.io.cache import cache_examples, read_cache
    from streamlearn.run.stream import Hashing, text_blocks

    p = tmp_path / "d.vw"
    p.write_bytes(b"".join(b"%d 'e%d |a x%d:%d y\n" % (i % 3 - 1, i, i % 7, i) for i in range(103)))
    cache = tmp_path / "d.cache"
    res = CliRunner().invoke(main, ["train", "-d", str(p), "--cache-file", str(cache), "--block-size", "200",
                                    "--quiet"])
    assert res.exit_code == 0, res.output
    assert cache_examples(str(cache)) == 103
    hashing = Hashing(18, False, "strings", 0, None, 1)

    def examples(blocks):
        out = []
        for b in blocks:
            for i in range(b.n):
                out.append((float(b.labels[i]), int(b.lines[i]), b.tag_list()[i],
                            b.idx[b.indptr[i]:b.indptr[i + 1]].tolist(), b.val[b.indptr[i]:b.indptr[i + 1]].tolist()))
        return out

    for start, stop in ((0, None), (0, 10), (17, 40), (40, 103), (90, 200), (103, 110)):
        text = examples(window(text_blocks([str(p)], "auto", hashing, 200), start, stop))
        assert examples(read_cache(str(cache), str(p), start, stop)) == text
        assert [e[1] for e in text] == list(range(start + 1, min(stop or 103, 103) + 1))


def test_a_drained_windows_last_block_outlives_the_ring(tmp_path):
    """``window(..., drain=True)`` reads on to the end of the stream (a first pass writing its cache)
    while the consumer still works on the window's last block: that block must not share the reader's
    ring of buffers, which the rest of the stream overwrites."""
    from streamlearn.io.blocks import window
    from streamlearn.run.stream import Hashing, text_blocks

    p = tmp_path / "d.vw"
    p.write_bytes(b"".join(b"%d |a x%d:%d y\n" % (i % 3 - 1, i % 7, i) for i in range(300)))
    hashing = Hashing(18, False, "strings", 0, None, 1)
    it = window(text_blocks([str(p)], "auto", hashing, 100), 0, 25)
    pieces = []
    for piece in it:
        pieces.append(piece)
    last = pieces[-1]
    assert sum(b.n for b in pieces) == 25 and last.lines[-1] == 25 and list(last.labels) == [
        float(i % 3 - 1) for i in range(25 - last.n, 25)]
    assert [float(last.val[last.indptr[e]]) for e in range(last.n)] == [float(i) for i in range(25 - last.n, 25)]
