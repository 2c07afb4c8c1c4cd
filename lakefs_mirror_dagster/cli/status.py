"""``status`` and ``serve``: what the mirrors look like now, on the command line or over the REST API."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from .common import load_cli_config, load_service, mirror_of_this_region
from .exit_codes import ExitCode

__all__ = ["add_status_commands"]


def _status(args: argparse.Namespace) -> int:
    """Per mirror and branch: mirror head, lag, a sync in flight with its progress, and the last promotions (from
    the Dagster event log)."""
    from ..region.status import format_status, stale, status_report

    service = load_service(args)
    try:
        args.mirror = mirror_of_this_region(service, args.mirror) if args.mirror else None
        # Only with --recent is Dagster's event log read (importing Dagster takes seconds), and only where there is
        # an instance: the mirrors database alone answers everything else, --fail-if-lag included.
        recent = args.recent if args.recent > 0 and _dagster_history_available() else 0
        if recent:
            import dagster as dg

            from ..orchestration.history import recent_moves

            with dg.DagsterInstance.get() as instance:
                report = status_report(service, recent=recent, mirror=args.mirror, moves=recent_moves(instance))
        else:
            report = status_report(service, recent=0, mirror=args.mirror)
    finally:
        service.close()
    print(json.dumps([m.as_dict() for m in report], indent=2, default=str) if args.json else format_status(report))
    if args.fail_if_lag is None:
        return ExitCode.OK
    problems = stale(report, args.fail_if_lag)
    for line in problems:
        print(f"lakefs-mirror: stale: {line}", file=sys.stderr)
    return ExitCode.STALE if problems else ExitCode.OK


def _dagster_history_available() -> bool:
    """Whether a Dagster instance is there to read promotions from ($DAGSTER_HOME); says on stderr when not."""
    home = os.environ.get("DAGSTER_HOME", "")
    if home and Path(home).is_dir():
        return True
    why = "$DAGSTER_HOME is not set" if not home else f"$DAGSTER_HOME {home} is not a directory"
    print(f"lakefs-mirror: no Dagster instance ({why}): recent promotions are not shown", file=sys.stderr)
    return False


def _serve(args: argparse.Namespace) -> int:
    from ..errors import needs_extra
    from ..region import ReplicationService

    with needs_extra("service", "serve (the mirror management REST API)"):
        from ..service import load_policies, serve, tls_files

    config = load_cli_config(args)
    policies_file = str(args.policies or config.auth.policies_file)  # the flag wins over the config
    policies, users = load_policies(policies_file) if policies_file else (None, None)
    tls = tls_files(args.tls_cert or config.tls.cert_file, args.tls_key or config.tls.key_file)
    service = ReplicationService(config)
    try:
        service.fail_storeless_mirrors()  # reported in each such mirror's state; the others are served
        level = logging.getLevelName(config.logging.python_level).lower()  # uvicorn's own lines follow it too
        listen = args.listen or config.listen_address
        serve(
            service,
            listen,
            policies=policies,
            user_policies=users,
            policies_source=policies_file or None,
            tls=tls,
            log_level=level,
        )
    except KeyboardInterrupt:
        pass
    finally:
        service.close()
    return 0


def add_status_commands(sub: Any) -> None:
    """``status`` and ``serve``."""
    status = sub.add_parser(
        "status", help="mirror heads, lag, syncs in flight and recent promotions (Dagster event log)"
    )
    status.add_argument("--mirror", help="only this mirror (name or id)")
    status.add_argument("--recent", type=int, default=5, help="how many promotions per branch")
    status.add_argument("--json", action="store_true", help="one JSON document (heads, lag, in_flight, promotions)")
    status.add_argument(
        "--fail-if-lag",
        type=float,
        metavar="SECONDS",
        help=f"exit {ExitCode.STALE:d} (naming them on stderr) when a branch is further behind its source head "
        "than SECONDS, or a mirror is failed: for cron and monitoring",
    )
    status.set_defaults(func=_status)

    serve = sub.add_parser("serve", help="the mirror management REST API (/service/replication/v1/...)")
    serve.add_argument("--listen", help="HOST:PORT (default: listen_address from the config)")
    serve.add_argument(
        "--policies",
        type=Path,
        help="RBAC policies file (YAML/JSON; default: auth.policies_file); none: every user allowed",
    )
    serve.add_argument("--tls-cert", help="PEM certificate (chain) to serve HTTPS (default: tls.cert_file)")
    serve.add_argument("--tls-key", help="PEM private key of --tls-cert (default: tls.key_file)")
    serve.set_defaults(func=_serve)
