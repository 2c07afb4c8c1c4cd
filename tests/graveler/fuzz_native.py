"""Fuzzing the C range-file reader (``graveler/_native.c``) against the Python loops it speeds up.

A range file comes from another installation's store, so a malformed one must give a clear error, never a crash,
an out-of-bounds read or a hang. This harness builds the extension with AddressSanitizer and
UndefinedBehaviorSanitizer into a cache directory, and runs it in a child process (``LD_PRELOAD`` of libasan,
``PYTHONMALLOC=malloc`` so every Python buffer sits in ASan's heap). The child feeds both implementations the same
mutated range and metarange files (bit flips, truncations, grown lengths, crafted varints, restart counts and block
handles, blocks repacked with a valid checksum so the damage reaches the decoders) from lakeFS's own files and from
files ``sstable_writer`` writes, and compares, step by step (index blocks, data blocks, records, range-ID hash input,
unchanged records against the original), the C result with the Python one: the same value, or a refusal at the
same step. A sanitizer report or a crash ends the child: the parent records the input, saves it, and goes on after
it. An input that takes longer than ``--hang-seconds`` is a hang.

    python -m tests.graveler.fuzz_native --inputs 200000 --seed 1

Input ``i`` of seed ``S`` is the same on every run (``--replay I`` runs one input and prints both outcomes).

This module is the command and the parent/child runner; the sanitized build is ``fuzz_build``, the inputs
``fuzz_inputs`` (over the file structure of ``fuzz_layout``), the step-by-step comparison ``fuzz_compare``.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.graveler.fuzz_build import build_sanitized, load_extension, sanitizer_env
from tests.graveler.fuzz_compare import Outcome, compare
from tests.graveler.fuzz_inputs import make_input

#: What a sanitizer prints before it ends the process.
_SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: UndefinedBehaviorSanitizer")


# --------------------------------------------------------------------------------------------------------- child
def _child(path: Path, seed: int, start: int, stop: int) -> int:
    """Runs inputs ``start``..``stop``; prints ``> i`` before each, one JSON line per disagreement, a summary."""
    native = load_extension(path)
    kinds: Counter[str] = Counter()
    for i in range(start, stop):
        print(f"> {i}", flush=True)
        how, data, verify, base = make_input(seed, i)
        c, py = compare(native, data, verify, base)
        kinds[c[0] if c[0] != "refused" else f"refused:{c[1]}"] += 1
        if c != py or c[0] == "raised":
            differs = next((n for n, (a, b) in enumerate(zip(c, py, strict=False)) if a != b), len(c))
            print(json.dumps({"input": i, "how": how, "verify": verify, "differs_at": differs, "c": _short(c),
                              "python": _short(py)}))  # fmt: skip
    print("= " + json.dumps(dict(kinds)), flush=True)
    return 0


def _short(o: Outcome) -> list[str]:
    return [str(x)[:300] for x in o]


# -------------------------------------------------------------------------------------------------------- parent
@dataclass
class Report:
    inputs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    crashes: list[dict[str, Any]] = field(default_factory=list)
    hangs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def findings(self) -> int:
        return len(self.disagreements) + len(self.crashes) + len(self.hangs)


def fuzz(
    inputs: int,
    seed: int,
    *,
    hang_seconds: float = 20.0,
    save_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Run ``inputs`` inputs of ``seed`` through the sanitized extension in child processes (a new one after each
    crash or hang, at most one per input); each finding's input is written to ``save_dir``."""
    path = build_sanitized()
    env = sanitizer_env()
    report = Report()
    start = 0
    root = Path(__file__).resolve().parents[2]
    for _ in range(inputs + 1):  # each child ends at the last input, or one input further on
        if start >= inputs:
            break
        cmd = [sys.executable, "-m", "tests.graveler.fuzz_native", "--child", str(path), "--seed", str(seed),
               "--start", str(start), "--inputs", str(inputs)]  # fmt: skip
        start = _run_child(cmd, env, root, start, inputs, hang_seconds, report, save_dir, seed, progress)
    report.inputs = inputs
    return report


