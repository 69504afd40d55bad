"""streamlearn.dask.train (issue 16's Dask driver) on a two-process LocalCluster: one shard for one
pass is ``streamlearn train`` bit for bit, k identical shards after one round are one machine on one
copy, reruns give the same bytes, placement is deterministic and errors are one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")

from support.helpers import cli  # noqa: E402
from streamlearn.core import sparse  # noqa: E402
from streamlearn.io.model_file import load_model, parse_model  # noqa: E402

sd = pytest.importorskip("streamlearn.dask")

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
TRAIN = SAMPLES / "sparse.train.vw"
TEST = SAMPLES / "sparse.test.vw"

# the learners: tg's cumulative L1 penalty (z and P merged, then shrunk) and FTRL (z and n)
LEARNERS = {
    "tg": {"algo": "tg", "l1": 1e-3},
    "ftrl": {"algo": "ftrl", "l1": 0.5},
}
COMMON = {"loss": "logistic", "bits": 12}


def flags(options: dict) -> list[str]:
    return [a for k, v in options.items() for a in (f"--{k.replace('_', '-')}", str(v))]


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster
    # the scheduler's HTTP server on a free port (8787 may be taken), no dashboard
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      scheduler_kwargs={"dashboard": False}) as cluster, Client(cluster) as c:
        yield c


def without_mix(header: dict) -> str:
    return json.dumps({k: v for k, v in header.items() if k != "mix"}, sort_keys=True)


def predictions(model_path: Path, out: Path) -> bytes:
    cli("predict", "-i", model_path, "-d", TEST, "-p", out, "--quiet")
    return out.read_bytes()


@pytest.mark.parametrize("learner", sorted(LEARNERS))
def test_one_shard_one_pass_is_streamlearn_train(client, tmp_path, learner):
    options = {**LEARNERS[learner], **COMMON}
    cli("train", "-d", TRAIN, "-f", tmp_path / "single.m", "--quiet", *flags(options))
    data = sd.train(client, [TRAIN], **options)
    (tmp_path / "dask.m").write_bytes(data)
    single, mixed = load_model(str(tmp_path / "single.m")), parse_model(data)
    assert mixed[0]["mix"] == {"workers": 1, "syncs": 1, "rule": "weighted"}
    assert without_mix(mixed[0]) == without_mix(single[0])
    np.testing.assert_array_equal(mixed[1], single[1])
    np.testing.assert_array_equal(mixed[2], single[2])      # exactly
    assert predictions(tmp_path / "dask.m", tmp_path / "p1") == predictions(tmp_path / "single.m", tmp_path / "p2")


def test_identical_shards_one_round_are_one_machine(client, tmp_path):
    options = {**LEARNERS["tg"], **COMMON}
    for name in ("a.vw", "b.vw"):
        shutil.copyfile(TRAIN, tmp_path / name)
    cli("train", "-d", TRAIN, "-f", tmp_path / "single.m", "--quiet", *flags(options))
    data = sd.train(client, [str(tmp_path / "*.vw")], mix="uniform", **options)
    (tmp_path / "dask.m").write_bytes(data)
    single, mixed = load_model(str(tmp_path / "single.m")), parse_model(data)
    assert mixed[0]["mix"] == {"workers": 2, "syncs": 1, "rule": "uniform"}
    np.testing.assert_array_equal(mixed[1], single[1])
    np.testing.assert_array_equal(mixed[2], single[2])      # the merge of identical models is the identity
    assert predictions(tmp_path / "dask.m", tmp_path / "p1") == predictions(tmp_path / "single.m", tmp_path / "p2")


def test_reruns_give_identical_bytes(client):
    options = {**LEARNERS["ftrl"], **COMMON}
    shards = [TRAIN, SAMPLES / "gauss.train.vw"]
    first = sd.train(client, shards, passes=2, **options)
    assert sd.train(client, shards, passes=2, **options) == first
    assert parse_model(first)[0]["mix"] == {"workers": 2, "syncs": 2, "rule": "weighted"}


@pytest.mark.parametrize("learner", sorted(LEARNERS))
def test_sparse_weights_mix_the_dense_runs_weights(client, tmp_path, monkeypatch, learner):
    """Two shards, two rounds with the sparse weight store (--sparse_weights) in every task: the merged
    model's weights and predictions are the dense run's (at -b 12 nothing collides in these files)."""
    options = {**LEARNERS[learner], **COMMON}
    shards = [TRAIN, SAMPLES / "gauss.train.vw"]
    dense = parse_model(sd.train(client, shards, passes=2, **options))
    data = sd.train(client, shards, passes=2, sparse_weights=True, **options)
    mixed = parse_model(data)
    np.testing.assert_array_equal(mixed[1], dense[1])
    np.testing.assert_array_equal(mixed[2], dense[2])
    (tmp_path / "sparse.m").write_bytes(data)
    (tmp_path / "dense.m").write_bytes(sd.train(client, shards, passes=2, **options))
    assert predictions(tmp_path / "sparse.m", tmp_path / "p1") == predictions(tmp_path / "dense.m", tmp_path / "p2")
    # a task's run takes the store (in this process, to see it): the option reaches the runs
    made = []
    init = sparse.SparseStore.__init__
    monkeypatch.setattr(sparse.SparseStore, "__init__", lambda self, *a: (made.append(self), init(self, *a))[1])
    sd.train_shard(TRAIN, {**options, "sparse_weights": True}, None)
    assert len(made) == 1 and made[0].n_rows > 0


def test_placement_is_balanced_by_bytes_and_deterministic():
    assert sd.assign([5, 30, 10, 10, 20], ["w1", "w2"]) == ["w2", "w1", "w2", "w1", "w2"]
    assert sd.assign([1, 1, 1], ["a", "b"]) == ["a", "b", "a"]


def test_errors_are_one_line(client, tmp_path):
    with pytest.raises(ValueError, match=r"^no file matches .*nothing\*\.vw$"):
        sd.train(client, [str(tmp_path / "nothing*.vw")])
    bad = tmp_path / "bad.vw"
    bad.write_text("1 |a x\nabc |a y\n")
    with pytest.raises(ValueError) as exc:
        sd.train(client, [bad], strict=True)
    assert str(exc.value).startswith(f"{bad} line 2: ") and "\n" not in str(exc.value)
    with pytest.raises(ValueError, match="^-b/--bits must be between"):
        sd.train(client, [bad], bits=99)
    with pytest.raises(ValueError, match="set by streamlearn.dask.train"):
        sd.train(client, [bad], passes=1, final_model="x")


def test_one_shard_two_rounds_is_train_then_train_i(client, tmp_path):
    """Later rounds resume through -i with the model's own options, as a user's ``train -i`` does."""
    options = {**LEARNERS["tg"], **COMMON}
    cli("train", "-d", TRAIN, "-f", tmp_path / "m1", "--quiet", *flags(options))
    cli("train", "-i", tmp_path / "m1", "-d", TRAIN, "-f", tmp_path / "m2", "--quiet")
    mixed, single = parse_model(sd.train(client, [TRAIN], passes=2, **options)), load_model(str(tmp_path / "m2"))
    assert without_mix(mixed[0]) == without_mix(single[0])
    np.testing.assert_array_equal(mixed[1], single[1])
    np.testing.assert_array_equal(mixed[2], single[2])


def test_rounds_report_their_progress(client):
    """``on_round`` gets each round's figures from what the tasks returned; the table prints them."""
    import io
    rows = []
    data = sd.train(client, [TRAIN, SAMPLES / "gauss.train.vw"], passes=2, on_round=rows.append,
                    **LEARNERS["tg"], **COMMON)
    assert [r["round"] for r in rows] == [1, 2] and {r["examples"] for r in rows} == {3000}
    assert rows[-1]["nonzero"] == np.count_nonzero(parse_model(data)[2][:, 0])
    assert all(0 < r["loss"] < 1 and 0 <= r["sync"] <= r["wall"] for r in rows)
    assert rows[0]["start"] == 0 and rows[1]["start"] > 0 and all(len(r["sent"]) == 2 for r in rows)
    assert all(0 < n < len(data) * 2 for r in rows for n in r["sent"])    # sparse: rows touched, not 2^b

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    out = Terminal()
    table = sd.RoundTable(out)
    table.start(2, 2, 2, "weighted")
    table(rows[0])
    text = out.getvalue()
    assert text.startswith("Dask: 2 shards on 2 workers, 2 passes, mix weighted\n" + sd.RoundTable.HEADER)
    assert sd.RoundTable.format_row(rows[0]) + "\n[" + "#" * 15 + "." * 15 + "] round 2/2, ETA " in text


