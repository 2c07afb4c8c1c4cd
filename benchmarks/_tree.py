"""Importing this module puts this working tree first on ``sys.path``, so a benchmark measures the package of the
tree it sits in, not whichever one the interpreter has installed. Every helper module that imports the package
imports this first; a child that must import another tree (``store_paths.py --baseline``) imports none of them."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["REPO_ROOT"]

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
