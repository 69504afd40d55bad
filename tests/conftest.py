import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def shared():
    """../shared (data and references for developers and CI); tests using it skip when absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    return SHARED
