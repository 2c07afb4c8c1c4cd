"""Is a commit completely present at the destination? Checked from the destination's own storage.

``validate_range`` is a pure function of (store, namespace, range ID): the in-process validator and the
Spark tasks (one range per task) both call it, so the two can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..graveler.range_id import verify_range_file
from ..graveler.ranges import iter_entry_locations, iter_range_refs
from ..graveler.sstable import SSTableError
from ..storage import Blockstore, ObjectNotFound, StorageError
from ..storage.uri import join_namespace

__all__ = ["RangeValidation", "metadata_uri", "read_metarange", "validate_range"]

MAX_REPORTED = 20


def metadata_uri(namespace: str, file_id: str) -> str:
    """Where lakeFS keeps range and metarange files: ``<namespace>/_lakefs/<id>``."""
    return join_namespace(namespace, f"_lakefs/{file_id}")


@dataclass
class RangeValidation:
    """What validating one range found; ``ok`` only when nothing is missing, wrong or unaccepted."""

    range_id: str
    objects: int = 0
    bytes: int = 0
    missing: list[str] = field(default_factory=list)
    missing_count: int = 0
    full_addresses: list[str] = field(default_factory=list)
    full_address_count: int = 0
    error: str | None = None
    strict_full_addresses: bool = False

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
    data = store.read_bytes(metadata_uri(namespace, metarange_id))
    return [ref.range_id for ref in iter_range_refs(verify_range_file(data, metarange_id))]


def validate_range(
    store: Blockstore, namespace: str, range_id: str, *, strict_full_addresses: bool = False
) -> RangeValidation:
    """Check the range file at the destination hashes to its ID and every object it names is there
    with the size the entry records. Never raises for a data problem: the result says what is wrong."""
    result = RangeValidation(range_id=range_id, strict_full_addresses=strict_full_addresses)
    try:
        data = store.read_bytes(metadata_uri(namespace, range_id))
        sst = verify_range_file(data, range_id)
        for key, address, is_full, size in iter_entry_locations(sst):
            result.objects += 1
            if is_full:
                result.full_address_count += 1
                if len(result.full_addresses) < MAX_REPORTED:
                    result.full_addresses.append(address)
                continue
            stat = store.stat(join_namespace(namespace, address))
            if stat is None:
                result.note_missing(f"{key.decode(errors='replace')} ({address}): missing")
            elif stat.size != size:
                result.note_missing(f"{key.decode(errors='replace')} ({address}): {stat.size} bytes, expected {size}")
            else:
                result.bytes += size
    except ObjectNotFound:
        result.error = f"range file _lakefs/{range_id} is missing"
    except (SSTableError, StorageError) as exc:
        result.error = f"range {range_id}: {exc}"
    return result
