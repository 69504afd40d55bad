"""Comparing a kernel's arrays with a reference's."""

import numpy as np


def allclose(a, b, tol=1e-9):
    """Equal to ``tol``, relative and absolute."""
    return np.allclose(a, b, rtol=tol, atol=tol)
