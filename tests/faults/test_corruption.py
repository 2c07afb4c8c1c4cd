"""Damaged bytes and tampered commits never reach a mirror ref.

- A range or metarange file damaged on its way into the destination (a store that flips one byte of what
  it is given) is caught by recomputing its ID from the destination's copy: the ref is blocked, and the
  next sync copies the file again and promotes.
- A range file damaged at the destination after it was validated: the validated-range cache keeps the
  fingerprint (size and ETag) each file had when it was validated, so a later commit reusing the range finds
  the change, copies the file again and validates it before promoting.
- An object damaged on its way into the destination (same size) is caught by its MD5: lakeFS records the
  MD5 of single-part objects as their ETag, and the destination reports the MD5 of what it stored.
- A source commit whose fields do not hash to its ID is refused: no commit record, no ref move.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO
from unittest import mock

import pytest

from lakefs_mirror_dagster.lakefs import Commit, LakeFSClient, LakeFSNotFound
from lakefs_mirror_dagster.mirrors import Mirror
from lakefs_mirror_dagster.replication import MirrorEngine, RepositorySource, metadata_uri
from lakefs_mirror_dagster.storage import Blockstore, ObjectInfo, ObjectStat, ReadableStream

from .invariant import MirrorChecker
from .rig import DST, FaultRig, MirrorPair
from .workload import content

pytestmark = pytest.mark.integration


class Violations(AssertionError):
    """The mirror invariant does not hold (raised only at the end of a test, after every other check)."""


class CorruptingStore(Blockstore):
    """The destination store, but one byte of every write ``damage(uri)`` selects is flipped on the way in
    (same size: what a faulty network card, proxy or disk controller does)."""

    def __init__(self, inner: Blockstore, damage: Callable[[str], bool]) -> None:
        self.inner, self.damage = inner, damage
        self.schemes = inner.schemes
        self.damaged: list[str] = []

    def _flip(self, uri: str, data: bytes) -> bytes:
        self.damaged.append(uri)
        out = bytearray(data)
        out[len(out) // 2] ^= 0x01
        return bytes(out)

    def describe(self) -> str:
        return f"corrupting {self.inner.describe()}"

    def stat(self, uri: str) -> ObjectStat | None:
        return self.inner.stat(uri)

    def open_read(self, uri: str, *, size: int | None = None) -> BinaryIO:
        return self.inner.open_read(uri)

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        if not self.damage(uri):
            return self.inner.write_stream(uri, stream, size)
        return self.inner.write_stream(uri, io.BytesIO(self._flip(uri, stream.read())), size)

    def write_bytes(self, uri: str, data: bytes, *, md5: str | None = None) -> ObjectStat:
        return self.inner.write_bytes(uri, self._flip(uri, data) if self.damage(uri) else data, md5=md5)

    def delete(self, uri: str) -> None:
        self.inner.delete(uri)

    def list_prefix(self, uri_prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        return self.inner.list_prefix(uri_prefix, start_after=start_after)


def _commit(pair: MirrorPair, branch: str, files: dict[str, int], message: str) -> Commit:
    for key, size in files.items():
        pair.src.upload_object(pair.repo, branch, key, content(key, size))
    return pair.src.commit(pair.repo, branch, message)


def _mirror(rig: FaultRig, pair: MirrorPair) -> Mirror:
    service = rig.service(DST)
    return service.activate(next(service.my_mirrors(name=pair.mirror)))


def _engine(rig: FaultRig, pair: MirrorPair, *, store: Blockstore | None = None) -> MirrorEngine:
    """The region's engine for this mirror; ``store`` replaces the store it is built with, so it writes there
    (``CorruptingStore`` reads the real destination store, so validation sees what was stored)."""
    service, mirror = rig.service(DST), _mirror(rig, pair)
    if store is None:
        return service.engine_for(mirror)
    with mock.patch.object(service, "destination_store", return_value=store):
        return service.engine_for(mirror)


def _destination_store(rig: FaultRig, pair: MirrorPair) -> Blockstore:
    """The store the region's engine for this mirror writes to."""
    return rig.service(DST).destination_store(_mirror(rig, pair).storage_id)


