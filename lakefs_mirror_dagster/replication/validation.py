"""Is a commit completely present at the destination? Checked from the destination's own storage.

``validate_range`` is a pure function of (store, namespace, range ID, its bases): the in-process validator and
the Spark tasks (one range per task) both call it, so the two can never disagree. The in-process validator also
passes the pass's ``RangeReads``, so a range whose transfer read the same bytes is not hashed and compared again,
and a range file the transfer stored is not even read back where the store's ETag is the MD5 of what it holds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..graveler import EntryLocation, RangeRef, SSTableError, iter_range_refs, verify_range_file
from ..storage import (
    Blockstore,
    Check,
    ObjectNotFound,
    ObjectStat,
    StorageError,
    at_rest_check,
    join_namespace,
    listed_stats,
)
from .range_changes import RangeReads, range_changes

__all__ = [
    "METADATA_PREFIX",
    "RangeValidation",
    "base_reader",
    "describe_failure",
    "metadata_uri",
    "read_metarange",
    "stored_metarange_lists",
    "validate_range",
]

MAX_REPORTED = 20

#: lakeFS's metadata (range and metarange files) under a storage namespace; everything else is object data.
METADATA_PREFIX = "_lakefs/"


def metadata_uri(namespace: str, file_id: str) -> str:
    """Where lakeFS keeps range and metarange files: ``<namespace>/_lakefs/<id>``."""
    return join_namespace(namespace, f"{METADATA_PREFIX}{file_id}")


@dataclass
class RangeValidation:
    """What validating one range found; ``ok`` only when nothing is missing, wrong or unaccepted."""

    range_id: str
    objects: int = 0
    missing: list[str] = field(default_factory=list)
    missing_count: int = 0
    full_addresses: list[str] = field(default_factory=list)
    full_address_count: int = 0
    error: str | None = None
    strict_full_addresses: bool = False
    #: ObjectStat.fingerprint of the range file that was read: the cache trusts the file while it is unchanged.
    fingerprint: str = ""
    #: Objects found present whose ETag could not be compared with lakeFS's checksum (local stores have
    #: none; a multipart checksum and a store's MD5 of the whole stand for different things): size only.
    checked_by_size: int = 0

    @property
    def ok(self) -> bool:
        blocked_by_full = self.strict_full_addresses and self.full_address_count > 0
        return self.error is None and self.missing_count == 0 and not blocked_by_full

    def note_missing(self, what: str) -> None:
        self.missing_count += 1
        if len(self.missing) < MAX_REPORTED:
            self.missing.append(what)


def read_metarange(store: Blockstore, namespace: str, metarange_id: str) -> list[str]:
    """The range IDs of a metarange stored at ``namespace``, after checking the file hashes to its ID."""
    return _listed_range_ids(store.read_bytes(metadata_uri(namespace, metarange_id)), metarange_id)


def stored_metarange_lists(
    store: Blockstore,
    namespace: str,
    metarange_id: str,
    listed: Sequence[RangeRef],
    *,
    written: bytes,
    stat: ObjectStat | None = None,
) -> bool:
    """Whether the metarange file stored at ``namespace`` hashes to its ID and lists the ranges of ``listed``.
    ``written``: the bytes the pass wrote there, which hashed to the ID and listed them; a stored copy identical
    to them settles it without decoding the file again (a growing history's metaranges list every range before
    them), and without reading it back when ``stat`` (the stored file's) shows an ETag that is the MD5 of what the store
    holds (``answers_md5``) and equals theirs. Any other copy is checked as ``read_metarange`` checks it."""
    if stat is not None and stat.size == len(written) and store.answers_md5(stat.size):  # noqa: SIM102
        if (stat.etag or "").lower() == hashlib.md5(written, usedforsecurity=False).hexdigest():
            return True
    data = store.read_bytes(metadata_uri(namespace, metarange_id))
    if data == written:
        return True
    return _listed_range_ids(data, metarange_id) == [r.range_id for r in listed]


def _listed_range_ids(data: bytes, metarange_id: str) -> list[str]:
    return [ref.range_id for ref in iter_range_refs(verify_range_file(data, metarange_id))]


def base_reader(store: Blockstore, namespace: str) -> Callable[[str], bytes]:
    """Reads a base range (validated earlier) from the destination, for ``range_changes``."""
    return lambda range_id: store.read_bytes(metadata_uri(namespace, range_id))


def validate_range(
    store: Blockstore,
    namespace: str,
    range_id: str,
    *,
    strict_full_addresses: bool = False,
    base_ranges: Sequence[str] = (),
    reads: RangeReads | None = None,
) -> RangeValidation:
    """Check the range file at the destination hashes to its ID and every object it names is there with
    the size the entry records and, where the store's ETag can be compared with the entry's checksum
    (``at_rest_check``), a matching one. Objects are looked up by listing their directories where many share
    one (``listed_stats``), else by HEAD. Entries byte-identical to an entry of ``base_ranges`` (validated
    ranges the new one replaces) are counted without a second look (``range_changes``; ``reads`` is the pass's
    memo of what its transfer read; a file it stored, whose ETag is the MD5 of the bytes it verified, is not
    read again). Never raises for a data problem: the result says what is wrong."""
    result = RangeValidation(range_id=range_id, strict_full_addresses=strict_full_addresses)
    try:
        uri = metadata_uri(namespace, range_id)
        stat = store.stat(uri)  # before the read: a file rewritten in between is re-checked next time
        if stat is None:
            raise ObjectNotFound(uri, uri=uri)
        result.fingerprint = stat.fingerprint
        stored = reads.stored(range_id, base_ranges) if reads is not None else None
        if stored is not None and store.answers_md5(stat.size) and (stat.etag or "").lower() == stored[0]:
            changes = stored[1]  # the store holds the bytes this pass's transfer verified and stored
        else:
            changes = range_changes(store.read_bytes(uri), range_id, base_ranges, base_reader(store, namespace), reads)
        result.objects = changes.objects
        to_check: list[tuple[str, EntryLocation]] = []
        for entry in changes.entries:
            key, address, is_full, size, etag = entry
            if is_full:
                result.full_address_count += 1
                if len(result.full_addresses) < MAX_REPORTED:
                    result.full_addresses.append(address)
            else:
                to_check.append((join_namespace(namespace, address), entry))
        listed = listed_stats(store, (object_uri for object_uri, _ in to_check))
        for object_uri, (key, address, _, size, etag) in to_check:
            stat = listed[object_uri] if object_uri in listed else store.stat(object_uri)
            if stat is None:
                result.note_missing(f"{key.decode(errors='replace')} ({address}): missing")
            elif stat.size != size:
                result.note_missing(f"{key.decode(errors='replace')} ({address}): {stat.size} bytes, expected {size}")
            elif (check := at_rest_check(etag, size, stat.etag)) is None:
                result.note_missing(f"{key.decode(errors='replace')} ({address}): MD5 {stat.etag}, expected {etag}")
            else:
                result.checked_by_size += check == Check.SIZE
    except ObjectNotFound:
        result.error = f"range file _lakefs/{range_id} is missing"
    except (SSTableError, StorageError) as exc:
        result.error = f"range {range_id}: {exc}"
    return result


def describe_failure(v: RangeValidation) -> str:
    """One line saying why a range failed validation (with a few examples)."""
    if v.error:
        return v.error
    parts = []
    if v.missing_count:
        examples = ", ".join(v.missing[:5])
        parts.append(f"{v.missing_count} object(s) missing, of the wrong size or with the wrong MD5, e.g. {examples}")
    if v.strict_full_addresses and v.full_address_count:
        parts.append(
            f"{v.full_address_count} object(s) with full (imported) addresses, refused by strict_full_addresses, "
            f"e.g. {', '.join(v.full_addresses[:5])}"
        )
    return f"range {v.range_id}: " + "; ".join(parts)
