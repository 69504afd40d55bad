from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

#: ``make fuzz`` (``--hypothesis-profile=fuzz``): no deadline and no health checks for the long fuzzing
#: runs (the fuzzers' own example counts scale with STREAMLEARN_FUZZ_SCALE); other tests keep the default
settings.register_profile("fuzz", max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck),
                          print_blob=True)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture
def shared():
    """../shared (data and references for developers and CI); tests using it skip when absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    return SHARED
