"""``lakefs-mirror``: the command line over the same library the Dagster code location uses."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main"]


def _devenv_up(args: argparse.Namespace) -> int:
    from .devenv import DEFAULT_REGIONS, environment_up, parse_region_spec

    regions = tuple(parse_region_spec(r) for r in args.region) if args.region else DEFAULT_REGIONS
    env = environment_up(args.state_dir, regions, with_postgres=args.postgres)
    print(json.dumps(env.to_json(), indent=2) if args.json else _describe(env.to_json()))
    return 0


def _devenv_status(args: argparse.Namespace) -> int:
    from .devenv import environment_status

    report = environment_status(args.state_dir)
    print(json.dumps(report, indent=2))
    healthy = all(r["alive"] and r["healthy"] for r in report["regions"].values())
    healthy = healthy and all(m["alive"] and m["healthy"] for m in report["minio"].values())
    return 0 if healthy else 1


def _devenv_down(args: argparse.Namespace) -> int:
    from .devenv import environment_down

    stopped = environment_down(args.state_dir)
    print(f"stopped {len(stopped)} process(es): {' '.join(map(str, stopped)) or '-'}")
    return 0


def _describe(env: dict[str, Any]) -> str:
    lines = [f"dev environment in {env['state_dir']}"]
    for name, r in env["regions"].items():
        lines.append(
            f"  {name}: lakeFS {r['endpoint']}  storage {r['namespace_root']}  "
            f"key {r['access_key_id']}  (started in {r['startup_seconds']:.1f}s)"
        )
    for name, m in env["minio"].items():
        lines.append(f"  minio {name}: {m['endpoint']}")
    if env.get("postgres"):
        lines.append(f"  postgres pid {env['postgres']['pid']}")
    lines.append(f"  description: {env['state_dir']}/environment.json")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lakefs-mirror", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    devenv = sub.add_parser("devenv", help="local lakeFS regions, MinIO and PostgreSQL for dev and tests")
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
            p.add_argument("--json", action="store_true", help="print the description as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from .devenv import DevenvError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except DevenvError as exc:
        print(f"lakefs-mirror: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
