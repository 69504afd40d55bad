"""Comparing a kernel's arrays with a reference's."""

import numpy as np


def allclose(a, b, tol=1e-9):
    """Equal to ``tol``, relative and absolute."""
    return np.allclose(a, b, rtol=tol, atol=tol)


#: the tolerance of a float32 table (sgd's and tg's, issue 30) against a float64 reference, relative
#: and absolute: every stored weight, G and N is rounded to float32 (2^-24 relative) at each update
#: while the reference keeps float64, and the differences carry through the later predictions
TOL32 = 1e-5


def close_in(dtype, a, b):
    """``allclose`` to 1e-9 for a float64 table, to ``TOL32`` for a float32 one."""
    return allclose(a, b, TOL32 if np.dtype(dtype) == np.float32 else 1e-9)
