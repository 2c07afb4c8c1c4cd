"""``scripts/busy``: a command runs with two CPU-bound processes beside it for its whole length; they are gone when
it ends, its exit status is kept, and Ctrl-C (SIGINT to the foreground group) stops it and them alike."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

BUSY = Path(__file__).resolve().parents[1] / "scripts" / "busy"
# the command lists the other children of its parent (the script): the spinners, each seen running
LIST_SPINNERS = 'ps -o pid=,stat= --ppid $PPID | grep -v "^ *$$ " > "$0"'


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _spinners(listing: Path) -> list[int]:
    return [int(line.split()[0]) for line in listing.read_text().splitlines() if line.strip()]


def test_the_command_runs_beside_two_spinners_and_its_exit_status_is_kept(tmp_path: Path) -> None:
    listing = tmp_path / "spinners"
    done = subprocess.run(
        [str(BUSY), "bash", "-c", f"{LIST_SPINNERS}; exit 3", str(listing)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, done.stderr
    spinners = _spinners(listing)
    assert len(spinners) == 2, listing.read_text()
    assert not any(_alive(pid) for pid in spinners)  # killed once the command ended


def test_ctrl_c_stops_the_command_and_the_spinners(tmp_path: Path) -> None:
    listing, ready = tmp_path / "spinners", tmp_path / "ready"
    script = f'{LIST_SPINNERS}; touch "$1"; sleep 120'
    busy = subprocess.Popen([str(BUSY), "bash", "-c", script, str(listing), str(ready)], start_new_session=True)
    try:
        for _ in range(600):  # until the command has listed the spinners (at most 60 s)
            if ready.exists() or busy.poll() is not None:
                break
            time.sleep(0.1)
        assert ready.exists()
        spinners = _spinners(listing)
        assert len(spinners) == 2 and all(_alive(pid) for pid in spinners)
        os.killpg(busy.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        assert busy.wait(60) == -signal.SIGINT  # the command's sleep did not run its 120 s out
    finally:
        if busy.poll() is None:
            os.killpg(busy.pid, signal.SIGKILL)
            busy.wait(30)
    assert not any(_alive(pid) for pid in spinners)