def _head(client: LakeFSClient, repo: str, branch: str) -> str | None:
    return next((r.commit_id for r in client.list_branches(repo) if r.id == branch), None)


@pytest.mark.parametrize("which", ["range", "metarange"])
def test_metadata_file_damaged_in_transit_blocks_promotion_and_is_copied_again(rig: FaultRig, which: str) -> None:
    pair = rig.new_pair("transit")
    head = _commit(pair, "main", {f"data/t-{i}.bin": 300 + i for i in range(6)}, "six objects")
    metarange_uri = metadata_uri(pair.dst_ns, head.metarange_id)

    def damage(uri: str) -> bool:
        is_metadata = "/_lakefs/" in uri
        return is_metadata and (uri == metarange_uri) == (which == "metarange")

    store = CorruptingStore(_destination_store(rig, pair), damage)
    result = _engine(rig, pair, store=store).sync()
    main = next(r for r in result.refs if r.name == "main")
    assert store.damaged, "nothing was damaged: the test did not exercise the check"
    assert main.action == "blocked" and main.error, main
    assert _head(pair.dst, pair.mirror, "main") != head.id, "promoted onto a damaged file"
    assert "does not hash" in main.error or "checksum" in main.error.lower() or "ID" in main.error, main.error
    checker = MirrorChecker(pair)
    assert not (violations := checker.refs_violations(full=True)), violations

    again = rig.run_sync(pair.mirror, label=f"sync after {which} damaged in transit")
    assert again.returncode == 0, again.output[-3000:]
    assert not (violations := checker.converged_violations()), violations


