"""Content checks for copied objects, as exact as what lakeFS recorded allows.

lakeFS (v1.84) records an entry's checksum as the MD5 of its bytes, or a multipart ETag (with or without its
``-<parts>`` suffix), or whatever ``link_physical_address`` was given; 32 hex digits can be either, and only the
bytes tell. A copy hashes what it streams for the MD5 and each candidate part size, and records the check an
object passed (``Check``). An object over 5 MiB that no part size explains is read again with every common part
size; if it still matches nothing but both reads agree, it is accepted by size, counted as such.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from .base import ReadableStream
from .errors import ChecksumMismatchError

__all__ = [
    "COMMON_PART_SIZES",
    "S3_MIN_PART_SIZE",
    "Check",
    "ContentHasher",
    "ExpectedContent",
    "RecordedChecksum",
    "VerifyingReader",
    "at_rest_check",
    "multipart_etag",
]

log = logging.getLogger(__name__)

MiB = 1024 * 1024
#: S3's smallest part (all but the last): an object this size or smaller was written in one part.
S3_MIN_PART_SIZE = 5 * MiB
#: Part sizes of the clients that write through lakeFS's S3 gateway: AWS SDKs and CLI (5, 8 MiB), Arrow
#: and object_store (10 MiB), minio-go (16 MiB multiples), s3fs (50 MiB), Hadoop s3a (64, 100 MiB), ...
COMMON_PART_SIZES: tuple[int, ...] = tuple(m * MiB for m in (5, 8, 10, 16, 32, 50, 64, 100, 128))
#: At most this many part sizes derived from a ``-<parts>`` suffix are tried besides the common ones.
_DERIVED_CANDIDATES = 4

_HEX = re.compile(r"[0-9a-f]{32}")
_ETAG = re.compile(r"([0-9a-f]{32})(?:-([0-9]+))?")


class Check(StrEnum):
    """How an object's bytes were checked against what lakeFS recorded."""

    MD5 = "md5"  # the MD5 of the bytes is the checksum
    MULTIPART_MD5 = "multipart_md5"  # the multipart ETag of the bytes, for a part size found, is the checksum
    SIZE = "size"  # nothing but the size can be checked (see the module docstring for when)


@dataclass(frozen=True)
class RecordedChecksum:
    """An ETag-like checksum split into its hex digest and its ``-<parts>`` suffix (None where absent).

    What lakeFS v1.84 records (read from its source): an object written in one piece, the MD5 lakeFS computed;
    one completed by a multipart upload on the S3 gateway, the multipart ETag without its ``-<parts>`` suffix (the
    local blockstore computes the same); a presigned multipart upload through the API, the store's ETag with its
    suffix; ``link_physical_address``, whatever the client passed, quotes stripped. An object of at most 5 MiB cannot
    have two parts under S3's rules, so its checksum is always checkable.
    """

    hex: str | None
    parts: int | None = None

    @classmethod
    def parse(cls, etag: str | None) -> RecordedChecksum:
        text = (etag or "").strip().strip('"').lower()
        match = _ETAG.fullmatch(text)
        if match is None:
            return cls(None)
        return cls(match.group(1), int(match.group(2)) if match.group(2) else None)

    @property
    def may_be_content_md5(self) -> bool:
        return self.hex is not None and self.parts is None

    def may_be_multipart(self, size: int) -> bool:
        """Whether the checksum can be the ETag of two or more parts (a suffix says so; without one, only
        an object larger than S3's smallest part can have a second part)."""
        if self.hex is None:
            return False
        return (self.parts or 0) > 1 or (self.parts is None and size > S3_MIN_PART_SIZE)


def multipart_etag(part_digests: Iterable[bytes]) -> str:
    """The hex multipart ETag of parts with these binary MD5s (without the ``-<parts>`` suffix)."""
    return hashlib.md5(b"".join(part_digests), usedforsecurity=False).hexdigest()


def _one_part_etag(md5_hex: str) -> str:
    return multipart_etag([bytes.fromhex(md5_hex)])


