"""Scrub: re-read a mirror's bytes at rest, check them as strongly as lakeFS's records allow, repair from the source.

Validation looks at an object once, when its range is new; bit rot or an overwrite in the mirror's bucket is
invisible after that. A scrub reads, for the commits the mirror's refs point at, each metarange and range file
(must hash to its ID) and each object (must match lakeFS's recorded checksum and size, ``storage.checksums``),
and copies what differs again through the same verifying copy as a sync. ``sample`` and ``part`` (slice k of n
by range ID) cut the work; objects with full (imported) addresses are skipped.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from ..config import Concurrency
from ..graveler import SSTableError, iter_entry_locations, iter_range_refs, verify_range_file
from ..lakefs import LakeFSError
from ..replication import ReplicationError, RepositorySource, metadata_uri
from ..replication.heads import branch_heads, tag_commits
from ..replication.validation import MAX_REPORTED
from ..storage import (
    DEFAULT_MAX_BYTES_IN_FLIGHT,
    Blockstore,
    Check,
    ChecksumMismatchError,
    CopyTask,
    StorageError,
    TransferPool,
    fixed_workers,
    join_namespace,
)
from ..storage.checksums import ContentHasher, ExpectedContent, RecordedChecksum, VerifyingReader

__all__ = ["ScrubReport", "Scrubber", "parse_part"]

log = logging.getLogger(__name__)

_CHUNK = 1024 * 1024
_SOURCE = "source"  # the check of an object compared with the source's bytes


def parse_part(text: str) -> tuple[int, int]:
    """``"k/n"`` (slice k of n, 0 <= k < n) as a tuple; ValueError naming the form otherwise."""
    k, sep, n = text.partition("/")
    try:
        part = (int(k), int(n))
    except ValueError:
        part = (-1, 0)
    if not sep or not 0 <= part[0] < part[1]:
        raise ValueError(f"expected a slice K/N with 0 <= K < N, e.g. 0/24; got {text!r}")
    return part


def in_part(range_id: str, part: tuple[int, int] | None) -> bool:
    """Whether a range belongs to slice ``part`` (by its ID, so each range lands in exactly one slice)."""
    return part is None or int(range_id[:8], 16) % part[1] == part[0]


@dataclass
class ScrubReport:
    """What one scrub of one mirror read, found and repaired (the CLI prints it as JSON)."""

    mirror: str
    refs: int = 0
    metadata_files: int = 0
    objects_checked: int = 0
    bytes_read: int = 0
    checks: dict[str, int] = field(default_factory=dict)
    skipped_full_addresses: int = 0
    #: Objects whose checksum no part layout explains (uneven parts), compared byte for byte with the source's.
    compared_with_source: int = 0
    damaged: list[str] = field(default_factory=list)
    damaged_count: int = 0
    repaired: int = 0
    unrepaired: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing damaged is left: what was found was repaired, and everything could be read."""
        return not self.unrepaired and not self.errors and self.repaired == self.damaged_count

    def note_damage(self, what: str) -> None:
        self.damaged_count += 1
        if len(self.damaged) < MAX_REPORTED:
            self.damaged.append(what)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


@dataclass(frozen=True)
class _Object:
    key: str
    address: str
    size: int
    checksum: str
    commit_id: str  # a commit that holds it: where the source's lakeFS API serves its bytes


