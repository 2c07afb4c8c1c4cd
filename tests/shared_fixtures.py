"""Where lakeFS's own range files live: ``shared/`` beside the checkout (as in CI), else ``/work/shared``."""

from __future__ import annotations

from pathlib import Path

_CANDIDATES = (
    Path(__file__).resolve().parents[2] / "shared",
    Path("/work/shared"),
)


def _find() -> Path:
    for root in _CANDIDATES:
        path = root / "fixtures" / "lakefs-sstables"
        if path.is_dir():
            return path
    raise FileNotFoundError(f"lakefs-sstables fixtures not found in {[str(c) for c in _CANDIDATES]}")


SSTABLE_FIXTURES = _find()