def test_cli_local_1_one_pass_is_streamlearn_train(tmp_path):
    """``train --dask local:1`` on one shard for one pass: ``streamlearn train``'s weights exactly and
    its predictions byte for byte, with one progress row (its own one-worker cluster)."""
    options = {**LEARNERS["tg"], **COMMON}
    cli("train", "-d", TRAIN, "-f", tmp_path / "single.m", "--quiet", *flags(options))
    res = cli("train", "--dask", "local:1", "-d", TRAIN, "-f", tmp_path / "dask.m", *flags(options))
    single, mixed = load_model(str(tmp_path / "single.m")), load_model(str(tmp_path / "dask.m"))
    assert without_mix(mixed[0]) == without_mix(single[0])
    np.testing.assert_array_equal(mixed[1], single[1])
    np.testing.assert_array_equal(mixed[2], single[2])
    assert predictions(tmp_path / "dask.m", tmp_path / "p1") == predictions(tmp_path / "single.m", tmp_path / "p2")
    err = res.stderr.splitlines()
    assert err[:2] == ["Dask: 1 shard on 1 worker, 1 pass, mix weighted", sd.RoundTable.HEADER]
    row = err[2].split()
    assert row[:2] == ["1", "2000"] and row[3] == str(np.count_nonzero(single[2][:, 0]))
    assert f"final model = {tmp_path / 'dask.m'}" in err
    quiet = cli("train", "--dask", "local:1", "-d", TRAIN, "-f", tmp_path / "q.m", "--quiet", *flags(options))
    assert quiet.stderr == "" and (tmp_path / "q.m").read_bytes() == (tmp_path / "dask.m").read_bytes()


