"""One fault trial over the link: a sync copying small objects, a fault injected once copying is seen to have
begun, the invariant checked while the fault lasts and after the sync ended, then the link healed and one more
sync that must converge with nothing left in flight. Used by the suite (3 trials per kind) and by the long run
(``benchmarks/wan_trials.py --trials 20``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tests.faults.invariant import MirrorChecker
from tests.faults.rig import FaultRig, MirrorPair
from tests.faults.workload import content

from .link import LinkFaults, wait_for_copying

__all__ = ["KINDS", "TrialResult", "run_trial", "seed_source"]

#: Every kind of fault a trial can inject (see ``link.FAULTS``; ``slow``: the link drops to 1 Mbit/s).
KINDS = ("reset", "blackhole", "slow_close", "truncated", "slow")
#: One object copied at a time, so that the fault lands in the middle of the transfer on any machine.
_ONE_AT_A_TIME = {"REPLICATION_TRANSFER_CONCURRENCY": "1"}
_SYNC_TIMEOUT_S = 150.0


@dataclass
class TrialResult:
    kind: str
    mid_transfer: bool
    fault_seconds: float
    faulted_exit: int
    faulted_clean: bool
    faulted_tail: str
    faulted_log: str
    invariant_checks: int
    violations: list[str] = field(default_factory=list)
    final_exit: int = -1
    final_tail: str = ""
    in_flight_after: list[str] = field(default_factory=list)
    #: Seconds: the faulted sync, the final one, and the whole trial.
    timings: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def ok(self) -> bool:
        return self.faulted_clean and not self.violations and self.final_exit == 0 and not self.in_flight_after

    def describe(self) -> str:
        when = "mid-transfer" if self.mid_transfer else "AFTER the sync"
        return (
            f"{self.kind}: fault {self.fault_seconds:.1f}s {when}, "
            f"faulted sync exit {self.faulted_exit} ({'clean' if self.faulted_clean else 'UNCLEAN'}), "
            f"{self.invariant_checks} invariant checks, {len(self.violations)} violations, final sync exit "
            f"{self.final_exit}, in flight after: {self.in_flight_after or 'none'} "
            f"(syncs {self.timings[0]:.1f}s + {self.timings[1]:.1f}s, trial {self.timings[2]:.1f}s)"
        )


def seed_source(pair: MirrorPair, *, objects: int = 12, size: int = 16 * 1024) -> None:
    """``objects`` objects of ``size`` bytes on main, a branch with a few more, and a tag on it."""
    for i in range(objects):
        key = f"data/main/part-{i:03}.bin"
        pair.src.upload_object(pair.repo, "main", key, content(key, size + i))
    pair.src.commit(pair.repo, "main", f"{objects} objects")
    pair.src.create_branch(pair.repo, "side", "main")
    for i in range(2):
        key = f"data/side/part-{i:03}.bin"
        pair.src.upload_object(pair.repo, "side", key, content(key, size // 2 + i))
    pair.src.commit(pair.repo, "side", "two more")
    pair.src.create_tag(pair.repo, "v1", "side")


def run_trial(rig: FaultRig, link: LinkFaults, kind: str, *, fault_s: float = 1.0, objects: int = 8) -> TrialResult:
    """One trial of fault ``kind``, held for ``fault_s`` seconds (or until the sync ends, whichever is first)."""
    begun = time.monotonic()
    pair = rig.new_pair(f"wan-{kind.replace('_', '')}")
    seed_source(pair, objects=objects)
    checker = MirrorChecker(pair)
    rig.start_sync(pair.mirror, extra_env=_ONE_AT_A_TIME, timeout_s=_SYNC_TIMEOUT_S, label=f"sync under {kind}")
    violations: list[str] = []
    checks = 0
    mid = wait_for_copying(rig, pair.dst_ns)
    started = time.monotonic()
    if mid:
        link.inject(kind)
        try:
            for _ in range(int(fault_s / 0.25) + 1):
                if rig.zygote().finished() or time.monotonic() - started >= fault_s:
                    break
                violations += checker.refs_violations()
                checks += 1
                time.sleep(0.25)
        finally:
            link.heal()
    fault_seconds = time.monotonic() - started if mid else 0.0
    faulted = rig.sync_result()
    violations += checker.refs_violations(full=True)
    checks += 1
    final_exit, final_tail, final_s = faulted.returncode, "(the sync under the fault converged)", 0.0
    if faulted.returncode != 0 or checker.converged_violations():
        # Not converged yet: the next sync, over the healed link, must get there.
        final = rig.run_sync(pair.mirror, timeout_s=_SYNC_TIMEOUT_S, label=f"sync after {kind} healed")
        final_exit, final_tail, final_s = final.returncode, final.tail(12), final.seconds
    violations += checker.converged_violations()
    mirror = rig.service(rig.dst).mirror_named(pair.mirror)
    in_flight = [f"{r.kind} {r.ref}" for r in rig.service(rig.dst).mirrors.refs_in_flight(mirror.id)]
    return TrialResult(
        kind=kind,
        mid_transfer=mid,
        fault_seconds=fault_seconds,
        faulted_exit=faulted.returncode,
        faulted_clean=faulted.clean,
        faulted_tail=faulted.tail(12),
        faulted_log=faulted.output,
        invariant_checks=checks + 1,
        violations=violations,
        final_exit=final_exit,
        final_tail=final_tail,
        in_flight_after=in_flight,
        timings=(faulted.seconds, final_s, time.monotonic() - begun),
    )
