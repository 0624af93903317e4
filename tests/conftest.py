"""Test session settings."""

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="session")
def _single_threaded_blas():
    # The suite fits thousands of tiny models: BLAS threads only add
    # synchronisation there, and on a loaded 2-core machine they oversubscribe
    # (measured: the conformance suite took 10x longer with 2 threads).
    with threadpool_limits(limits=1):
        yield