@pytest.mark.parametrize("args, message", [
    (["--dask", "local:0"], "--dask local:0: local:N needs a whole number of workers N >= 1"),
    (["--dask", "local:two"], "--dask local:two: local:N needs a whole number of workers N >= 1"),
    (["--dask", "tcp://127.0.0.1:1"], "cannot connect to a Dask scheduler at tcp://127.0.0.1:1 (waited up "
                                      "to 0.5 s; give a running scheduler's address, e.g. tcp://host:8786, "
                                      "or local:N)"),
    (["--dask", "local:1", "-d", "{tmp}/nothing*.vw"], "no file matches {tmp}/nothing*.vw"),
    (["--dask", "local:1", "-d", "-"], "--dask needs -d FILE or -d 'GLOB' (stdin cannot be sharded)"),
    (["--dask", "local:1", "--passes", "0"], "--passes must be at least 1 (got 0)"),
    (["--mix", "uniform"], "--mix needs --dask"),
    (["--dask", "local:1", "-p", "x"], "-p/--predictions is not supported with --dask yet"),
    (["--dask", "local:1", "--readable-model", "x"], "--readable-model is not supported with --dask yet"),
    (["--dask", "local:1", "--invert-hash", "x"], "--invert-hash is not supported with --dask yet"),
    (["--dask", "local:1", "--plot", "x.png"], "--plot is not supported with --dask yet"),
    (["--dask", "local:1", "--trace", "x"], "--trace is not supported with --dask yet"),
    (["--dask", "local:1", "-c"], "-c/--cache is not supported with --dask yet"),
    (["--dask", "local:1", "--cache-file", "x"], "--cache-file is not supported with --dask yet"),
    (["--dask", "local:1", "--audit"], "-a/--audit is not supported with --dask yet"),
    (["--dask", "local:1", "--objective"], "--objective is not supported with --dask yet"),
    (["--dask", "local:1", "-t"], "-t/--testonly is not supported with --dask yet"),
    (["--dask", "local:1", "--shuffle"], "--shuffle is not supported with --dask yet"),
    (["--dask", "local:1", "-i", "{tmp}/nope.m"], "cannot read model {tmp}/nope.m: No such file or directory"),
    (["--dask", "local:1", "--sync-every", "0"], "--sync-every must be at least 1 (got 0)"),
    (["--dask", "local:1", "--split", "0"], "--split must be at least 1 (got 0)"),
    (["--sync-every", "10"], "--sync-every needs --dask"),
    (["--split", "2"], "--split needs --dask"),
    (["--dask", "local:1", "--algo", "scd", "--sync-every", "10"],
     "--algo scd is a batch method: it cannot sync every N examples"),
    (["--dask", "local:1", "--predict-only-model"], "--predict-only-model is not supported with --dask yet"),
])
def test_cli_errors_are_one_line(tmp_path, monkeypatch, args, message):
    """None of these starts a cluster (the bad address waits CONNECT_TIMEOUT, 0.5 s here)."""
    monkeypatch.setattr(sd, "CONNECT_TIMEOUT", 0.5)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    data = [] if "-d" in args else ["-d", TRAIN]
    res = cli("train", *args, *data, expect_ok=False)
    assert res.exit_code == 1 and res.stderr == f"Error: {message.replace('{tmp}', str(tmp_path))}\n"


