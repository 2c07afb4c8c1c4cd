"""``transfer.concurrency: auto`` (the default) over the suite's 80 ms link: the sync measures the round trip of its
own source reads and puts more than 16 copies in flight, and says so where an operator reads it: the pass's log
line and its result (``sync --once --json``). The mirror is then checked byte for byte against the source."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.faults.invariant import MirrorChecker
from tests.faults.rig import FaultRig
from tests.faults.workload import content

from .link import LinkFaults

pytestmark = pytest.mark.integration

OBJECTS = 300
_LINE = re.compile(
    r"object copies in flight: up to (\d+) \(transfer\.concurrency auto[^)]*\), (\d+) at most at once; "
    r"source reads' round trip (\d+) ms"
)


def test_auto_puts_more_than_16_copies_in_flight_over_an_80ms_link(wan_rig: FaultRig, link: LinkFaults) -> None:
    assert (link.spec.rtt_ms, link.spec.source_stores) == (80, True)  # the source store is behind the link
    pair = wan_rig.new_pair("wan-auto")
    with ThreadPoolExecutor(max_workers=8) as pool:
        keys = [f"data/part-{i:04}.bin" for i in range(OBJECTS)]
        list(pool.map(lambda k: pair.src.upload_object(pair.repo, "main", k, content(k, 4096)), keys))
    pair.src.commit(pair.repo, "main", f"{OBJECTS} objects")

    outcome = wan_rig.run_cli(wan_rig.dst, "sync", "--once", "--mirror", pair.mirror, "--json")
    assert outcome.returncode == 0, outcome.tail(20)
    [result] = [json.loads(line) for line in outcome.output.splitlines() if line.startswith("{")]
    flight = result["copies_in_flight"]
    assert flight["auto"] is True
    # 40 ms each way, 5 ms of jitter: the quickest of 16 reads is at least 70 ms, so at least 16 x 7 copies.
    assert flight["round_trip_seconds"] >= 0.070, flight
    assert flight["limit"] >= 112 and flight["peak"] > 16, flight
    line = _LINE.search(outcome.output)
    assert line is not None, outcome.tail(20)
    print(f"\n[wan] 80 ms link, {OBJECTS} objects: {line[0]}")
    assert (int(line[1]), int(line[2])) == (flight["limit"], flight["peak"])
    assert int(line[3]) == round(flight["round_trip_seconds"] * 1000)
    assert not MirrorChecker(pair).converged_violations()
