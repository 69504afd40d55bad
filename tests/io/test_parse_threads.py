"""--threads N: blocks parsed on N threads come out in input order, so every result is the one thread's
(predictions, model bytes, cache, feature names, malformed-line and read-error messages)."""

import gzip

import numpy as np
import pytest
from support.helpers import cli, vw_dataset

from streamlearn.config import default_threads, predict_config, train_config
from streamlearn.errors import OptionError
from streamlearn.run.stream import Hashing, text_blocks

BAD = {37: "abc |a f1\n", 120: "1 |a f2:nan f3\n", 121: "\n", 250: "1 2 3 4 5 |b f1\n",
       399: "-1 |c f4:1x f5\n", 555: "1 -2 |a f6\n"}


def data_lines(n=700):
    lines = vw_dataset(n, seed=5)
    for at, line in BAD.items():
        lines[at] = line
    return lines


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("threads") / "d.vw"
    path.write_text("".join(data_lines()))
    return path


def train(tmp_path, data, threads, *extra, input=None):
    """(messages, predictions, model) of a run; OUT stands for its output folder in the messages."""
    out = tmp_path / f"t{threads}"
    out.mkdir(exist_ok=True)
    extra = [str(a).replace("OUT", str(out)) for a in extra]
    src = ["-d", data] if data is not None else []
    res = cli("train", *src, "--block-size", 700, "--threads", threads, "-p", out / "p.txt",
              "-f", out / "m.slm", "--loss", "logistic", *extra, input=input)
    text = "".join(line for line in res.output.splitlines(True)       # timings vary from run to run
                   if not line.startswith(("examples per second", "wall time"))).replace(str(out), "OUT")
    return text, (out / "p.txt").read_bytes(), (out / "m.slm").read_bytes()


def test_one_two_three_threads_same_results(tmp_path, data):
    runs = [train(tmp_path, data, t, "-q", "ab", "--invert_hash", "OUT/inv.txt") for t in (1, 2, 3)]
    assert "d.vw line 38: label \"abc\" is not a number" in runs[0][0]
    assert "malformed lines = 5" in runs[0][0]        # the blank line is no fault
    for r in runs[1:]:
        assert r == runs[0]          # messages (in order), predictions, model bytes
    inv = [(tmp_path / f"t{t}" / "inv.txt").read_bytes() for t in (1, 2, 3)]
    assert inv[1] == inv[0] and inv[2] == inv[0]


def test_cache_passes_and_sources(tmp_path, data):
    """The cache writer sees the blocks in order (a second pass from it); stdin and .gz inputs."""
    one = train(tmp_path, data, 1, "--passes", 2, "--cache-file", "OUT/c")
    three = train(tmp_path, data, 3, "--passes", 2, "--cache-file", "OUT/c")
    assert three == one
    assert (tmp_path / "t1" / "c").read_bytes() == (tmp_path / "t3" / "c").read_bytes()
    plain = train(tmp_path, data, 1)
    gz = tmp_path / "d.vw.gz"
    gz.write_bytes(gzip.compress(data.read_bytes()))
    from_gz = train(tmp_path, gz, 2)
    from_stdin = train(tmp_path, None, 2, input=data.read_text())
    assert from_gz[1:] == plain[1:] and from_stdin[1:] == plain[1:]


def test_read_error_comes_after_the_lines_before_it(tmp_path, data):
    """A truncated .gz: the warning follows the messages of the lines read before it, as with 1 thread."""
    gz = tmp_path / "cut.vw.gz"
    gz.write_bytes(gzip.compress(data.read_bytes())[:-400])
    outs = [train(tmp_path, gz, t) for t in (1, 2, 3)]
    text = outs[0][0]
    assert "compressed data ends early" in text
    assert text.index("line 556") < text.index("compressed data ends early")
    assert outs[1] == outs[0] and outs[2] == outs[0]