def test_cli_without_dask_is_one_line(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "streamlearn.dask", None)     # import streamlearn.dask fails
    res = cli("train", "--dask", "local:1", "-d", TRAIN, expect_ok=False)
    assert res.exit_code == 1 and res.stderr == "Error: --dask needs Dask: pip install 'streamlearn[dask]'\n"


def same_model(a, b) -> None:
    """Two parsed models are the same model (the header's "mix" record apart)."""
    assert without_mix(a[0]) == without_mix(b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[2], b[2])


def test_sync_every_is_train_i_on_consecutive_pieces(client, tmp_path):
    """``sync_every=N`` on one shard: each period resumes through -i on the shard's next N examples
    (from the worker's parse cache after the first period), so two passes equal ``train`` then five
    ``train -i`` on the file's consecutive pieces of N lines (one example per line here)."""
    options = {**LEARNERS["tg"], **COMMON}
    lines = TRAIN.read_bytes().splitlines(keepends=True)
    pieces = []
    for j, a in enumerate(range(0, len(lines), 700)):
        pieces.append(tmp_path / f"piece{j}.vw")
        pieces[-1].write_bytes(b"".join(lines[a:a + 700]))
    model = None
    for step, piece in enumerate(pieces * 2):
        out = tmp_path / f"m{step}"
        cli("train", "-d", piece, "-f", out, "--quiet", *(flags(options) if model is None else ["-i", model]))
        model = out
    rows = []
    mixed = parse_model(sd.train(client, [TRAIN], passes=2, sync_every=700, on_round=rows.append, **options))
    same_model(mixed, load_model(str(model)))
    assert [(r["round"], r["rounds"], r["pass"], r["examples"]) for r in rows] == [
        (1, 6, 1, 700), (2, 6, 1, 700), (3, 6, 1, 600), (4, 6, 2, 700), (5, 6, 2, 700), (6, 6, 2, 600)]
    assert mixed[0]["mix"]["syncs"] == 6


def test_sync_every_with_uneven_shards(client):
    """Two shards of 2,000 and 1,000 examples, a sync every 600: the shorter one sits out the last
    two periods of each pass (its examples are used up); a rerun gives the same bytes."""
    rows = []
    options = {**LEARNERS["ftrl"], **COMMON}
    files = [TRAIN, SAMPLES / "gauss.train.vw"]
    data = sd.train(client, files, passes=2, sync_every=600, on_round=rows.append, **options)
    assert [(r["shards"], r["examples"]) for r in rows] == [(2, 1200), (2, 1000), (1, 600), (1, 200)] * 2
    assert sd.train(client, files, passes=2, sync_every=600, **options) == data


