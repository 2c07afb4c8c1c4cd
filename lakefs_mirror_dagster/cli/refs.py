"""``refs dump``, ``refs restore``, ``mirrors promote`` and ``mirrors reverse``.

``mirrors.py`` calls ``add_refs_commands(sub)`` and ``add_promote_command(mirrors_sub)``; every handler
returns an exit status and lets every ``LakeFSMirrorError`` (``RefsError``, ``LakeFSError``, ``ConfigError``,
``StorageError``, ...) reach ``main``, which prints it as one line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..logs import load_config_with_logging
from ..refs import RefsError

__all__ = ["add_promote_command", "add_refs_commands"]


def _client(args: argparse.Namespace) -> tuple[Any, Any]:
    """The config and a client for ``--region`` (default: the config's own region)."""
    from ..lakefs import LakeFSClient

    config = load_config_with_logging(args.config)
    region = args.region or config.region
    key, secret = config.credentials_for(region)
    return config, LakeFSClient(config.endpoint_for(region), key, secret)


def _refs_dump(args: argparse.Namespace) -> int:
    from ..refs import dump_repositories
    from ..refs.dump import repositories_for_all

    if bool(args.repositories) == bool(args.all):
        raise RefsError("refs dump: name the repositories to dump, or pass --all (not both)")
    _, client = _client(args)
    try:
        names = args.repositories
        if args.all:
            names, read_only = repositories_for_all(client)
            if read_only:
                print(f"skipped read-only repositories (mirrors; name them to dump): {', '.join(read_only)}")
        results = dump_repositories(
            client,
            names,
            args.output_dir,
            commit_dirty=args.commit,
            remove=args.rm,
        )
    finally:
        client.close()
    for r in results:
        extra = f", committed {', '.join(r.committed)}" if r.committed else ""
        extra += ", repository removed (data kept)" if r.removed else ""
        print(f"dumped {r.manifest.name} -> {r.path}{extra}")
    return 0


def _target_namespace(template: str | None, repo: str, count: int) -> str | None:
    if template is None:
        return None
    if "{repo}" in template:
        return template.replace("{repo}", repo)
    if count > 1:
        raise RefsError("--to-namespace with several manifests must contain {repo} (e.g. s3://bucket/{repo})")
    return template


def _refs_restore(args: argparse.Namespace) -> int:
    from ..refs import check_restorable, load_manifest, migrate_repository, target_storage_id
    from ..storage.uri import namespace_prefix

    if args.copy_data and not args.to_namespace:
        raise RefsError("--copy-data needs --to-namespace (where the data is copied to)")
    if args.storage_id is not None and args.ignore_storage_id:
        raise RefsError("--storage-id and --ignore-storage-id exclude each other")
    manifests = [load_manifest(p) for p in args.manifests]  # every file validated before anything happens
    names = [m.name for m in manifests]
    if len(set(names)) != len(names):
        raise RefsError(f"several manifests name the same repository: {', '.join(sorted(names))}")
    plans = []
    for m in manifests:
        ns = _target_namespace(args.to_namespace, m.name, len(manifests))
        sid = target_storage_id(m, storage_id=args.storage_id, ignore_storage_id=args.ignore_storage_id)
        plans.append((m, ns, sid))
    namespaces = [namespace_prefix(ns or m.storage_namespace) for m, ns, _ in plans]
    if len(set(namespaces)) != len(namespaces):
        raise RefsError("several manifests would be restored onto the same storage namespace")
    config, client = _client(args)
    try:
        for m, ns, sid in plans:  # all preconditions first: a bad second manifest creates nothing
            check_restorable(client, m.with_namespace(ns) if ns else m, storage_id=sid)
        if args.dry_run:
            for m, ns, sid in plans:
                copy = f", copying the data from {m.storage_namespace}" if args.copy_data else ""
                store = f" (storage id {sid!r})" if sid else ""
                print(f"would restore {m.name} on {ns or m.storage_namespace}{store}{copy}")
            return 0
        for m, ns, sid in plans:
            result = migrate_repository(
                client, m, config=config, target_namespace=ns, copy_data=args.copy_data, storage_id=sid
            )
            copied = f", copied {result.copy.copied} objects ({result.copy.bytes_copied} bytes)" if result.copy else ""
            print(f"restored {m.name} on {result.repository.storage_namespace}{copied}")
    finally:
        client.close()
    return 0


def _mirrors_promote(args: argparse.Namespace) -> int:
    from ..refs import promote_mirror
    from ..region import ReplicationService

    service = ReplicationService(load_config_with_logging(args.config))
    try:
        result = promote_mirror(service, args.name, manifest_dir=args.manifest_dir)
    finally:
        service.close()
    doc = {
        "name": result.name,
        "region": result.region,
        "storage_namespace": result.storage_namespace,
        "branches": result.branches,
        "tags": result.tags,
        "manifest": str(result.manifest_path) if result.manifest_path else None,
        "resumed": result.resumed,
    }
    print(json.dumps(doc, indent=2))
    return 0


def add_refs_commands(subparsers: Any) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """Add ``refs dump`` and ``refs restore`` to the top-level subparsers; returns their parsers (``mirrors.py``
    adds ``--yes`` to ``dump``, whose ``--rm`` deletes)."""
    refs = subparsers.add_parser("refs", help="dump and restore repositories' refs (store migration)")
    refs_sub = refs.add_subparsers(dest="refs_command", required=True)

    dump = refs_sub.add_parser("dump", help="write <repo>_manifest.json with lakeFS's refs dump")
    dump.add_argument("repositories", nargs="*", help="repositories to dump")
    dump.add_argument(
        "--all",
        action="store_true",
        help="dump every writable repository (read-only ones, e.g. mirrors, only when named)",
    )
    dump.add_argument("--commit", action="store_true", help="commit uncommitted changes first (else refuse)")
    dump.add_argument("--rm", action="store_true", help="delete each repository record after its dump (data kept)")
    dump.add_argument("--output-dir", type=Path, default=Path("."), help="where manifests go (default: .)")
    dump.add_argument("--region", help="region whose lakeFS to dump from (default: the config's region)")
    dump.set_defaults(func=_refs_dump)

    restore = refs_sub.add_parser("restore", help="create bare repositories and restore manifests' refs")
    restore.add_argument("manifests", nargs="+", type=Path, help="<repo>_manifest.json files")
    restore.add_argument("--ignore-storage-id", action="store_true", help="create without storage id (single store)")
    restore.add_argument("--storage-id", default=None, help="create with this storage id instead of the manifest's")
    restore.add_argument(
        "--to-namespace", help="restore on this namespace ({repo} is replaced by the repository's name)"
    )
    restore.add_argument(
        "--copy-data",
        action="store_true",
        help="first copy the old namespace (data and _lakefs/) to --to-namespace, stores from the config",
    )
    restore.add_argument("--region", help="region whose lakeFS to restore into (default: the config's region)")
    restore.add_argument(
        "--dry-run",
        action="store_true",
        help="check every manifest and every precondition in lakeFS, print what would be restored; change nothing",
    )
    restore.set_defaults(func=_refs_restore)
    return dump, restore


def _mirrors_reverse(args: argparse.Namespace) -> int:
    from ..refs.reverse import reverse_mirror
    from ..region import ReplicationService

    service = ReplicationService(load_config_with_logging(args.config))
    try:
        result = reverse_mirror(
            service,
            args.name,
            source_region=args.source_region,
            source_repository=args.source_repository or args.name,
            allow_diverged=args.allow_diverged,
            manifest_dir=args.manifest_dir,
        )
    finally:
        service.close()
    print(json.dumps(result.to_json(), indent=2, default=str))
    return 0


def add_promote_command(mirrors_subparsers: Any) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """Add ``mirrors promote NAME`` and ``mirrors reverse NAME`` to the ``mirrors`` subparsers; returns their
    parsers (``mirrors.py`` adds ``--yes`` to both)."""
    promote = mirrors_subparsers.add_parser(
        "promote", help="turn a mirror of this region into a writable repository (disaster recovery)"
    )
    promote.add_argument("name", help="the mirror's name (its repository in this region)")
    promote.add_argument("--manifest-dir", type=Path, help="also write the mirror's refs manifest here")
    promote.set_defaults(func=_mirrors_promote)
    reverse = mirrors_subparsers.add_parser(
        "reverse",
        help="failback: make a repository of this region a read-only mirror of the one promoted elsewhere",
    )
    reverse.add_argument("name", help="the repository of this region (the old source)")
    reverse.add_argument("--source-region", required=True, help="the region of the promoted repository")
    reverse.add_argument("--source-repository", help="the promoted repository (default: the same name)")
    reverse.add_argument(
        "--allow-diverged",
        action="store_true",
        help="also when branches here hold commits the new source lacks (they stay readable by ID)",
    )
    reverse.add_argument("--manifest-dir", type=Path, help="also write this repository's refs manifest here")
    reverse.set_defaults(func=_mirrors_reverse)
    return promote, reverse
