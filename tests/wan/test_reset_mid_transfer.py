"""A sync over an 80 ms link (``devenv up --link wan-src->wan-dst:rtt=80ms,jitter=5ms,rate=200Mbit``) whose
connections are reset while objects copy: the first object present at the mirror's store is the sign that copying
began, then every proxy of the link resets its connections for a while. The mirror's refs are checked against the
source byte for byte while that lasts and after (``tests/faults/invariant.py``); once the resets stop the mirror
converges, with no ref left in flight."""

from __future__ import annotations

import pytest

from tests.faults.rig import FaultRig

from .link import LinkFaults
from .trial import run_trial

pytestmark = pytest.mark.integration


def test_a_reset_in_the_middle_of_a_transfer_over_80ms_converges(wan_rig: FaultRig, link: LinkFaults) -> None:
    assert (link.spec.rtt_ms, link.spec.jitter_ms) == (80, 5)
    shapes = {t["name"]: t["attributes"] for t in link.proxy.toxics(link.proxies[0])}
    assert shapes["link-latency-downstream"] == {"latency": 40, "jitter": 5}  # the link the sync runs over

    # Longer than the store client's own retries of a read (obstore: 5, waits doubling from 0.1 s, up to about
    # 6 s in all), which absorb a shorter reset without a word: the sync's copy pool then sees the failure itself.
    result = run_trial(wan_rig, link, "reset", fault_s=8.0, objects=12)
    print(f"\n[wan] 80 ms link, {result.describe()}\n{result.faulted_tail}")
    assert result.mid_transfer, "the sync finished before the resets began: nothing was tested"
    # The resets reached the sync: it saw connections fail and retried (or gave up cleanly, for the next sync).
    assert result.faulted_exit != 0 or "retry" in result.faulted_log.lower(), result.faulted_tail
    assert result.faulted_clean, result.faulted_tail
    assert not result.violations, result.violations
    assert result.final_exit == 0, result.final_tail
    assert not result.in_flight_after, result.in_flight_after