def test_split_byte_ranges_are_their_files(client, tmp_path):
    """``split=2`` cuts a plain file at a line end near its middle: the same model as those two halves
    given as files, over two passes (the second from the workers' parse caches)."""
    raw = TRAIN.read_bytes()
    (a0, b0), (a1, b1) = sd.split_ranges(str(TRAIN), 2)
    assert a0 == 0 and b0 == a1 and b1 == len(raw) and raw[a1 - 1:a1] == b"\n" and abs(a1 - len(raw) / 2) < 200
    halves = [tmp_path / "h0.vw", tmp_path / "h1.vw"]
    halves[0].write_bytes(raw[:a1])
    halves[1].write_bytes(raw[a1:])
    options = {**LEARNERS["tg"], **COMMON}
    ranged = parse_model(sd.train(client, [TRAIN], passes=2, split=2, **options))
    same_model(ranged, parse_model(sd.train(client, halves, passes=2, **options)))
    assert ranged[0]["mix"]["workers"] == 2


def test_a_byte_range_reports_the_files_line_number(client, tmp_path):
    bad = tmp_path / "bad.vw"
    bad.write_text("1 |a x\n-1 |a y\n1 |a z\nabc |a w\n")
    with pytest.raises(ValueError) as exc:
        sd.train(client, [bad], split=2, strict=True)
    assert str(exc.value).startswith(f"{bad} line 4: ") and "\n" not in str(exc.value)


def test_initial_model_is_train_i(client, tmp_path):
    """``initial_model``: the first round resumes that model, as ``train -i`` does."""
    options = {**LEARNERS["ftrl"], **COMMON}
    cli("train", "-d", TRAIN, "-f", tmp_path / "m1", "--quiet", *flags(options))
    cli("train", "-i", tmp_path / "m1", "-d", SAMPLES / "gauss.train.vw", "-f", tmp_path / "m2", "--quiet")
    mixed = parse_model(sd.train(client, [SAMPLES / "gauss.train.vw"], initial_model=str(tmp_path / "m1")))
    same_model(mixed, load_model(str(tmp_path / "m2")))


@pytest.mark.parametrize("passes", [1, 2])
def test_a_worker_lost_mid_round_changes_nothing(client, tmp_path, passes):
    """A worker process that dies inside its task (after training its part of the shard, before
    returning: the hook ``_arm_fault``) costs one task that Dask runs again on a live worker (without
    the dead worker's parse cache, with two passes; reading on from its byte offset, with one): the
    model is byte for byte the one of an undisturbed run."""
    from distributed import Client, LocalCluster

    options = {**LEARNERS["tg"], **COMMON}
    files = [TRAIN, SAMPLES / "gauss.train.vw"]
    reference = sd.train(client, files, passes=passes, sync_every=800, **options)
    marker = tmp_path / "fault"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      scheduler_kwargs={"dashboard": False}) as cluster, Client(cluster) as c:
        c.run(sd._arm_fault, str(marker))
        data = sd.train(c, files, passes=passes, sync_every=800, **options)
    assert marker.exists()      # a worker did die
    assert data == reference


def test_later_periods_read_the_parse_cache(tmp_path):
    """The first period of a shard parses all of it into the parse cache (``total`` is then known);
    later ones read their window from the cache: emptying the text file changes nothing."""
    options = {**LEARNERS["tg"], **COMMON}
    src, cache = tmp_path / "d.vw", tmp_path / "d.cache"
    shutil.copy(TRAIN, src)
    _, stats = sd._train_shard(sd.Shard(str(src)), options, None, (0, 700), str(cache))
    assert stats["total"] == 2000 and stats["examples"] == 700 and cache.exists()
    before = sd.train_shard(str(src), options, None, (700, 1400), str(cache))
    src.write_bytes(b"")
    assert sd.train_shard(str(src), options, None, (700, 1400), str(cache)) == before


