"""SMIDAS (placeholder while it is written)."""
from numba import njit


@njit(cache=True, nogil=True)
def learn_smidas_block(indptr, idx, val, labels, weights, bases, start, end, table, prm, st, preds):
    return end


@njit(cache=True, nogil=True)
def finalize(table, prm, st):
    pass


def in_force(table, rows, p, st):
    raise NotImplementedError


def after_load(table, prm, st):
    raise NotImplementedError