def _damage_range_at_destination(rig: FaultRig, pair: MirrorPair) -> tuple[Commit, str]:
    """Mirror one commit, then flip a byte of its (only) range file at the destination."""
    base = _commit(pair, "main", {f"data/d-{i}.bin": 500 + i for i in range(5)}, "five objects")
    assert rig.run_sync(pair.mirror, label="sync before damage").returncode == 0
    data = pair.src_store.read_bytes(metadata_uri(pair.src_ns, base.metarange_id))
    from lakefs_mirror_dagster.graveler.range_id import verify_range_file
    from lakefs_mirror_dagster.graveler.ranges import iter_range_refs

    [range_ref] = list(iter_range_refs(verify_range_file(data, base.metarange_id)))
    uri = metadata_uri(pair.dst_ns, range_ref.range_id)
    damaged = bytearray(pair.dst_store.read_bytes(uri))
    damaged[len(damaged) // 3] ^= 0xFF
    pair.dst_store.write_bytes(uri, bytes(damaged))
    return base, range_ref.range_id


def _commit_reusing_metarange(pair: MirrorPair, base: Commit) -> Commit:
    """A new head whose tree equals ``base``'s (add an object, then delete it): same metarange and ranges."""
    _commit(pair, "main", {"data/tmp.bin": 77}, "add tmp")
    pair.src.delete_object(pair.repo, "main", "data/tmp.bin")
    head = pair.src.commit(pair.repo, "main", "remove tmp")
    assert head.metarange_id == base.metarange_id, "lakeFS did not reuse the metarange: the test premise is gone"
    return head


def test_range_damaged_at_destination_is_copied_again_once_its_validation_is_forgotten(rig: FaultRig) -> None:
    pair = rig.new_pair("rot")
    base, range_id = _damage_range_at_destination(rig, pair)
    checker = MirrorChecker(pair)
    assert any(range_id in v for v in checker.refs_violations(full=True)), "the checker missed the damage"
    mirror = _mirror(rig, pair)
    assert rig.service(DST).mirrors.forget_validated(mirror.validation_namespace) > 0
    _commit_reusing_metarange(pair, base)

    result = rig.run_sync(pair.mirror, label="sync after forgetting validation")
    assert result.returncode == 0, result.output[-3000:]
    assert not (violations := checker.converged_violations()), violations


def test_range_damaged_at_destination_is_caught_when_a_later_commit_reuses_it(rig: FaultRig) -> None:
    pair = rig.new_pair("reuse")
    base, range_id = _damage_range_at_destination(rig, pair)
    head = _commit_reusing_metarange(pair, base)

    result = _engine(rig, pair).sync()
    main = next(r for r in result.refs if r.name == "main")
    assert main.action == "advanced" and _head(pair.dst, pair.mirror, "main") == head.id, main
    assert main.stats.files_changed_since_validation == 1, main.stats  # the damaged range, copied again
    violations = MirrorChecker(pair).converged_violations()
    if violations:
        raise Violations(f"promoted onto the damaged range {range_id}: {violations}")


def test_object_damaged_in_transit_is_caught(rig: FaultRig) -> None:
    pair = rig.new_pair("objrot")
    head = _commit(pair, "main", {f"data/o-{i}.bin": 700 + i for i in range(4)}, "four objects")
    store = CorruptingStore(_destination_store(rig, pair), lambda uri: "/_lakefs/" not in uri)
    result = _engine(rig, pair, store=store).sync()
    assert store.damaged, "nothing was damaged: the test did not exercise the check"
    main = next(r for r in result.refs if r.name == "main")
    assert main.action == "blocked" and "MD5" in (main.error or ""), main
    assert _head(pair.dst, pair.mirror, "main") != head.id, "promoted onto damaged objects"

    again = rig.run_sync(pair.mirror, label="sync after an object was damaged in transit")
    assert again.returncode == 0, again.output[-3000:]
    violations = MirrorChecker(pair).converged_violations()
    if violations:
        raise Violations(f"after a clean sync: {violations}")


class TamperingClient:
    """The source's lakeFS client, except that one commit comes back with one field changed (ID kept)."""

    def __init__(self, inner: LakeFSClient, commit_id: str, change: dict[str, Any]) -> None:
        self._inner, self._commit_id, self._change = inner, commit_id, change

    def _tampered(self, commit: Commit) -> Commit:
        return dataclasses.replace(commit, **self._change) if commit.id == self._commit_id else commit

    def get_commit(self, repo: str, commit_id: str) -> Commit:
        return self._tampered(self._inner.get_commit(repo, commit_id))

    def log_commits(self, repo: str, ref: str, **kwargs: Any) -> Iterator[Commit]:
        return map(self._tampered, self._inner.log_commits(repo, ref, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_commit_whose_fields_do_not_hash_to_its_id_is_never_created(rig: FaultRig) -> None:
    pair = rig.new_pair("tamper")
    first = _commit(pair, "main", {"data/a.bin": 100}, "first")
    assert rig.run_sync(pair.mirror, label="sync before tampering").returncode == 0
    mirror = _mirror(rig, pair)
    service = rig.service(DST)
    other = _commit(pair, "main", {"data/b.bin": 120}, "second")
    changes: dict[str, dict[str, Any]] = {
        "message": {"message": "second (edited)"},
        "committer": {"committer": "mallory"},
        "creation_date": {"creation_date": other.creation_date + 1},
        "metadata": {"metadata": {"injected": "yes"}},
        "metarange_id": {"metarange_id": first.metarange_id},
        "parents": {"parents": ()},
    }
    for field, change in changes.items():
        source = RepositorySource(
            TamperingClient(pair.src, other.id, change),  # type: ignore[arg-type]
            pair.repo,
            pair.src_ns,
        )
        engine = MirrorEngine(
            source=source,
            destination=service.client(DST),
            mirror_repo=pair.mirror,
            destination_store=pair.dst_store,
            destination_namespace=pair.dst_ns,
            validated=service.mirrors,
            validation_key=mirror.validation_namespace,
        )
        ref = engine.sync_branch("main")
        assert ref.action == "blocked" and ref.error and "does not hash to its ID" in ref.error, (field, ref)
        with pytest.raises(LakeFSNotFound):
            pair.dst.get_commit(pair.mirror, other.id)
        assert _head(pair.dst, pair.mirror, "main") == first.id, field

    honest = rig.run_sync(pair.mirror, label="sync without tampering")
    assert honest.returncode == 0, honest.output[-3000:]
    assert pair.dst.get_commit(pair.mirror, other.id) == pair.src.get_commit(pair.repo, other.id)
    assert not (violations := MirrorChecker(pair).converged_violations()), violations
