"""Waiting before trying again is written once, in ``lakefs_mirror_dagster/backoff.py``.

The source of the package and of the development environment is read for a hand-written backoff: a power with
a computed exponent (``2 ** attempt``), or a wait that grows inside a loop that sleeps (``delay *= 2``,
``delay = min(delay * 2, cap)``). A loop that polls at a fixed interval, or sleeps until a deadline, is not
backoff and is left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCES = [REPO / "lakefs_mirror_dagster", REPO / "devenv" / "lakefs_mirror_devenv"]
POLICY = REPO / "lakefs_mirror_dagster" / "backoff.py"


def _constant(node: ast.AST) -> bool:
    """A literal number, possibly negated or an arithmetic of literals (``2 ** 20``, ``1 << 10``)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    return isinstance(node, ast.BinOp) and _constant(node.left) and _constant(node.right)


def _sleeps(loop: ast.AST) -> bool:
    """Whether a loop waits: ``sleep(...)``, ``time.sleep(...)``, ``self._sleep(...)`` or ``event.wait(t)``."""
    for node in ast.walk(loop):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        if name.lstrip("_") == "sleep" or (name == "wait" and (node.args or node.keywords)):
            return True
    return False


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _grows(node: ast.AST) -> bool:
    """``x *= k`` or ``x = ...x * k...``: a wait multiplied on every turn."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Mult | ast.Pow):
        return True
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        target = node.targets[0].id
        return any(
            isinstance(b, ast.BinOp) and isinstance(b.op, ast.Mult) and target in _names(b)
            for b in ast.walk(node.value)
        )
    return False


def hand_written_backoff(source: str) -> Iterator[int]:
    """Line numbers of every hand-written backoff in ``source``."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and not _constant(node.right):
            yield node.lineno
        if isinstance(node, ast.For | ast.While) and _sleeps(node):
            yield from (inner.lineno for inner in ast.walk(node) if _grows(inner))


def _modules() -> Iterator[Path]:
    for root in SOURCES:
        yield from sorted(p for p in root.rglob("*.py") if p != POLICY)


def test_no_backoff_is_written_outside_the_policy() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}" for path in _modules() for line in hand_written_backoff(path.read_text())
    ]
    assert not found, "hand-written backoff (use lakefs_mirror_dagster.backoff.Backoff): " + ", ".join(found)


@pytest.mark.parametrize(
    "source",
    [
        # the five schedules this test replaced, in their own words
        "for attempt in range(5):\n    time.sleep(min(backoff * 2 ** (attempt - 1), 5.0))\n",
        "def _backoff(self, attempt):\n    return min(cap, base * 2 ** (attempt - 1)) * random.uniform(0.5, 1)\n",
        "delay = 0.05\nfor attempt in range(5):\n    time.sleep(delay)\n    delay *= 2\n",
        "for attempt in range(10):\n    if pending:\n        time.sleep(0.05 * 2**attempt)\n",
        "while True:\n    self._sleep(delay)\n    delay = min(delay * 2, 2.0)\n",
        "while not stop.wait(interval):\n    interval = interval * 1.5\n",
    ],
)
def test_this_test_sees_a_backoff(source: str) -> None:
    assert list(hand_written_backoff(source))


@pytest.mark.parametrize(
    "source",
    [
        # polling for an event at a fixed interval, or until a deadline, is not backoff
        "while not ready():\n    time.sleep(0.05)\n",
        "while time.monotonic() < deadline:\n    time.sleep(min(0.1, deadline - time.monotonic()))\n",
        "for n in range(polls):\n    size = size * 2\n",  # grows, but never waits
        "MIB = 2**20\nlimit = 4 * 2 ** 30\n",
        "time.sleep(max(0.0, until - time.monotonic()))\n",
    ],
)
def test_this_test_leaves_polling_alone(source: str) -> None:
    assert not list(hand_written_backoff(source))
