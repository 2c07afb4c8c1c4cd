"""``mirrors create|list|get|delete|promote|reverse``, ``refs dump|restore`` and ``storages list``: the mirror
definitions and the repositories' refs."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import load_cli_config, load_service
from .confirm import add_yes_option
from .exit_codes import ExitCode
from .mirror_arg import resolve_mirror
from .refs import add_promote_command, add_refs_commands
from .tables import format_table

__all__ = ["add_mirrors_commands"]


def _mirrors_create(args: argparse.Namespace) -> int:
    service = load_service(args)
    try:
        mirror = service.create_mirror(
            source_repository=args.repository,
            name=args.name,
            region=args.region,
            storage_namespace=args.storage_namespace,
            storage_id=args.storage_id or "",
            dry_run=args.dry_run,
        )
        if args.dry_run:
            doc = {k: v for k, v in mirror.as_dict().items() if k not in ("id", "created_at", "updated_at")}
            print(json.dumps({"dry_run": True, "would_create": doc}, indent=2))
            hooks = f"; would commit the hook action calling {args.install_hooks}" if args.install_hooks else ""
            print(f"lakefs-mirror: dry run: every check passed, nothing was written{hooks}", file=sys.stderr)
            return ExitCode.OK
        print(json.dumps(mirror.as_dict(), indent=2))
        if args.install_hooks:
            from ..region import ACTION_PATH, install_hooks

            client = service.client(service.config.region)
            commit = install_hooks(
                client, args.repository, args.install_hooks, with_secret=bool(service.config.hooks.secret)
            )
            done = f"committed to {args.repository} as {commit}" if commit else f"already in {args.repository}"
            print(f"lakefs-mirror: hook action {ACTION_PATH} {done}", file=sys.stderr)
    finally:
        service.close()
    return 0


def _mirrors_list(args: argparse.Namespace) -> int:
    service = load_service(args)
    try:
        kwargs = {"source_repository": args.repository} if args.repository else {}
        mirrors = [m.as_dict() for m in service.iter_mirrors(**kwargs)]
    finally:
        service.close()
    columns = ("name", "region", "source_region", "source_repository", "state", "storage_id", "id")
    print(json.dumps(mirrors, indent=2) if args.json else format_table(mirrors, columns))
    return ExitCode.OK


def _mirrors_get(args: argparse.Namespace) -> int:
    service = load_service(args)
    try:
        mirror = resolve_mirror(service, args.mirror)
        doc = mirror.as_dict()
        doc["branches"] = [vars(b) for b in service.mirrors.get_branches(mirror.id)]
    finally:
        service.close()
    if args.json:
        print(json.dumps(doc, indent=2, default=str))
        return ExitCode.OK
    fields = {k: v for k, v in doc.items() if k != "branches"}
    print("\n".join(f"{key + ':':19} {value if value not in (None, '') else '-'}" for key, value in fields.items()))
    print()
    columns = ("branch", "source_commit_id", "mirrored_commit_id", "lag_seconds", "promoted_at")
    print(format_table(doc["branches"], columns))
    return ExitCode.OK


def _mirrors_delete(args: argparse.Namespace) -> int:
    from ..mirrors import MirrorState

    service = load_service(args)
    try:
        mirror = service.mirrors.set_state(args.resolved_mirror.id, MirrorState.DELETING, "deleted by CLI", None)
    finally:
        service.close()
    print(
        f"mirror {mirror.name} ({mirror.id}) is being deleted: repository {mirror.name} in region "
        f"{mirror.destination_region} is deleted on that region's next pass (the objects in its storage "
        "namespace stay)"
    )
    return ExitCode.OK


def _describe_delete(args: argparse.Namespace) -> str:
    """Names the mirror the user meant (resolved now, so the question shows its name, region and id)."""
    service = load_service(args)
    try:
        args.resolved_mirror = mirror = resolve_mirror(service, args.mirror)
    finally:
        service.close()
    return (
        f"delete mirror {mirror.name} in region {mirror.destination_region} (id {mirror.id}) and, on its "
        "region's next pass, its repository"
    )


def _describe_dump(args: argparse.Namespace) -> str | None:
    if not args.rm:
        return None
    which = "every writable repository" if args.all else "repositories " + ", ".join(args.repositories)
    return f"remove the records of {which} after dumping them (data kept)"


def _storages_list(args: argparse.Namespace) -> int:
    from ..region import describe_storages

    config = load_cli_config(args)
    stores = [s.as_dict() for s in describe_storages(config)]
    columns = ("id", "type", "description", "namespace_example")
    print(json.dumps(stores, indent=2) if args.json else format_table(stores, columns))
    return ExitCode.OK


_MIRROR_HELP = "the mirror's name or id (a name held by mirrors in several regions needs the id)"


def add_mirrors_commands(sub: Any) -> None:
    """``mirrors ...``, ``refs ...`` and ``storages list``."""
    mirrors = sub.add_parser("mirrors", help="create and list mirror definitions")
    mirrors_sub = mirrors.add_subparsers(dest="mirrors_command", required=True)
    create = mirrors_sub.add_parser("create", help="define a mirror of a repository of this region")
    create.add_argument("--repository", required=True, help="source repository (in this region)")
    create.add_argument("--name", required=True, help="name of the read-only mirror repository")
    create.add_argument("--region", required=True, help="region the mirror lives in")
    create.add_argument("--storage-namespace", required=True, help="mirror's storage namespace in that region")
    create.add_argument("--storage-id", default="", help="store id in that region (multi-store)")
    create.add_argument(
        "--install-hooks",
        metavar="URL",
        help="also commit a lakeFS action to the source repository's default branch that calls this URL "
        "(serve's /service/replication/v1/hooks/lakefs) on every branch and tag change; changes the source "
        "repository (one commit), idempotent",
    )
    create.add_argument(
        "--dry-run",
        action="store_true",
        help="run every check (regions, source repository, name, store, namespace) and print the mirror that "
        "would be created; write nothing",
    )
    create.set_defaults(func=_mirrors_create)
    lst = mirrors_sub.add_parser("list", help="mirror definitions (all regions)")
    lst.add_argument("--repository", help="only mirrors of this source repository")
    lst.add_argument("--json", action="store_true", help="a JSON list of the mirrors (default: a table)")
    lst.set_defaults(func=_mirrors_list)
    get = mirrors_sub.add_parser("get", help="one mirror with its branches' state")
    get.add_argument("mirror", help=_MIRROR_HELP)
    get.add_argument("--json", action="store_true", help="one JSON document (default: fields, then a branch table)")
    get.set_defaults(func=_mirrors_get)
    delete = mirrors_sub.add_parser("delete", help="delete a mirror (its repository is removed by its region)")
    delete.add_argument("mirror", help=_MIRROR_HELP)
    delete.set_defaults(func=_mirrors_delete)
    add_yes_option(delete, _describe_delete)
    promote, reverse = add_promote_command(mirrors_sub)
    add_yes_option(promote, lambda a: f"make mirror {a.name} of this region a writable repository")
    add_yes_option(reverse, lambda a: f"make repository {a.name} of this region a read-only mirror")
    dump, _ = add_refs_commands(sub)
    add_yes_option(dump, _describe_dump)

    storages = sub.add_parser("storages", help="the stores this region is connected to (blockstores)")
    storages_sub = storages.add_subparsers(dest="storages_command", required=True)
    storages_list = storages_sub.add_parser("list", help="id, type, description and a namespace example of each store")
    storages_list.add_argument("--json", action="store_true", help="a JSON list of the stores (default: a table)")
    storages_list.set_defaults(func=_storages_list)
