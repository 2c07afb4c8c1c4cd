"""Fault trials through the link's proxies: a reset in the middle of a body, a blackhole for a while, a slow close,
truncated responses and a link that drops to 1 Mbit/s, each injected while a sync copies objects. Every trial:
the sync under the fault ends cleanly (finished, or failed the way an operator can read), no mirror ref is ever
at a commit that is not fully present and verified, and once the link heals the next sync converges with nothing
left in flight.

    pytest tests/wan/test_link_faults.py -s                    # the suite's form: 3 trials per kind
    .venv/bin/python benchmarks/wan_trials.py --trials 20      # the long run: 20 per kind (~10 min quiet)
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from tests.faults.rig import FaultRig

from .link import LinkFaults
from .trial import KINDS, run_trial

pytestmark = pytest.mark.integration

TRIALS = int(os.environ.get("LAKEFS_MIRROR_WAN_TRIALS", "3"))
#: How long each fault lasts (at most: it ends with the sync); the long run holds the blackhole longer.
FAULT_S = float(os.environ.get("LAKEFS_MIRROR_WAN_FAULT_SECONDS", "1.0"))
#: The trials run over a 20 ms link (the 80 ms one is tests/wan/test_reset_mid_transfer.py's), so that 15 of
#: them fit the suite's budget; the faults are the same.
TRIAL_RTT_MS = 20.0


@pytest.mark.parametrize("kind", KINDS)
def test_fault_trials_over_the_link(wan_rig: FaultRig, link: LinkFaults, kind: str) -> None:
    link.spec = replace(link.spec, rtt_ms=TRIAL_RTT_MS, jitter_ms=2.0)  # what heal() restores, too
    link.reshape(link.spec)
    results = []
    for trial in range(TRIALS):
        result = run_trial(wan_rig, link, kind, fault_s=FAULT_S)
        print(f"\n[wan] trial {trial + 1}/{TRIALS} {result.describe()}")
        results.append(result)
        assert result.ok, (
            f"{result.describe()}\nviolations: {result.violations}\nfaulted sync:\n{result.faulted_tail}\n"
            f"final sync:\n{result.final_tail}"
        )
    assert any(r.mid_transfer for r in results), "no trial injected its fault while objects were copying"
