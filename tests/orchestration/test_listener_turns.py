"""The hooks listeners of a mirror take turns waiting across the daemon's next loop (``hook_listeners.listen``), so
that, run the way Dagster's sensor daemon runs sensors (a loop every ``DAEMON_LOOP_SECONDS`` that starts the
tick of every sensor whose last tick has ended), some listener waits at every moment. Time is scaled down and
the queue stays empty (every tick waits its whole wait)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from lakefs_mirror_dagster.orchestration.mirroring import hook_listeners

SCALE = 0.2  # 5 s loops become 1 s


def _daemon(listeners: list[str], wait: float, loops: int) -> list[tuple[float, float]]:
    """Run ``loops`` daemon loops; the (start, end) of every listening tick."""
    spans: list[tuple[float, float]] = []
    running: dict[str, threading.Thread] = {}
    lock = threading.Lock()

    def tick(name: str) -> None:
        start = time.monotonic()
        hook_listeners.listen(None, "m", name, start, wait, claim=True)  # type: ignore[arg-type]
        with lock:
            spans.append((start, time.monotonic()))

    began = time.monotonic()
    for n in range(loops):
        for name in listeners:
            if name not in running or not running[name].is_alive():
                running[name] = threading.Thread(target=tick, args=(name,))
                running[name].start()
        time.sleep(max(0.0, began + (n + 1) * hook_listeners.DAEMON_LOOP_SECONDS - time.monotonic()))
    for thread in running.values():
        thread.join()
    return [(s - began, e - began) for s, e in spans]


def _longest_gap(spans: list[tuple[float, float]], start: float, end: float) -> float:
    gap, covered = 0.0, start
    for s, e in sorted(spans):
        if s > covered:
            gap = max(gap, min(s, end) - covered)
        covered = max(covered, e)
        if covered >= end:
            break
    return max(gap, end - covered)


@pytest.fixture
def scaled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hook_listeners, "DAEMON_LOOP_SECONDS", 5.0 * SCALE)
    monkeypatch.setattr(hook_listeners, "LOOP_MARGIN_SECONDS", 1.5 * SCALE)

    def wait_woken(service: Any, until: float, **_: Any) -> list[Any]:
        time.sleep(max(0.0, until - time.monotonic()))
        return []

    monkeypatch.setattr(hook_listeners, "wait_woken", wait_woken)


def test_two_listeners_leave_no_moment_without_a_waiting_tick(scaled: None) -> None:
    loops = 10
    end = (loops - 1) * 5.0 * SCALE
    one = _daemon(["commits"], 7.5 * SCALE, loops)
    two = _daemon(["commits", "hooks_2"], 7.5 * SCALE, loops)
    # one listener waiting across the next loop is skipped there: nobody waits for 2.5 s of every 10 s
    assert _longest_gap(one, 0.0, end) >= 2.0 * SCALE
    # two take turns: the one whose turn it is waits across the loop, the other is started again in it
    assert _longest_gap(two, 0.0, end) < 0.5 * SCALE, sorted(two)
    assert max(e - s for s, e in two) > 5.0 * SCALE  # someone did wait across a loop
