"""The long run of the WAN fault trials: ``--trials`` trials of every fault kind through the link's proxies (reset
mid-body, blackhole, slow close, truncated responses, a drop to 1 Mbit/s), the suite's own test
(``tests/wan/test_link_faults.py``) run with more trials, then a table of the outcomes per kind.

    .venv/bin/python benchmarks/wan_trials.py --trials 20 [--fault-seconds 1.0] [--kinds reset,blackhole,...]

Each trial prints one ``[wan] trial`` line; any violation, unclean exit, failed convergence or ref left in flight
fails the run (exit status 1) and is printed whole.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("reset", "blackhole", "slow_close", "truncated", "slow")
_LINE = re.compile(
    r"\[wan\] trial \d+/\d+ (?P<kind>\w+): fault (?P<fault>[\d.]+)s (?P<when>mid-transfer|AFTER the sync), "
    r"faulted sync exit (?P<exit>-?\d+) \((?P<clean>clean|UNCLEAN)\), (?P<checks>\d+) invariant checks, "
    r"(?P<violations>\d+) violations, final sync exit (?P<final>-?\d+), in flight after: (?P<inflight>.*?) "
    r"\(syncs (?P<s1>[\d.]+)s \+ (?P<s2>[\d.]+)s, trial (?P<trial>[\d.]+)s\)"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=20, help="trials per fault kind (default 20)")
    parser.add_argument("--fault-seconds", type=float, default=1.0, help="how long each fault lasts at most")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated subset of {', '.join(KINDS)}")
    args = parser.parse_args()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if bad := [k for k in kinds if k not in KINDS]:
        parser.error(f"unknown fault kind(s): {', '.join(bad)} (known: {', '.join(KINDS)})")
    if args.trials < 1 or args.fault_seconds <= 0:
        parser.error("--trials must be at least 1 and --fault-seconds more than 0")
    env = {
        **os.environ,
        "LAKEFS_MIRROR_WAN_TRIALS": str(args.trials),
        "LAKEFS_MIRROR_WAN_FAULT_SECONDS": str(args.fault_seconds),
    }
    selected = " or ".join(f"[{k}]" for k in kinds)
    argv = [sys.executable, "-m", "pytest", "tests/wan/test_link_faults.py", "-s", "-q", "-p", "no:cacheprovider"]
    argv += ["-k", selected] if len(kinds) < len(KINDS) else []
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    per_kind: dict[str, list[re.Match[str]]] = defaultdict(list)
    for line in proc.stdout:
        print(line, end="", flush=True)
        if match := _LINE.search(line):
            per_kind[match["kind"]].append(match)
    code = proc.wait()
    print(f"\n{'kind':<11} {'trials':>6} {'mid-transfer':>12} {'faulted exit 0/1/2':>18} {'unclean':>7} "
          f"{'violations':>10} {'converged':>9} {'in flight':>9} {'trial s (median)':>16}")  # fmt: skip
    for kind in kinds:
        runs = per_kind.get(kind, [])
        exits = [int(m["exit"]) for m in runs]
        trial_s = sorted(float(m["trial"]) for m in runs)
        print(
            f"{kind:<11} {len(runs):>6} {sum(m['when'] == 'mid-transfer' for m in runs):>12} "
            f"{f'{exits.count(0)}/{exits.count(1)}/{exits.count(2)}':>18} "
            f"{sum(m['clean'] != 'clean' for m in runs):>7} {sum(int(m['violations']) for m in runs):>10} "
            f"{sum(m['final'] == '0' for m in runs):>9} {sum(m['inflight'] != 'none' for m in runs):>9} "
            f"{trial_s[(len(trial_s) - 1) // 2] if trial_s else 0.0:>16.1f}"
        )
    print(f"\npytest exit status {code}: {'all trials held' if code == 0 else 'FAILED (see above)'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