def candidate_part_sizes(
    recorded: RecordedChecksum, size: int, *, hints: Sequence[int] = (), discover: bool = False
) -> tuple[int, ...]:
    """Part sizes worth hashing for an object: ``hints`` (the source store's own part size, sizes seen
    earlier in the same transfer), plus the common ones when ``discover``, plus those a ``-<parts>`` suffix
    allows. Only sizes that give two parts or more: the one-part ETag is always checked anyway."""
    if not recorded.may_be_multipart(size):
        return ()
    wanted = [*hints, *(COMMON_PART_SIZES if discover or recorded.parts else ())]
    if recorded.parts:
        n = recorded.parts
        low, high = -(-size // n), (size - 1) // (n - 1)  # every part size that gives exactly n parts
        first_mib = -(-low // MiB)
        wanted.extend(m * MiB for m in range(first_mib, first_mib + _DERIVED_CANDIDATES) if m * MiB <= high)
        wanted = [p for p in wanted if -(-size // p) == n]
    return tuple(dict.fromkeys(p for p in wanted if 0 < p < size))


class _PartHashes:
    """The MD5 of each consecutive ``part_size`` bytes of a stream."""

    __slots__ = ("_current", "_filled", "digests", "part_size")

    def __init__(self, part_size: int) -> None:
        self.part_size = part_size
        self.digests: list[bytes] = []
        self._current = hashlib.md5(usedforsecurity=False)
        self._filled = 0

    def update(self, view: memoryview) -> None:
        while view:
            take = min(len(view), self.part_size - self._filled)
            self._current.update(view[:take])
            self._filled += take
            view = view[take:]
            if self._filled == self.part_size:
                self.digests.append(self._current.digest())
                self._current = hashlib.md5(usedforsecurity=False)
                self._filled = 0

    def etag(self) -> tuple[str, int]:
        digests = self.digests + ([self._current.digest()] if self._filled else [])
        return multipart_etag(digests), len(digests)


class ContentHasher:
    """Hashes a stream once for every check it may need: its MD5 and its multipart ETag per part size."""

    def __init__(self, part_sizes: Sequence[int] = ()) -> None:
        self._whole = hashlib.md5(usedforsecurity=False)
        self._parts = [_PartHashes(p) for p in part_sizes]

    def update(self, chunk: bytes | memoryview) -> None:
        self._whole.update(chunk)
        if self._parts:
            view = memoryview(chunk)
            for parts in self._parts:
                parts.update(view)

    @property
    def md5(self) -> str:
        return self._whole.hexdigest()

    def explain(self, recorded: RecordedChecksum) -> tuple[Check, int | None] | None:
        """Which check the bytes pass against ``recorded`` (and the part size that passed), or None."""
        if recorded.hex is None:
            return Check.SIZE, None
        md5 = self.md5
        if recorded.parts is None and recorded.hex == md5:
            return Check.MD5, None
        if recorded.parts in (None, 1) and recorded.hex == _one_part_etag(md5):
            return Check.MULTIPART_MD5, None
        for parts in self._parts:
            etag, count = parts.etag()
            if etag == recorded.hex and recorded.parts in (None, count):
                return Check.MULTIPART_MD5, parts.part_size
        return None


@dataclass(frozen=True)
class ExpectedContent:
    """What lakeFS recorded for an object, and how hard to look for a multipart layout that explains it.

    ``previous_md5`` is the MD5 an earlier read of the same source delivered: two reads that agree rule out
    damage on the way, which lets a checksum no part size explains fall back to size (never for objects
    that can only have one part)."""

    checksum: str | None
    size: int
    part_sizes: tuple[int, ...] = ()
    discover: bool = False
    previous_md5: str | None = None

    @property
    def recorded(self) -> RecordedChecksum:
        return RecordedChecksum.parse(self.checksum)

    def candidates(self) -> tuple[int, ...]:
        return candidate_part_sizes(self.recorded, self.size, hints=self.part_sizes, discover=self.discover)


class VerifyingReader:
    """Passes a stream through, hashing it; the read that completes the object raises ChecksumMismatchError
    instead of returning the last bytes when they match nothing lakeFS recorded, so the store aborts the
    write and nothing is stored under the name. Afterwards ``check``, ``part_size`` and ``md5`` say what
    passed."""

    def __init__(self, stream: ReadableStream, expected: ExpectedContent, *, uri: str) -> None:
        self._stream = stream
        self._expected = expected
        self._remaining = expected.size
        self._uri = uri
        self._tried = expected.candidates()
        self._hasher = ContentHasher(self._tried)
        self.check: Check | None = None
        self.part_size: int | None = None
        self.md5: str | None = None

    def read(self, size: int = -1, /) -> bytes:
        chunk = self._stream.read(size)
        if not chunk:
            if self._remaining == 0 and self.check is None:
                self._finish()  # an empty object completes on its first read
            return chunk
        self._hasher.update(chunk)
        self._remaining -= len(chunk)
        if self._remaining == 0:
            self._finish()
        return chunk

    def readinto(self, buffer: memoryview) -> int:
        """``read`` into ``buffer`` (``streams.fill``), without a copy of the bytes in between."""
        readinto = getattr(self._stream, "readinto", None)
        if readinto is None:
            chunk = self.read(len(buffer))
            buffer[: len(chunk)] = chunk
            return len(chunk)
        n = int(readinto(buffer) or 0)
        if not n:
            if self._remaining == 0 and self.check is None:
                self._finish()
            return 0
        self._hasher.update(buffer[:n])
        self._remaining -= n
        if self._remaining == 0:
            self._finish()
        return n

    def complete(self) -> None:
        """Check now if the whole object was read but not checked yet (a store that writes an empty object
        without reading it); raises as ``read`` would."""
        if self.check is None and self._remaining == 0:
            self._finish()

    def _finish(self) -> None:
        self.md5 = self._hasher.md5
        recorded = self._expected.recorded
        explained = self._hasher.explain(recorded)
        if explained is not None:
            self.check, self.part_size = explained
            return
        if not recorded.may_be_content_md5:  # "<hex>-<n>" of parts we could not reproduce: not a content MD5
            self.check = Check.SIZE
            return
        size = self._expected.size
        if recorded.may_be_multipart(size) and self._expected.discover and self._expected.previous_md5 == self.md5:
            log.warning(
                "copy %s: lakeFS recorded %s, which is neither the MD5 of its %d bytes nor their multipart ETag "
                "for part sizes %s; two reads agree on the bytes, so it is a multipart layout of uneven parts: "
                "checked by size",
                self._uri,
                recorded.hex,
                size,
                _mib(self._tried),
            )
            self.check = Check.SIZE
            return
        if recorded.may_be_multipart(size):
            also = f" nor their multipart ETag for part sizes {_mib(self._tried)}" if self._tried else ""
            detail = f"neither their MD5 {self.md5}{also}; nothing was stored"
        else:
            detail = f"the bytes read hash to MD5 {self.md5}; nothing was stored"
        raise ChecksumMismatchError(
            f"copy {self._uri}: lakeFS recorded {recorded.hex}, {detail}", uri=self._uri, content_md5=self.md5
        )


def _mib(sizes: Sequence[int]) -> str:
    return ", ".join(f"{p / MiB:g} MiB" for p in sizes) or "none"


def at_rest_check(checksum: str | None, size: int, found_etag: str | None) -> Check | None:
    """Compare a stored object's ETag (from a HEAD or a listing) with the checksum lakeFS recorded,
    without reading its bytes. None means proof that the content differs; otherwise the check it passed
    (``SIZE`` where ETags cannot be compared: no ETag, or the two may stand for different part layouts)."""
    recorded, found = RecordedChecksum.parse(checksum), RecordedChecksum.parse(found_etag)
    if recorded.hex is None or found.hex is None:
        return Check.SIZE
    if (found.hex == recorded.hex and None in (found.parts, recorded.parts)) or found == recorded:
        return Check.MD5 if found.parts is None and recorded.parts is None else Check.MULTIPART_MD5
    if found.parts is None and recorded.parts in (None, 1) and recorded.hex == _one_part_etag(found.hex):
        return Check.MULTIPART_MD5
    if found.parts is None and recorded.parts is None and not recorded.may_be_multipart(size):
        return None  # both are MD5s of the content (it can only have one part), and they differ
    return Check.SIZE