def test_text_blocks_identical_arrays(data):
    def blocks(threads):
        return [tuple(np.array(a) for a in (b.labels, b.weights, b.lines, b.indptr, b.idx, b.val, b.faults))
                + (b.fault_text,)
                for b in text_blocks([str(data)], "auto", Hashing(18, False, "strings", 0), 300,
                                     threads=threads)]
    one = blocks(1)
    for t in (2, 3):
        got = blocks(t)
        assert len(got) == len(one) > 20
        for a, b in zip(got, one):
            for x, y in zip(a, b):
                assert np.array_equal(x, y, equal_nan=True) if isinstance(x, np.ndarray) else x == y


def test_threads_option_checked():
    res = cli("train", "--threads", 0, input="1 | a\n", expect_ok=False)
    assert res.exit_code == 1 and res.output == "Error: --threads must be at least 1 (got 0)\n"
    with pytest.raises(OptionError, match=r"^--threads must be at least 1 \(got -1\)$"):
        predict_config(initial_model="m", threads=-1)
    assert train_config({}).threads == default_threads() >= 1


def test_libsvm_after_blank_blocks(tmp_path):
    """Blocks read before a line decides the format (--format auto) keep their place in the order."""
    rng = np.random.default_rng(3)
    lines = ["\n", "# a comment line that fills a block or two\n"] * 20
    lines += [f"{int(rng.integers(0, 2))} " + " ".join(f"{j}:{rng.random():.3f}" for j in
                                                      sorted(rng.choice(50, 5, replace=False))) + "\n"
              for _ in range(300)]
    lines[100] = "1 7:x\n"
    path = tmp_path / "d.libsvm"
    path.write_text("".join(lines))

    def blocks(threads):
        return [(b.lines.tolist(), b.idx.tolist(), b.val.tolist(), b.faults.tolist())
                for b in text_blocks([str(path)], "auto", Hashing(18, False, "strings", 0), 64,
                                     threads=threads)]
    one = blocks(1)
    assert sum(len(b[0]) for b in one) == 300 and any(b[3] for b in one)
    assert blocks(2) == one and blocks(3) == one


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_ring_outlives_the_blocks_in_flight(data, threads):
    """While the consumer holds block k, the producer runs ahead as far as it may (the pipeline's
    block and the parse window): block k's arrays and text must not be overwritten meanwhile."""
    import time

    from streamlearn.run.stream import pipelined

    def snap(b):
        return (b.labels.tobytes(), b.lines.tolist(), b.idx.tolist(), b.val.tolist(), b.tag_list(),
                [t for t in b.text_lines])

    hashing = Hashing(18, False, "strings", 0)
    want = [snap(b) for b in text_blocks([str(data)], "vw", hashing, 2000, with_text=True, threads=1)]
    got = []
    for b in pipelined(text_blocks([str(data)], "vw", hashing, 2000, with_text=True, threads=threads)):
        time.sleep(0.003)     # the producer fills every slot it is allowed to
        got.append(snap(b))
    assert got == want


def test_predict_threads_same_output(tmp_path, data):
    """``predict --threads N`` writes the predictions and messages of one thread."""
    train(tmp_path, data, 1)
    model = tmp_path / "t1" / "m.slm"
    outs = []
    for t in (1, 3):
        pred = tmp_path / f"pred{t}.txt"
        res = cli("predict", "-d", data, "-i", model, "--threads", t, "--block-size", 700, "-p", pred)
        text = "".join(line for line in res.output.splitlines(True)
                       if not line.startswith(("examples per second", "wall time")))
        outs.append((text, pred.read_bytes()))
    assert "line 38" in outs[0][0] and outs[0][1].count(b"\n") > 500
    assert outs[1] == outs[0]
    res = cli("predict", "-d", data, "-i", model, "--threads", 0, expect_ok=False)
    assert res.exit_code == 1 and res.output == "Error: --threads must be at least 1 (got 0)\n"
