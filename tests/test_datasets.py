"""The generators are deterministic, and data/samples/ is what they make."""

from pathlib import Path

import numpy as np

from streamlearn.datasets import synthetic, write_bench_stream, write_samples

ROOT = Path(__file__).resolve().parents[1]


def test_samples_are_generated_by_the_project(tmp_path):
    written = write_samples(str(tmp_path))
    assert written
    for path in written:
        name = Path(path).name
        assert (ROOT / "data" / "samples" / name).read_bytes() == Path(path).read_bytes(), name


def test_synthetic_setup():
    d = synthetic(4000, 50, kind="gaussian", seed=3)
    assert np.count_nonzero(d.w) == 25                        # half of w* zeroed
    X = d.val.reshape(4000, 50)
    agree = np.mean(np.where(X @ d.w >= 0, 1.0, -1.0) == d.y)
    assert 0.86 < agree < 0.94                                 # 10% of the labels flipped
    b = synthetic(3000, 200, kind="binary", density=0.05, seed=4)
    assert set(np.unique(b.val)) == {1.0}
    assert 0.04 < b.idx.shape[0] / (3000 * 200) < 0.06


def test_bench_stream_is_deterministic(tmp_path):
    a, b = tmp_path / "a.vw", tmp_path / "b.vw"
    write_bench_stream(str(a), 500, chunk=200)
    write_bench_stream(str(b), 500, chunk=200)
    assert a.read_bytes() == b.read_bytes()
    lines = a.read_text().splitlines()
    assert len(lines) == 500
    nfeat = [len(l.split()) - 5 for l in lines]               # tokens minus label and 4 namespace markers
    assert 25 <= np.mean(nfeat) <= 35