def _run_child(
    cmd: list[str],
    env: dict[str, str],
    cwd: Path,
    start: int,
    stop: int,
    hang_seconds: float,
    report: Report,
    save_dir: Path | None,
    seed: int,
    progress: Callable[[str], None] | None,
) -> int:
    """One child: reads its lines until it ends; returns the input to go on from."""
    child = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(child.stdout, selectors.EVENT_READ)
    current, finished, last = start, False, time.monotonic()
    for _ in range(10 * (stop - start) + 10):
        if not sel.select(timeout=min(1.0, hang_seconds)):
            if time.monotonic() - last > hang_seconds:
                child.kill()
                child.wait(30)
                report.hangs.append(_finding(seed, current, "hang", save_dir))
                return current + 1
            if child.poll() is None:
                continue
        line = child.stdout.readline()
        if not line:
            break
        last = time.monotonic()
        if line.startswith("> "):
            current = int(line[2:])
            if progress is not None and current % 10_000 == 0 and current > start:
                progress(f"{current} inputs, {report.findings} findings")
        elif line.startswith("= "):
            report.outcomes.update(json.loads(line[2:]))
            finished = True
        elif line.startswith("{"):
            found = json.loads(line)
            report.disagreements.append(found)
            _save(save_dir, seed, found["input"], "disagreement")
    sel.close()
    err = child.stderr.read()
    code = child.wait(60)
    if finished and code == 0:
        return stop
    found = _finding(seed, current, f"exit {code}", save_dir)
    found["stderr"] = _sanitizer_lines(err)
    report.crashes.append(found)
    return current + 1


def _sanitizer_lines(err: str) -> str:
    lines = err.splitlines()
    marks = [n for n, line in enumerate(lines) if any(m in line for m in _SANITIZER_MARKS)]
    first = marks[0] if marks else max(0, len(lines) - 30)
    return "\n".join(lines[first : first + 30])


def _finding(seed: int, i: int, what: str, save_dir: Path | None) -> dict[str, Any]:
    how, _, verify, _ = make_input(seed, i)
    _save(save_dir, seed, i, what)
    return {"input": i, "how": how, "verify": verify, "what": what}


def _save(save_dir: Path | None, seed: int, i: int, what: str) -> None:
    if save_dir is None:
        return
    save_dir.mkdir(parents=True, exist_ok=True)
    _, data, verify, _ = make_input(seed, i)
    (save_dir / f"seed{seed}-input{i}-{what.replace(' ', '-')}-verify{int(verify)}.sst").write_bytes(data)


def _replay(seed: int, i: int) -> int:
    """One input in this process (run under the sanitizer's environment by ``--replay``)."""
    native = load_extension(build_sanitized())
    how, data, verify, base = make_input(seed, i)
    c, py = compare(native, data, verify, base)
    print(json.dumps({"input": i, "how": how, "verify": verify, "size": len(data), "c": _short(c),
                      "python": _short(py), "same": c == py}, indent=1))  # fmt: skip
    return 0 if c == py else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.graveler.fuzz_native", description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hang-seconds", type=float, default=20.0)
    parser.add_argument("--save", type=Path, default=None, help="where to write the inputs of findings")
    parser.add_argument("--replay", type=int, default=None, help="run input N alone under the sanitizers")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        return _child(args.child, args.seed, args.start, args.inputs)
    if args.replay is not None:
        if "LD_PRELOAD" not in os.environ:
            os.execve(sys.executable, [sys.executable, "-m", "tests.graveler.fuzz_native", *sys.argv[1:]],
                      sanitizer_env())  # fmt: skip
        return _replay(args.seed, args.replay)
    started = time.monotonic()
    report = fuzz(args.inputs, args.seed, hang_seconds=args.hang_seconds, save_dir=args.save,
                  progress=lambda line: print(f"[fuzz] {line}", file=sys.stderr, flush=True))  # fmt: skip
    summary = {
        "inputs": report.inputs, "seed": args.seed, "seconds": round(time.monotonic() - started, 1),
        "outcomes": dict(report.outcomes), "disagreements": len(report.disagreements),
        "crashes": len(report.crashes), "hangs": len(report.hangs),
    }  # fmt: skip
    for found in [*report.crashes, *report.hangs, *report.disagreements][:20]:
        print(json.dumps(found, indent=1))
    print(json.dumps(summary))
    return 0 if report.findings == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
