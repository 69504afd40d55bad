"""The serving tests' fixture: ``daemons(cwd, *args)`` starts a ``support.serving.Daemon`` and kills
those a test leaves running."""

import pytest

from support.serving import Daemon


@pytest.fixture
def daemons():
    started = []

    def start(*args, **kw):
        d = Daemon(*args, **kw)
        started.append(d)
        return d
    yield start
    for d in started:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
