"""pytest set-up for the Python module's tests: the source tree (COLLSCHED_SOURCE_DIR, set by
ctest; else two levels up) and the command line (COLLSCHED_BINARY) the results are checked
against."""
import os
import pathlib

import pytest

SOURCE = pathlib.Path(os.environ.get("COLLSCHED_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BINARY = os.path.abspath(os.environ.get("COLLSCHED_BINARY", str(SOURCE / "build" / "tools" / "collsched")))

RING = """param n = 8
topology ring(n)
collective allgather
for t in 1 .. n - 1 {
  step t {
    for p in 0 .. n - 1 { send p -> (p + 1) % n msg b((p - t + 1 + n) % n) }
  }
}
"""


@pytest.fixture
def source():
    return SOURCE


@pytest.fixture
def binary():
    return BINARY


@pytest.fixture
def ring_text():
    return RING
