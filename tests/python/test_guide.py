"""docs/python.md runs as written: its ```python blocks, in order, in one namespace, in an empty
directory, with SOURCE naming the source tree (the blocks are found by tests/tools/run_guide.py's
reader of docs/gpu-guide.md's blocks). A block that raises fails the test, naming its line."""
import os
import sys
import traceback

import pytest

from conftest import SOURCE

sys.path.insert(0, str(SOURCE / "tests" / "tools"))
from run_guide import blocks  # noqa: E402


def test_every_block_of_the_tutorial_runs(tmp_path, monkeypatch):
    guide = SOURCE / "docs" / "python.md"
    found = blocks(guide.read_text(encoding="utf-8"), "python")
    assert len(found) >= 6
    monkeypatch.chdir(tmp_path)
    namespace = {"SOURCE": str(SOURCE), "__name__": "__guide__"}
    for block in found:
        first = block[0][0]
        code = "\n" * (first - 1) + "\n".join(line for _, line in block)  # line numbers as in the guide
        try:
            exec(compile(code, str(guide), "exec"), namespace)
        except Exception:
            pytest.fail(f"docs/python.md:{first}: the block failed\n{traceback.format_exc()}")
