"""Every server a sync depends on dies in the middle of a sync and comes back; the mirror stays consistent.

The source lakeFS, the destination lakeFS, the destination's MinIO and the PostgreSQL mirrors database are
each stopped (SIGKILL, or SIGTERM for a graceful stop) while `lakefs-mirror sync --once` is copying objects,
kept down until the sync has ended (at most ``_OUTAGE_MAX_S``; at least ``_OUTAGE_MIN_S``) and restarted on
the same port with the same data (``devenv.restart``). Then the mirror must satisfy the invariant, the next
sync must converge, and the sync during the outage must have ended cleanly: finished, blocked refs, or a
one-line error; never a hang or an uncaught exception.
"""

from __future__ import annotations

import signal
import time

import pytest
from lakefs_mirror_devenv import DevenvError, start_server, stop_server

from .invariant import MirrorChecker
from .rig import DST, MINIO, SRC, FaultRig
from .workload import content

pytestmark = pytest.mark.integration

_OUTAGE_MIN_S, _OUTAGE_MAX_S = 3.0, 15.0
# Slow the copy down so the outage lands in the middle of it on any machine: one copy at a time, each after
# a pause (about 3s for the 32 objects).
_SLOW = {"REPLICATION_TRANSFER_CONCURRENCY": "1"}
_COPY_DELAY_S = 0.1


class UncleanExit(AssertionError):
    """The sync during the outage crashed (uncaught exception) or hung instead of failing cleanly."""


def _wait_for_first_writes(rig: FaultRig, dst_ns: str, *, at_least: int = 5, timeout_s: float = 120.0) -> int:
    """Bounded poll until the running sync has written ``at_least`` objects at the destination."""
    store = rig.store(DST)
    deadline = time.monotonic() + timeout_s
    for _ in range(int(timeout_s / 0.05)):
        written = sum(1 for o in store.list_prefix(f"{dst_ns}/data/"))
        if written >= at_least or rig.zygote().finished() or time.monotonic() > deadline:
            return written
        time.sleep(0.05)
    return 0


@pytest.mark.parametrize(
    ("kind", "name", "sig"),
    [
        ("lakefs", SRC, signal.SIGKILL),
        ("lakefs", DST, signal.SIGTERM),
        ("minio", MINIO, signal.SIGKILL),
        pytest.param("postgres", "", signal.SIGKILL),
    ],
    ids=["source-lakefs-sigkill", "destination-lakefs-sigterm", "minio-sigkill", "postgres-sigkill"],
)
def test_server_restart_in_the_middle_of_a_sync(rig: FaultRig, kind: str, name: str, sig: signal.Signals) -> None:
    pair = rig.new_pair("restart")
    for i in range(24):
        key = f"data/main/part-{i:03}.bin"
        pair.src.upload_object(pair.repo, "main", key, content(key, 3000 + i))
    pair.src.commit(pair.repo, "main", "24 objects")
    pair.src.create_branch(pair.repo, "side", "main")
    for i in range(8):
        key = f"data/side/part-{i:03}.bin"
        pair.src.upload_object(pair.repo, "side", key, content(key, 2000 + i))
    pair.src.commit(pair.repo, "side", "eight more")
    pair.src.create_tag(pair.repo, "v1", "side")
    checker = MirrorChecker(pair)

    rig.start_sync(
        pair.mirror, extra_env=_SLOW, copy_delay=_COPY_DELAY_S, timeout_s=300, label=f"sync during {kind} {name} outage"
    )
    written = _wait_for_first_writes(rig, pair.dst_ns)
    mid_sync = not rig.zygote().finished()
    stop_server(rig.env, kind, name, sig=sig)
    down = time.monotonic()
    time.sleep(_OUTAGE_MIN_S)
    for _ in range(int(_OUTAGE_MAX_S / 0.1)):
        if rig.zygote().finished() or time.monotonic() - down > _OUTAGE_MAX_S:
            break
        time.sleep(0.1)
    ended_during_outage = rig.zygote().finished()
    restart_s = start_server(rig.env, kind, name)
    outcome = rig.sync_result()
    print(
        f"\n[faults] {kind} {name} {sig.name} after {written} objects: down {time.monotonic() - down:.1f}s, "
        f"sync ended {outcome.returncode} after {outcome.seconds:.1f}s "
        f"({'during' if ended_during_outage else 'after'} the outage); restart took {restart_s:.1f}s\n{outcome.tail(6)}"
    )
    assert mid_sync, f"the sync finished before {kind} went down ({written} objects written): nothing was tested"
    assert not (violations := checker.refs_violations(full=True)), violations

    final = rig.run_sync(pair.mirror, label=f"sync after {kind} restart")
    assert final.returncode == 0, final.output[-4000:]
    assert not (violations := checker.converged_violations()), violations
    if not outcome.clean:
        raise UncleanExit(f"the sync during the outage did not end cleanly ({outcome.returncode}):\n{outcome.tail(30)}")


def test_restart_helpers_refuse_what_they_cannot_do(rig: FaultRig) -> None:
    """Bad requests name the problem and touch no server."""
    pids = rig.env.pids()
    with pytest.raises(DevenvError, match="unknown server kind 'redis'"):
        stop_server(rig.env, "redis", "x")
    with pytest.raises(DevenvError, match="no region 'nowhere'"):
        stop_server(rig.env, "lakefs", "nowhere")
    with pytest.raises(DevenvError, match="no MinIO server 'other'"):
        start_server(rig.env, "minio", "other")
    with pytest.raises(DevenvError, match="still running"):
        start_server(rig.env, "lakefs", SRC)
    assert rig.env.pids() == pids