@pytest.mark.parametrize("learner", sorted(LEARNERS))
@pytest.mark.parametrize("sync_every", [None, 700])
def test_one_shard_three_passes_is_train_passes_3(client, tmp_path, learner, sync_every):
    """One shard over three passes (with or without syncs within the pass) against ``streamlearn train
    --passes 3 --holdout-off``: the same weights to 1e-12 (each sync catches the lazy weights up, which
    only regroups sums)."""
    options = {**LEARNERS[learner], **COMMON}
    cli("train", "-d", TRAIN, "-f", tmp_path / "single.m", "--passes", "3", "--holdout-off", "--quiet",
        *flags(options))
    single = load_model(str(tmp_path / "single.m"))
    mixed = parse_model(sd.train(client, [TRAIN], passes=3, sync_every=sync_every, holdout_off=True, **options))
    np.testing.assert_array_equal(mixed[1], single[1])
    # tg's stamped float32 penalty (issue 30): each sync's save rounds a = P to float32 and the load
    # restarts its epoch base at 0, where the single run keeps a = P - (LAST - C) r: float32 ulps of P
    tol = 1e-5 if learner == "tg" else 0.0
    np.testing.assert_allclose(mixed[2], single[2], rtol=tol, atol=tol or 1e-12)


def test_one_pass_periods_read_on_from_where_the_last_stopped(client, tmp_path):
    """One pass with ``sync_every``: each period of a plain file starts at the byte after its
    predecessor's last example (no parse cache), so the model is ``train`` then ``train -i`` on the
    consecutive pieces of 700 examples, exactly, with blank lines between the examples;
    the same file gzipped (which cannot be resumed mid-file: a parse cache) gives the same model."""
    import gzip

    options = {**LEARNERS["ftrl"], **COMMON}
    lines = TRAIN.read_bytes().splitlines(keepends=True)
    text, pieces = [], []
    for j, line in enumerate(lines):
        text.append(line + (b"\n" if j % 97 == 5 else b"") + (b"\n\n" if j % 301 == 0 else b""))
    data = tmp_path / "gaps.vw"
    data.write_bytes(b"".join(text))
    for j, a in enumerate(range(0, len(lines), 700)):
        pieces.append(tmp_path / f"piece{j}.vw")
        pieces[-1].write_bytes(b"".join(text[a:a + 700]))
    model = None
    for step, piece in enumerate(pieces):
        out = tmp_path / f"m{step}"
        cli("train", "-d", piece, "-f", out, "--quiet", *(flags(options) if model is None else ["-i", model]))
        model = out
    rows = []
    streamed = parse_model(sd.train(client, [data], sync_every=700, on_round=rows.append, **options))
    same_model(streamed, load_model(str(model)))
    assert [(r["examples"], r["rounds"]) for r in rows] == [(700, 3), (700, 3), (600, 3)]
    packed = tmp_path / "gaps.vw.gz"
    packed.write_bytes(gzip.compress(data.read_bytes()))
    same_model(parse_model(sd.train(client, [packed], sync_every=700, **options)), streamed)


def test_one_pass_periods_of_split_shards(client, tmp_path):
    """``split=2`` and one pass with a sync every 300 examples: the periods of each half follow each
    other (the shorter half sits out once it is used up), and a malformed line met in a later period
    is reported with its number in the file."""
    rows = []
    options = {**LEARNERS["tg"], **COMMON}
    sd.train(client, [TRAIN], split=2, sync_every=300, on_round=rows.append, **options)
    (a0, b0), (a1, b1) = sd.split_ranges(str(TRAIN), 2)
    first = TRAIN.read_bytes()[:a1].count(b"\n")
    assert sum(r["examples"] for r in rows) == 2000 and rows[0]["examples"] == 600
    assert [r["shards"] for r in rows][-1] >= 1 and len(rows) == -(-max(first, 2000 - first) // 300)
    bad = tmp_path / "bad.vw"
    bad.write_bytes(TRAIN.read_bytes() + b"abc |a w\n")
    with pytest.raises(ValueError) as exc:
        sd.train(client, [bad], split=2, sync_every=300, strict=True, **options)
    assert str(exc.value).startswith(f"{bad} line 2001: ") and "\n" not in str(exc.value)
