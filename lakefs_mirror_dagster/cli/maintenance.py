"""``scrub`` and ``gc``: a mirror's bytes at rest re-read and repaired; objects deleted at the sources deleted at
the mirrors."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import load_service, mirror_of_this_region, no_such_mirror
from .confirm import add_yes_option
from .exit_codes import ExitCode

__all__ = ["add_maintenance_commands", "format_gc_result"]


def _scrub(args: argparse.Namespace) -> int:
    """Re-read a mirror's files and objects at rest, repair what differs from the source; exit 1 if any is left."""
    from ..region.scrub import parse_part

    try:
        part = parse_part(args.part) if args.part else None
    except ValueError as exc:
        print(f"lakefs-mirror scrub: --part: {exc}", file=sys.stderr)
        return 2
    service = load_service(args)
    try:
        report = service.scrubber(mirror_of_this_region(service, args.mirror)).scrub(
            branches=args.branch or None, sample=args.sample, part=part, repair=not args.no_repair
        )
    finally:
        service.close()
    doc = report.to_json()
    if args.json:
        print(json.dumps(doc))
    else:
        print(
            f"mirror {report.mirror}: {report.objects_checked} object(s) and {report.metadata_files} metadata "
            f"file(s) read ({report.bytes_read} bytes); checks {report.checks}, {report.compared_with_source} "
            f"compared with the source; {report.damaged_count} damaged, {report.repaired} repaired"
        )
        for line in report.damaged + [f"not repaired: {u}" for u in report.unrepaired] + report.errors:
            print(f"  ! {line}")
    return 0 if report.ok else 1


def _gc(args: argparse.Namespace) -> int:
    """One garbage-collection deletions pass over this region's mirrors (exit 1 when any mirror failed)."""
    from ..region import run_gc_deletions

    service = load_service(args)
    try:
        name = mirror_of_this_region(service, args.mirror) if args.mirror else None
        results = run_gc_deletions(service, name=name, dry_run=args.dry_run)
    finally:
        service.close()
    if args.mirror and not results:
        no_such_mirror(args.mirror, service.config.region)
        return ExitCode.USAGE
    for result in results:
        print(json.dumps(result.to_json()) if args.json else format_gc_result(result), flush=True)
    return ExitCode.OK if all(r.ok for r in results) else ExitCode.FAILED


def format_gc_result(result: Any) -> str:
    """A mirror's counts, then each address deleted (or, in a dry run, that would be)."""
    head = f"mirror {result.mirror} <- {result.source_repository} ({result.duration_seconds:.1f}s)"
    if result.skipped:
        return f"{head}: skipped, {result.skipped}"
    verb = "would delete" if result.dry_run else "deleted"
    lines = [
        f"{head}: {verb} {result.deleted} object(s) ({result.bytes_deleted} bytes); {result.listed} listed, "
        f"{result.missing} missing at the source ({result.newly_missing} new, {result.waiting} in the grace period), "
        f"{result.back_at_source} back at the source"
    ]
    if result.error:
        lines.append(f"  ! {result.error}")
    lines.extend(f"  {verb} {address}" for address in result.addresses)
    if result.deleted > len(result.addresses):
        lines.append(f"  ... and {result.deleted - len(result.addresses)} more")
    return "\n".join(lines)


def _describe_gc(args: argparse.Namespace) -> str | None:
    if args.dry_run:
        return None
    which = f"mirror {args.mirror}" if args.mirror else "this region's mirrors"
    return f"delete from {which} the objects garbage collection deleted at their sources"


def add_maintenance_commands(sub: Any) -> None:
    """``scrub`` and ``gc`` (``gc`` asks first: ``--yes``)."""
    scrub = sub.add_parser("scrub", help="re-read a mirror's bytes at rest, check them, repair from the source")
    scrub.add_argument("mirror", help="the mirror's name or id (a mirror of this region)")
    scrub.add_argument("--branch", action="append", default=[], help="only these branches (default: all refs)")
    scrub.add_argument("--sample", type=float, default=1.0, help="fraction of the objects to read (0 < F <= 1)")
    scrub.add_argument("--part", help="only slice K of N of the ranges, as K/N (e.g. 3/24 each hour)")
    scrub.add_argument("--no-repair", action="store_true", help="report only; exit 1 when anything is damaged")
    scrub.add_argument("--json", action="store_true", help="the report as one JSON document")
    scrub.set_defaults(func=_scrub)

    gc = sub.add_parser(
        "gc",
        help="delete from this region's mirrors the objects garbage collection deleted at their sources "
        "(once missing for garbage_collection.grace_period)",
    )
    gc.add_argument("--mirror", help="only this mirror (name or id)")
    gc.add_argument("--dry-run", action="store_true", help="list what would be deleted; change nothing")
    gc.add_argument("--json", action="store_true", help="one JSON document per mirror")
    gc.set_defaults(func=_gc)
    add_yes_option(gc, _describe_gc)