class Scrubber:
    """Scrubs one mirror: its store and namespace, the source it repairs from, its lakeFS repository."""

    def __init__(
        self,
        *,
        mirror_repo: str,
        destination: Any,
        destination_store: Blockstore,
        destination_namespace: str,
        source: RepositorySource,
        concurrency: Concurrency = 8,
        max_bytes_in_flight: int = DEFAULT_MAX_BYTES_IN_FLIGHT,
        page_size: int = 1000,
    ) -> None:
        self.mirror_repo = mirror_repo
        self.destination = destination
        self.store = destination_store
        self.namespace = destination_namespace
        self.source = source
        #: The repairs' copies in flight (``auto`` too); the checks' threads: that many, or ``AUTO_START``.
        self.concurrency = concurrency
        self.max_bytes_in_flight = max_bytes_in_flight
        self.page_size = page_size
        self._part_sizes: tuple[int, ...] = ()  # multipart part sizes matched so far: one writer's objects share one
        self._lock = threading.Lock()

    def scrub(
        self,
        *,
        branches: Sequence[str] | None = None,
        sample: float = 1.0,
        part: tuple[int, int] | None = None,
        repair: bool = True,
        seed: int | None = None,
    ) -> ScrubReport:
        """Check the commits of ``branches`` (every branch and tag when None); repair what differs."""
        if not 0 < sample <= 1:
            raise ReplicationError(f"sample must be a fraction in (0, 1], got {sample}")
        report = ScrubReport(self.mirror_repo)
        commits = self._ref_commits(branches)
        report.refs = len(commits)
        rng = random.Random(seed)
        objects: dict[str, _Object] = {}
        seen_ranges: set[str] = set()
        for commit_id in dict.fromkeys(commits.values()):
            try:
                metarange_id = self.destination.get_commit(self.mirror_repo, commit_id).metarange_id
                if not metarange_id:
                    continue  # the empty first commit of a repository
                metarange = self._metadata_file(report, "meta_range", metarange_id, repair)
            except (LakeFSError, StorageError, SSTableError) as exc:
                report.errors.append(f"commit {commit_id}: {type(exc).__name__}: {exc}")
                continue
            for ref in iter_range_refs(metarange):
                if ref.range_id in seen_ranges or not in_part(ref.range_id, part):
                    continue
                seen_ranges.add(ref.range_id)
                try:
                    sst = self._metadata_file(report, "range", ref.range_id, repair)
                except (LakeFSError, StorageError, SSTableError) as exc:
                    report.errors.append(f"range {ref.range_id}: {type(exc).__name__}: {exc}")
                    continue
                for key, address, is_full, size, checksum in iter_entry_locations(sst):
                    if is_full:
                        report.skipped_full_addresses += 1
                    elif sample >= 1 or rng.random() < sample:
                        name = key.decode(errors="replace")
                        objects.setdefault(address, _Object(name, address, size, checksum, commit_id))
        damaged = self._check_objects(report, list(objects.values()))
        if damaged and repair:
            self._repair(report, damaged)
        elif damaged:
            report.unrepaired.extend(f"{o.key} ({o.address})" for o in damaged[:MAX_REPORTED])
        log.info(
            "scrub of %s: %d object(s) and %d metadata file(s) read, %d damaged, %d repaired",
            self.mirror_repo,
            report.objects_checked,
            report.metadata_files,
            report.damaged_count,
            report.repaired,
        )
        return report

    # ---------------------------------------------------------------- refs and metadata files
    def _ref_commits(self, branches: Sequence[str] | None) -> dict[str, str]:
        heads = branch_heads(self.destination, self.mirror_repo, page_size=self.page_size)
        if branches is not None:
            unknown = sorted(set(branches) - set(heads))
            if unknown:
                raise ReplicationError(f"mirror {self.mirror_repo} has no branch {', '.join(unknown)}")
            return {b: heads[b] for b in branches}
        tags = tag_commits(self.destination, self.mirror_repo, page_size=self.page_size)
        return {**heads, **{f"tag {t}": c for t, c in tags.items()}}

    def _metadata_file(self, report: ScrubReport, kind: str, file_id: str, repair: bool) -> Any:
        """The parsed file, after checking it hashes to its ID; a damaged or missing one is copied again from
        the source first (when ``repair``), else the error is raised."""
        uri = metadata_uri(self.namespace, file_id)
        report.metadata_files += 1
        try:
            data = self.store.read_bytes(uri)
            report.bytes_read += len(data)
            return verify_range_file(data, file_id)
        except (StorageError, SSTableError) as exc:
            report.note_damage(f"_lakefs/{file_id}: {exc}")
            if not repair:
                report.unrepaired.append(f"_lakefs/{file_id}")
                raise
        good = self.source.read_metadata(kind, file_id)
        sst = verify_range_file(good, file_id)  # the source's copy must be right before it replaces ours
        self.store.write_bytes(uri, good)
        report.repaired += 1
        log.warning("scrub of %s: repaired _lakefs/%s from the source", self.mirror_repo, file_id)
        return sst

    # ---------------------------------------------------------------- objects
    def _check_objects(self, report: ScrubReport, objects: list[_Object]) -> list[_Object]:
        damaged: list[_Object] = []

        def check(obj: _Object) -> None:
            uri = join_namespace(self.namespace, obj.address)
            try:
                problem, check_done, nbytes = self._check_one(uri, obj)
            except StorageError as exc:
                problem, check_done, nbytes = f"unreadable: {exc}", None, 0
            with self._lock:
                report.objects_checked += 1
                report.bytes_read += nbytes
                if check_done == _SOURCE:
                    report.compared_with_source += 1
                elif check_done is not None:
                    report.checks[str(check_done)] = report.checks.get(str(check_done), 0) + 1
                if problem is not None:
                    report.note_damage(f"{obj.key} ({obj.address}): {problem}")
                    damaged.append(obj)

        with ThreadPoolExecutor(max_workers=fixed_workers(self.concurrency), thread_name_prefix="scrub") as pool:
            list(pool.map(check, objects))
        return damaged

    def _check_one(self, uri: str, obj: _Object) -> tuple[str | None, str | None, int]:
        """(problem or None, the check passed, bytes read) for one object at rest."""
        stat = self.store.stat(uri)
        if stat is None:
            return "missing", None, 0
        if stat.size != obj.size:
            return f"{stat.size} bytes, lakeFS recorded {obj.size}", None, 0
        recorded = RecordedChecksum.parse(obj.checksum)
        first = self._read_checked(uri, ExpectedContent(obj.checksum, obj.size, part_sizes=self._part_sizes))
        nbytes = obj.size
        if first.check in (Check.MD5, Check.MULTIPART_MD5) or (first.check == Check.SIZE and recorded.hex is None):
            return None, first.check, nbytes
        if first.check is None and recorded.may_be_multipart(obj.size):  # a part size not tried yet? all now
            again = self._read_checked(uri, ExpectedContent(obj.checksum, obj.size, discover=True))
            nbytes += obj.size
            if again.check in (Check.MD5, Check.MULTIPART_MD5):
                return None, again.check, nbytes
        if first.check == Check.SIZE or recorded.may_be_multipart(obj.size):
            # a multipart checksum no part size explains (uneven parts), or damage: the source's bytes tell
            src_store, src_uri = self.source.object_location(obj.commit_id, obj.key, obj.address)
            if _md5_of(src_store, src_uri) == first.md5:
                return None, _SOURCE, nbytes + obj.size
        return f"bytes hash to MD5 {first.md5}, lakeFS recorded {obj.checksum}", None, nbytes

    def _read_checked(self, uri: str, expected: ExpectedContent) -> _Read:
        stream = self.store.open_read(uri)
        reader = VerifyingReader(stream, expected, uri=uri)
        try:
            while reader.read(_CHUNK):
                pass
            reader.complete()
        except ChecksumMismatchError as exc:
            return _Read(None, None, exc.content_md5)
        finally:
            stream.close()
        if reader.part_size is not None:
            with self._lock:
                self._part_sizes = tuple(dict.fromkeys((reader.part_size, *self._part_sizes)))[:4]
        return _Read(reader.check, reader.part_size, reader.md5)

    def _repair(self, report: ScrubReport, damaged: Iterable[_Object]) -> None:
        tasks = []
        for obj in damaged:
            src_store, src_uri = self.source.object_location(obj.commit_id, obj.key, obj.address)
            dst_uri = join_namespace(self.namespace, obj.address)
            tasks.append(CopyTask(src_store, src_uri, self.store, dst_uri, size=obj.size, etag=obj.checksum))
        pool = TransferPool(
            concurrency=self.concurrency, max_bytes_in_flight=self.max_bytes_in_flight, skip_existing=False
        )
        summary = pool.run(tasks)
        report.repaired += summary.copied
        report.unrepaired.extend(f.describe() for f in summary.failed[:MAX_REPORTED])
        if summary.copied:
            log.warning("scrub of %s: repaired %d object(s) from the source", self.mirror_repo, summary.copied)


@dataclass(frozen=True)
class _Read:
    check: Check | None
    part_size: int | None
    md5: str | None


def _md5_of(store: Blockstore, uri: str) -> str:
    hasher = ContentHasher()
    with store.open_read(uri) as stream:
        while chunk := stream.read(_CHUNK):
            hasher.update(chunk)
    return hasher.md5
