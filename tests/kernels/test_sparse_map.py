"""The sparse store's compiled map (``streamlearn.core.sparse``) against a dict: rows handed out in the
order keys are first seen, the same row for the same key across calls and growths, rows back to slots,
unseen keys to the spare row when not inserting, and the memory of the map growing with the keys."""

import numpy as np
from hypothesis import given, settings, strategies as st

from streamlearn.core.sparse import MIN_SLOTS, SparseStore


def reference_rows(batches, bits, width):
    """The obvious map: a dict from the key (idx * width) & (2^bits - 1) to the order of first sight."""
    seen, out = {}, []
    for batch in batches:
        rows = []
        for i in batch:
            key = (int(i) * width) & ((1 << bits) - 1)
            rows.append(seen.setdefault(key, len(seen)))
        out.append(rows)
    return out, seen


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=3000), max_size=5),
       st.sampled_from([(32, 1), (18, 1), (12, 1), (32, 4), (20, 32)]))
def test_map_equals_a_dict(batches, shape):
    bits, width = shape
    # repeats and a few hot keys, as features are
    batches = [b + b[: len(b) // 3] for b in batches]
    store = SparseStore(bits, width, 1 << 30)
    got = [store.rows(np.array(b, np.uint32)).tolist() for b in batches]
    want, seen = reference_rows(batches, bits, width)
    assert got == want
    assert store.n_rows == len(seen)
    keys = np.array(list(seen), np.int64)
    assert store.key_of_row[:store.n_rows].tolist() == keys.tolist()
    # slots <-> table rows, offsets inside a feature's width kept
    for off in {0, width - 1}:
        slots = keys + off
        rows = store.table_rows_of_slots(slots, insert=False)
        assert rows.tolist() == [seen[int(k)] * width + off for k in keys]
        assert store.slots_of(rows).tolist() == slots.tolist()
    # the map at most half full
    assert store.n_rows <= store.ent.shape[0] // 2


def test_unseen_keys_go_to_the_spare_row_without_insertion():
    store = SparseStore(32, 1, 1000)
    store.rows(np.array([7, 9, 7], np.uint32))
    got = store.rows(np.array([9, 12345, 7], np.uint32), insert=False)
    assert got.tolist() == [1, 999, 0]
    assert store.n_rows == 2


def test_memory_grows_with_the_touched_features():
    store = SparseStore(32, 1, 1 << 30)
    assert store.ent.shape[0] == MIN_SLOTS
    rng = np.random.default_rng(0)
    keys = rng.choice(2**32, size=100_000, replace=False).astype(np.uint32)
    store.rows(keys)
    # the smallest power of two at least twice the keys
    assert store.ent.shape[0] == 1 << 18
    assert store.n_rows == 100_000


def test_a_full_store_is_one_error():
    import pytest

    from streamlearn.errors import OptionError
    store = SparseStore(32, 1, 3000)
    with pytest.raises(OptionError, match="weight store is full"):
        store.rows(np.arange(5000, dtype=np.uint32))
