"""The command line's habits, as a user meets them in the real ``lakefs-mirror`` process: global options on
either side of the subcommand, the exit-status table, ``--yes`` (asked on a real terminal, refused without one),
a mirror named by name or id, tables beside ``--json``, ``-v``/``-q``/``--log-level`` and shell completion.

The mirrors database is SQLite and the lakeFS endpoints are closed ports: no server is needed for these (the
commands that need lakeFS are tested against the real one in tests/replication and tests/refs)."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from lakefs_mirror_devenv.processes import free_port

from lakefs_mirror_dagster.cli import ExitCode
from lakefs_mirror_dagster.config import load_config
from lakefs_mirror_dagster.mirrors import Mirror, MirrorState
from lakefs_mirror_dagster.region import ReplicationService
from tests.cli_process import run_cli
from tests.config.config_data import minimal

DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def _config(tmp_path: Path, **fields: Any) -> str:
    """This region us-east-1, source region us-west-2; both lakeFS endpoints closed ports."""
    defaults: dict[str, Any] = {
        "regional_endpoint": f"http://127.0.0.1:{free_port()}",
        "dst_endpoints": {"us-west-2": f"http://127.0.0.1:{free_port()}"},
        "mirrors_database": {"type": "sqlite", "sqlite": {"path": str(tmp_path / "mirrors.db")}},
    }
    data = minimal(**{**defaults, **fields})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    path.chmod(0o600)
    return str(path)


def _add_mirror(config: str, name: str, region: str = "us-east-1", source_region: str = "us-west-2") -> Mirror:
    """A mirror record written straight into the mirrors database (creating one through the CLI needs lakeFS)."""
    service = ReplicationService(load_config(config, env={}))
    try:
        return service.mirrors.create_mirror(
            organization_id="my-org",
            source_region=source_region,
            source_repository="sales",
            name=name,
            destination_region=region,
            storage_namespace=f"s3://bucket/{region}/{name}",
        )
    finally:
        service.close()


def _state(config: str, mirror: Mirror) -> MirrorState:
    service = ReplicationService(load_config(config, env={}))
    try:
        return service.get_mirror(mirror.id).state
    finally:
        service.close()


def _one_line_error(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("lakefs-mirror")
    return line


def test_global_options_before_or_after_the_subcommand(tmp_path: Path) -> None:
    config = _config(tmp_path)
    _add_mirror(config, "sales-mirror")
    before = run_cli("--config", config, "mirrors", "list", "--json", cwd=tmp_path)
    after = run_cli("mirrors", "list", "--json", "--config", config, cwd=tmp_path)
    between = run_cli("mirrors", "--config", config, "list", "--json", cwd=tmp_path)
    assert before.returncode == after.returncode == between.returncode == 0, (after.stderr, between.stderr)
    assert [m["name"] for m in json.loads(before.stdout)] == ["sales-mirror"]
    assert before.stdout == after.stdout == between.stdout
    # Given on both sides, the one after the subcommand wins (a missing file there: its own error).
    done = run_cli("--config", config, "mirrors", "list", "--config", str(tmp_path / "nope.yaml"), cwd=tmp_path)
    assert "nope.yaml" in _one_line_error(done, ExitCode.CONFIG)


def test_exit_codes_are_the_documented_table() -> None:
    table = dict(re.findall(r"^\| (\d+) \| `(\w+)` \|", DOCS.read_text(), flags=re.MULTILINE))
    assert {int(code): name for code, name in table.items()} == {int(c): c.name for c in ExitCode}


def test_a_usage_error_is_one_line_and_2(tmp_path: Path) -> None:
    line = _one_line_error(run_cli("mirrors", "frob", cwd=tmp_path), ExitCode.USAGE)
    assert "invalid choice: 'frob'" in line and "lakefs-mirror mirrors --help" in line
    _one_line_error(run_cli("status", "--fail-if-lag", "soon", cwd=tmp_path), ExitCode.USAGE)


def test_a_bad_config_is_one_line_and_3(tmp_path: Path) -> None:
    config = _config(tmp_path, listn_address="x")
    line = _one_line_error(run_cli("mirrors", "list", "--config", config, cwd=tmp_path), ExitCode.CONFIG)
    assert line.startswith("lakefs-mirror: config: ") and "listn_address" in line


def test_an_unreachable_lakefs_is_one_line_and_4(tmp_path: Path) -> None:
    config = _config(tmp_path)
    done = run_cli("refs", "dump", "sales", "--config", config, "--output-dir", str(tmp_path), cwd=tmp_path)
    assert "unreachable" in _one_line_error(done, ExitCode.UNAVAILABLE)
    assert not list(tmp_path.glob("*_manifest.json"))


def test_an_unreachable_mirrors_database_is_4(tmp_path: Path) -> None:
    url = f"postgresql://mirrors:secret@127.0.0.1:{free_port()}/mirrors"
    config = _config(tmp_path, mirrors_database={"type": "postgres", "postgres": {"connection_string": url}})
    done = run_cli("mirrors", "list", "--config", config, cwd=tmp_path)
    assert done.returncode == ExitCode.UNAVAILABLE, done.stderr
    assert "Traceback" not in done.stderr and "secret" not in done.stderr


def test_a_mirror_is_named_by_name_or_id_and_an_ambiguous_name_is_refused(tmp_path: Path) -> None:
    config = _config(tmp_path, dst_endpoints={"us-west-2": "http://127.0.0.1:1", "eu-1": "http://127.0.0.1:1"})
    east = _add_mirror(config, "sales-mirror")
    _add_mirror(config, "logs-mirror")
    by_name = run_cli("mirrors", "get", "sales-mirror", "--json", "--config", config, cwd=tmp_path)
    by_id = run_cli("mirrors", "get", east.id, "--json", "--config", config, cwd=tmp_path)
    assert by_name.returncode == by_id.returncode == 0, (by_name.stderr, by_id.stderr)
    assert json.loads(by_name.stdout)["id"] == json.loads(by_id.stdout)["id"] == east.id
    # Also where a command takes a mirror of this region (status reads only the mirrors database).
    for value in ("sales-mirror", east.id):
        done = run_cli("status", "--mirror", value, "--json", "--recent", "0", "--config", config, cwd=tmp_path)
        assert [m["name"] for m in json.loads(done.stdout)] == ["sales-mirror"], done.stderr
    unknown = run_cli("mirrors", "get", "nope", "--config", config, cwd=tmp_path)
    assert "no mirror with the name or id 'nope'" in _one_line_error(unknown, ExitCode.USAGE)
    # The same name in a second region: the name alone no longer says which.
    west = _add_mirror(config, "sales-mirror", region="eu-1")
    ambiguous = run_cli("mirrors", "delete", "sales-mirror", "--yes", "--config", config, cwd=tmp_path)
    line = _one_line_error(ambiguous, ExitCode.USAGE)
    assert "names several mirrors" in line and east.id in line and west.id in line
    assert _state(config, east) == _state(config, west) == MirrorState.PENDING  # nothing was deleted


def test_tables_for_people_json_for_scripts(tmp_path: Path) -> None:
    config = _config(tmp_path)
    mirror = _add_mirror(config, "sales-mirror")
    table = run_cli("mirrors", "list", "--config", config, cwd=tmp_path).stdout.splitlines()
    assert table[0].split()[:2] == ["NAME", "REGION"] and len(table) == 2
    assert table[1].split() == ["sales-mirror", "us-east-1", "us-west-2", "sales", "pending", "-", mirror.id]
    got = run_cli("mirrors", "get", "sales-mirror", "--config", config, cwd=tmp_path).stdout
    assert f"id:                 {mirror.id}" in got and "BRANCH" in got
    assert json.loads(run_cli("mirrors", "get", mirror.id, "--json", "--config", config, cwd=tmp_path).stdout)


def _run_on_a_terminal(args: list[str], answer: bytes, tmp_path: Path) -> tuple[int, str]:
    """``lakefs-mirror ARGS`` with a pseudo-terminal as stdin and stderr; ``answer`` typed once it asks."""
    main_fd, terminal = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    process = subprocess.Popen(
        [sys.executable, "-m", "lakefs_mirror_dagster.cli", *args],
        stdin=terminal,
        stderr=terminal,
        stdout=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    os.close(terminal)
    seen = b""
    deadline = time.monotonic() + 60
    while b"[y/N]" not in seen and time.monotonic() < deadline:
        try:
            chunk = os.read(main_fd, 1024)
        except OSError:  # the process ended without asking
            break
        if not chunk:
            break
        seen += chunk
    if b"[y/N]" in seen:
        os.write(main_fd, answer)
    code = process.wait(timeout=60)
    try:
        while chunk := os.read(main_fd, 1024):
            seen += chunk
    except OSError:
        pass
    os.close(main_fd)
    assert process.stdout is not None
    process.stdout.close()
    return code, seen.decode(errors="replace")


def test_delete_asks_on_a_terminal_and_refuses_without_one(tmp_path: Path) -> None:
    config = _config(tmp_path)
    mirror = _add_mirror(config, "sales-mirror")
    no_terminal = run_cli("mirrors", "delete", "sales-mirror", "--config", config, cwd=tmp_path)
    line = _one_line_error(no_terminal, ExitCode.USAGE)
    assert "no terminal to ask on; pass --yes" in line and mirror.id in line
    assert _state(config, mirror) == MirrorState.PENDING

    code, said = _run_on_a_terminal(["mirrors", "delete", "sales-mirror", "--config", config], b"n\n", tmp_path)
    assert code == ExitCode.USAGE and f"delete mirror sales-mirror in region us-east-1 (id {mirror.id})" in said
    assert _state(config, mirror) == MirrorState.PENDING

    code, said = _run_on_a_terminal(["mirrors", "delete", mirror.id, "--config", config], b"y\n", tmp_path)
    assert code == 0, said
    assert _state(config, mirror) == MirrorState.DELETING


def test_every_destructive_command_refuses_without_a_terminal(tmp_path: Path) -> None:
    config = _config(tmp_path)
    for args in (
        ["mirrors", "promote", "sales-mirror"],
        ["mirrors", "reverse", "sales", "--source-region", "us-west-2"],
        ["refs", "dump", "sales", "--rm"],
        ["gc"],
    ):
        done = run_cli(*args, "--config", config, cwd=tmp_path)
        assert "pass --yes" in _one_line_error(done, ExitCode.USAGE), args
    # Their harmless forms do not ask: a gc dry run goes on (and finds no mirror here).
    assert run_cli("gc", "--dry-run", "--config", config, cwd=tmp_path).returncode == 0


def test_log_level_from_the_command_line_wins_over_the_config(tmp_path: Path) -> None:
    debug_line = "DEBUG lakefs_mirror_dagster.region.service: mirror sales-mirror not synced"
    config = _config(tmp_path, logging={"level": "INFO"})
    _add_mirror(config, "sales-mirror")  # its source lakeFS is a closed port: the pass fails, at DEBUG with why
    plain = run_cli("sync", "--once", "--config", config, cwd=tmp_path)
    verbose = run_cli("sync", "--once", "-v", "--config", config, cwd=tmp_path)
    by_name = run_cli("--log-level", "debug", "sync", "--once", "--config", config, cwd=tmp_path)
    assert plain.returncode == verbose.returncode == by_name.returncode == ExitCode.FAILED
    assert "ERROR" in plain.stderr and debug_line not in plain.stderr
    assert debug_line in verbose.stderr and debug_line in by_name.stderr
    # The other way: a config at DEBUG, quietened from the command line.
    config = _config(tmp_path, logging={"level": "DEBUG"})
    assert debug_line in run_cli("sync", "--once", "--config", config, cwd=tmp_path).stderr
    assert debug_line not in run_cli("sync", "--once", "-q", "--config", config, cwd=tmp_path).stderr
    both = run_cli("sync", "-v", "-q", "--config", config, cwd=tmp_path)
    assert "not allowed with argument" in _one_line_error(both, ExitCode.USAGE)


def test_bash_completion_script_completes_subcommands(tmp_path: Path) -> None:
    done = run_cli("completion", "bash", cwd=tmp_path)
    assert done.returncode == 0 and "complete " in done.stdout and "lakefs-mirror" in done.stdout
    bash = shutil.which("bash")
    program = Path(sys.executable).parent / "lakefs-mirror"
    if bash is None or not program.exists():
        pytest.skip("no bash, or no installed lakefs-mirror script next to this interpreter")
    script = tmp_path / "lakefs-mirror.bash"
    script.write_text(done.stdout)

    def complete(line: str) -> list[str]:
        words = line.split(" ")
        probe = (
            f"source {script}; COMP_LINE='{line}'; COMP_POINT={len(line)}; COMP_WORDS=({' '.join(words)}); "
            f"COMP_CWORD={len(words) - 1}; COMP_TYPE=9; _python_argcomplete lakefs-mirror '{words[-1]}' "
            f"'{words[-2]}'; printf '%s\\n' \"${{COMPREPLY[@]}}\""
        )
        env = dict(os.environ, PATH=f"{program.parent}{os.pathsep}{os.environ['PATH']}")
        got = subprocess.run([bash, "-c", probe], capture_output=True, text=True, env=env, timeout=60, check=True)
        return [w.strip() for w in got.stdout.splitlines() if w.strip()]

    assert complete("lakefs-mirror mir") == ["mirrors"]
    assert set(complete("lakefs-mirror mirrors ")) >= {"create", "list", "get", "delete", "promote", "reverse"}
    assert "--fail-if-lag" in complete("lakefs-mirror status --fail")


def test_dev_commands_without_the_development_environment_say_where_to_run_them(tmp_path: Path) -> None:
    """As in a runtime install (the wheel has no lakefs_mirror_devenv): one line, status 2."""
    blocked = (
        "import sys; sys.modules['lakefs_mirror_devenv'] = None; from lakefs_mirror_dagster.cli import main; "
        "sys.exit(main(['dev', 'devenv', 'status', '--state-dir', sys.argv[1]]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked, str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert "run them from a checkout: scripts/dev demo" in _one_line_error(done, ExitCode.USAGE)
