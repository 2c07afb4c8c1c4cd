"""lakeFS's key-value records of a repository's commits, as its ref manager keeps them.

Why: lakeFS orders a log by each commit's full-precision creation time, while its ``CreateCommitRecord`` API
takes whole seconds. Writing the record itself, in lakeFS's format (lakeFS 1.84, ``pkg/graveler``), keeps the
source's sub-second time, so the mirror lists same-second commits in the source's order.
"""

from __future__ import annotations

from .errors import ProtoError
from .protowire import as_int32, as_str, iter_fields
from .records import CommitData
from .varint import encode_uvarint

__all__ = [
    "REPOSITORIES_PARTITION",
    "commit_key",
    "encode_commit_data",
    "repository_key",
    "repository_partition",
    "repository_record",
]

#: The partition holding every repository's record (``graveler.RepositoriesPartition``).
REPOSITORIES_PARTITION = "graveler"
#: ``RepositoryState``: only an active repository's partition is written.
_STATE_ACTIVE = 0

_VARINT, _LEN = 0, 2
_INT64_RANGE = 1 << 64


def repository_key(repository: str) -> str:
    return f"repos/{repository}"


def repository_partition(repository: str, instance_uid: str) -> str:
    """``graveler.RepoPartition``: where the repository's branches, tags and commits live.

    A repository's records live in the partition ``<repository>-<instance_uid>``, the instance UID read from the
    repository's record ``repos/<repository>`` in the partition ``graveler`` (``RepositoryData`` field 6).
    """
    return f"{repository}-{instance_uid}"


def commit_key(commit_id: str) -> str:
    return f"commits/{commit_id}"


def repository_record(data: bytes) -> tuple[str, bool]:
    """``(instance_uid, active)`` of a ``RepositoryData`` value."""
    what = "graveler.RepositoryData"
    uid, state = "", _STATE_ACTIVE
    for num, _wire, value in iter_fields(data, what):
        if num == 6:
            uid = as_str(value, what, "instance_uid")
        elif num == 5:
            state = as_int32(value, what, "state")
    if not uid:
        raise ProtoError(f"{what}: no instance_uid")
    return uid, state == _STATE_ACTIVE


def _tag(num: int, wire: int) -> bytes:
    return encode_uvarint(num << 3 | wire)


def _varint_field(num: int, value: int) -> bytes:
    """An int32/int64 field; negative values are 64-bit two's complement, as protobuf has them."""
    return _tag(num, _VARINT) + encode_uvarint(value % _INT64_RANGE) if value else b""


def _bytes_field(num: int, value: bytes, *, always: bool = False) -> bytes:
    return _tag(num, _LEN) + encode_uvarint(len(value)) + value if value or always else b""


def _str_field(num: int, value: str) -> bytes:
    return _bytes_field(num, value.encode())


def encode_commit_data(commit: CommitData) -> bytes:
    """The ``CommitData`` bytes lakeFS stores for ``commit`` (what ``decode_commit_data`` reads back).

    The key is ``commits/<commit ID>``; the value the bare ``CommitData`` protobuf, encoded here from its field
    numbers (proto3 rules: zero scalars and empty strings omitted): id 1, committer 2, message 3, creation_date 4
    (``google.protobuf.Timestamp``: seconds 1, nanos 2), meta_range_id 5, metadata 6 (``map<string, string>``),
    parents 7, version 8, generation 9.
    """
    timestamp = _varint_field(1, commit.creation_date_seconds) + _varint_field(2, commit.creation_date_nanos)
    out = [
        _str_field(1, commit.id),
        _str_field(2, commit.committer),
        _str_field(3, commit.message),
        _bytes_field(4, timestamp, always=True),
        _str_field(5, commit.meta_range_id),
    ]
    for key in sorted(commit.metadata):
        out.append(_bytes_field(6, _str_field(1, key) + _str_field(2, commit.metadata[key]), always=True))
    out.extend(_bytes_field(7, parent.encode(), always=True) for parent in commit.parents)
    out.append(_varint_field(8, commit.version))
    out.append(_varint_field(9, commit.generation))
    return b"".join(out)
