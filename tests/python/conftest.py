"""Shared setup: import path for the binding, the process time zone, store fixtures."""
import importlib.util
import os
import sys
import time
from pathlib import Path

# ADK formats memory timestamps in the process's local zone; a non-UTC zone with a half-hour
# offset catches UTC/local mix-ups. Set before anything formats a time.
os.environ["TZ"] = "Asia/Kolkata"
time.tzset()
assert time.localtime(0).tm_gmtoff == 19800, "tzdata missing: Asia/Kolkata did not take effect"

REPO = Path(__file__).resolve().parents[2]
# An installed mnem (the wheel, as scripts/test-python runs these tests) is the one under test;
# without one, the source tree's binding is, with the library MNEM_LIB names.
if importlib.util.find_spec("mnem") is None:
    sys.path.insert(0, str(REPO / "bindings" / "python"))

import pytest  # noqa: E402


@pytest.fixture
def store_dir(tmp_path):
    d = tmp_path / "store"
    return str(d)
