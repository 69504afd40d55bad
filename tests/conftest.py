from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

#: ``make fuzz`` (``--hypothesis-profile=fuzz``): no deadline and no health checks for the long fuzzing
#: runs (the fuzzers' own example counts scale with STREAMLEARN_FUZZ_SCALE); other tests keep the default
settings.register_profile("fuzz", max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck),
                          print_blob=True)
#: ``make test`` (and so CI, ``.ci/run``): the same examples on every run (``derandomize``), so that a
#: run's verdict does not depend on a draw, and no example database is written into the clone. Random
#: exploration is ``make fuzz``'s and a bare ``pytest``'s. The reason: a property comparing a kernel with
#: its float64 reference at 1e-9 can meet, by chance, a stream where VW's invariant logistic update is
#: ill-conditioned (scale * ppu just above its 1e-6 switch, |p| large: u = -(y W(x) + p) / ppu cancels,
#: and one ulp of p moves a weight by ~1e-9); such a stream is a precision limit of the formula, not a fault
#: of either side.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture
def shared():
    """../shared (data and references for developers and CI); tests using it skip when absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    return SHARED
