"""``dev demo|devenv|openapi``, ``sst cat`` and ``completion``: developer and shell tools. The development
environment (with the demo) is a distribution of its own, never in the runtime wheel: only this module's functions
import it, lazily, and ``_devenv`` says in one line how to get it when it is missing."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .completion import SHELLS, completion_script
from .exit_codes import ExitCode

__all__ = ["add_dev_commands"]

_NO_DEVENV = (
    "lakefs-mirror: the dev devenv and dev demo commands need the development environment (the "
    "lakefs-mirror-devenv distribution, which builds lakeFS and MinIO locally); run them from a checkout: "
    "scripts/dev demo"
)


def _devenv() -> Any:
    """The development environment, a distribution of its own (never part of the runtime wheel)."""
    try:
        import lakefs_mirror_devenv
    except ModuleNotFoundError as exc:
        if exc.name != "lakefs_mirror_devenv":
            raise
        print(_NO_DEVENV, file=sys.stderr)
        raise SystemExit(ExitCode.USAGE) from exc
    return lakefs_mirror_devenv


def _devenv_up(args: argparse.Namespace) -> int:
    devenv = _devenv()
    regions = tuple(devenv.parse_region_spec(r) for r in args.region) if args.region else devenv.DEFAULT_REGIONS
    links = tuple(devenv.parse_link_spec(link) for link in args.link)
    env = devenv.environment_up(
        args.state_dir,
        regions,
        with_postgres=args.postgres,
        with_dynamodb=args.dynamodb,
        links=links,
        lakefs_on_postgres=tuple(args.lakefs_on_postgres),
    )
    print(json.dumps(env.to_json(), indent=2) if args.json else _describe(env.to_json()))
    return 0


def _devenv_status(args: argparse.Namespace) -> int:
    report = _devenv().environment_status(args.state_dir)
    print(json.dumps(report, indent=2))
    healthy = all(r["alive"] and r["healthy"] for r in report["regions"].values())
    healthy = healthy and all(m["alive"] and m["healthy"] for m in report["minio"].values())
    healthy = healthy and report.get("toxiproxy", {"alive": True})["alive"]
    return 0 if healthy else 1


def _devenv_down(args: argparse.Namespace) -> int:
    stopped = _devenv().environment_down(args.state_dir)
    print(f"stopped {len(stopped)} process(es): {' '.join(map(str, stopped)) or '-'}")
    return 0


def _run_demo(args: argparse.Namespace) -> int:
    _devenv()
    from lakefs_mirror_devenv.demo.run import run_demo

    return run_demo(args.state_dir, keep=args.keep)


def _describe(env: dict[str, Any]) -> str:
    lines = [f"dev environment in {env['state_dir']}"]
    for name, r in env["regions"].items():
        lines.append(
            f"  {name}: lakeFS {r['endpoint']}  storage {r['namespace_root']}  "
            f"key {r['access_key_id']}  (started in {r['startup_seconds']:.1f}s)"
            + ("  lakeFS on PostgreSQL, refstore_database set" if r.get("database") else "")
        )
    for name, m in env["minio"].items():
        lines.append(f"  minio {name}: {m['endpoint']}")
    if env.get("postgres"):
        lines.append(f"  postgres pid {env['postgres']['pid']}")
    if env.get("dynamodb"):
        d = env["dynamodb"]
        lines.append(f"  dynamodb local: {d['endpoint']}  table {d['table_name']}  (the regions' mirrors database)")
    for link in env.get("links") or []:
        proxies = env["toxiproxy"]["proxies"]
        through = ", ".join(f"{what} via {proxies[name]}" for what, name in link["proxies"].items())
        lines.append(
            f"  link {link['src']}->{link['dst']}: rtt {link['rtt_ms']:g}ms jitter {link['jitter_ms']:g}ms "
            f"rate {link['rate_bits'] / 1e6:g}Mbit/s ({through}; Toxiproxy API {env['toxiproxy']['api']})"
        )
    lines.append(f"  description: {env['state_dir']}/environment.json")
    return "\n".join(lines)


def _openapi(args: argparse.Namespace) -> int:
    from ..errors import needs_extra

    with needs_extra("service", "openapi (the REST API's document)"):
        from ..service import write_openapi

    print(write_openapi(args.path))
    return 0


def _sst_cat(args: argparse.Namespace) -> int:
    from ..graveler import format_sst

    print(format_sst(Path(args.file).read_bytes(), as_json=args.json))
    return 0


def _completion(args: argparse.Namespace) -> int:
    print(completion_script(args.shell))
    return ExitCode.OK


def add_dev_commands(sub: Any) -> None:
    """``sst cat``, ``dev ...`` and ``completion``."""
    sst = sub.add_parser("sst", help="lakeFS range and metarange files")
    sst_sub = sst.add_subparsers(dest="sst_command", required=True)
    cat = sst_sub.add_parser("cat", help="print a file's properties, records and recomputed ID")
    cat.add_argument("file", type=Path)
    cat.add_argument("--json", action="store_true")
    cat.set_defaults(func=_sst_cat)

    dev = sub.add_parser("dev", help="developer commands: demo, devenv, openapi (not needed to run mirrors)")
    dev_sub = dev.add_subparsers(dest="dev_command", required=True)
    openapi = dev_sub.add_parser("openapi", help="write the REST API's OpenAPI document")
    openapi.add_argument("path", nargs="?", default="docs/openapi.json")
    openapi.set_defaults(func=_openapi)

    demo = dev_sub.add_parser("demo", help="two local regions, a sample repository, a mirror converging")
    demo.add_argument("--state-dir", type=Path, default=None, help="where the demo's servers keep their data")
    demo.add_argument("--keep", action="store_true", help="leave the servers running afterwards")
    demo.set_defaults(func=lambda a: _run_demo(a))

    devenv = dev_sub.add_parser("devenv", help="local lakeFS regions, MinIO and PostgreSQL for dev and tests")
    devenv_sub = devenv.add_subparsers(dest="devenv_command", required=True)
    for name, func, helptext in (
        ("up", _devenv_up, "build (once) and start the servers"),
        ("status", _devenv_status, "health of the started servers"),
        ("down", _devenv_down, "stop exactly the processes `up` started"),
    ):
        p = devenv_sub.add_parser(name, help=helptext)
        p.add_argument(
            "--state-dir",
            type=Path,
            default=None,
            help="where state and data live (default $LAKEFS_MIRROR_DEVENV or the cache dir)",
        )
        p.set_defaults(func=func)
        if name == "up":
            p.add_argument(
                "--region",
                action="append",
                default=[],
                help="NAME[=local|=s3:MINIO] (repeatable; default region-a and region-b, local)",
            )
            p.add_argument("--postgres", action="store_true", help="also start PostgreSQL")
            p.add_argument(
                "--dynamodb",
                action="store_true",
                help="also start DynamoDB Local; the region configs use it as their mirrors database",
            )
            p.add_argument(
                "--lakefs-on-postgres",
                action="append",
                default=[],
                metavar="REGION",
                help="run REGION's lakeFS on PostgreSQL (started for it) instead of local KV; its replication config "
                "sets refstore_database (repeatable; docs/development.md)",
            )
            p.add_argument(
                "--link",
                action="append",
                default=[],
                metavar="SRC->DST:rtt=80ms,jitter=5ms,rate=200Mbit",
                help="put what DST's sync reads from SRC behind Toxiproxy with that latency and bandwidth "
                "(repeatable; docs/wan.md)",
            )
            p.add_argument("--json", action="store_true", help="print the description as JSON")

    completion = sub.add_parser("completion", help="print the shell completion script (see docs/cli.md)")
    completion.add_argument("shell", choices=SHELLS)
    completion.set_defaults(func=_completion)
