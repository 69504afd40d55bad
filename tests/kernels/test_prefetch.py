"""The prefetch hint reads and writes nothing: the table is unchanged, for binary and one-against-all
rows, including rows at the end of the table."""

import numpy as np

from streamlearn.core.prefetch import prefetch_example


def test_prefetch_leaves_the_table_as_it_was():
    rng = np.random.default_rng(0)
    for cols in (1, 3, 6):
        table = rng.random((1 << 8, cols))
        before = table.copy()
        idx = np.array([0, 5, 255, 17, 3], np.int64)
        prefetch_example(table, idx, 0, idx.shape[0], 1, 1, 255)
        prefetch_example(table, idx, 1, 4, 32, 20, 255)      # class rows (h * 32) & mask + c
        prefetch_example(table, idx, 2, 2, 1, 1, 255)        # no features
        assert np.array_equal(table, before)


def test_prefetch_read_leaves_the_array_as_it_was():
    from numba import njit

    from streamlearn.core.prefetch import prefetch_read

    @njit
    def touch(a, positions):
        for p in positions:
            prefetch_read(a, p)     # a hint: past the end included (the parser's last line end)
        return a.sum()

    a = np.arange(100, dtype=np.uint8)
    before = a.copy()
    assert touch(a, np.array([0, 7, 99, 100], np.int64)) == before.sum()
    assert np.array_equal(a, before)
