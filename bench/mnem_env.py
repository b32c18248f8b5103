"""Imported first by the benchmarks: the Python binding from this checkout, and the library
`MNEM_LIB` names, by default the release build in `$CARGO_TARGET_DIR` (as `scripts/env`
sets it)."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bindings" / "python"))
os.environ.setdefault("MNEM_LIB", os.path.join(os.environ.get("CARGO_TARGET_DIR", "/var/cache/mnem/target"),
                                               "release", "libmnem.so"))
