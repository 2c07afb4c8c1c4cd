"""A blockstore on a local (or mounted) directory, laid out like lakeFS's own ``local`` adapter.

``local://name/path`` maps to ``<root>/name/path``; ``local:///abs/path`` (how lakeFS reports physical
addresses) is an absolute path that must still lie under the root. Nothing may resolve outside the root,
neither through ``..`` nor through symbolic links.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_module
import tempfile
from collections.abc import Iterator, Sequence
from typing import BinaryIO, ClassVar

from .base import Blockstore, ObjectInfo, ObjectStat, ReadableStream
from .errors import (
    InvalidStorageURI,
    ObjectNotFound,
    PathEscapeError,
    SizeMismatchError,
    StorageAccessError,
    StorageConfigError,
    StorageError,
    TransientStorageError,
)
from .uri import parse_uri

__all__ = ["TEMP_PREFIX", "LocalBlockstore"]

#: Name prefix of in-progress writes; such files are never listed and never have a final name.
TEMP_PREFIX = ".lakefs-mirror-tmp-"

_TRANSIENT_ERRNOS = frozenset({errno.EAGAIN, errno.EINTR, errno.ETIMEDOUT, errno.EBUSY})


def _map_os_error(exc: OSError, operation: str, uri: str) -> StorageError:
    """Turn an OSError into the storage hierarchy with a message naming operation and URI."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, FileNotFoundError):
        return ObjectNotFound(f"{operation} {uri}: no such object", uri=uri)
    if isinstance(exc, PermissionError):
        return StorageAccessError(f"{operation} {uri}: permission denied ({reason})", uri=uri)
    if isinstance(exc, IsADirectoryError):
        return InvalidStorageURI(f"{operation} {uri}: names a directory, not an object", uri=uri)
    if isinstance(exc, NotADirectoryError):
        return StorageError(f"{operation} {uri}: a parent path component is a file ({reason})", uri=uri)
    if exc.errno in _TRANSIENT_ERRNOS:
        return TransientStorageError(f"{operation} {uri}: {reason}", uri=uri)
    return StorageError(f"{operation} {uri}: {reason}", uri=uri)


def _fsync_dir(path: str) -> None:
    """Persist a rename: without this a crash can lose the directory entry of a completed write."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _version(st: os.stat_result) -> str:
    """Local files have no ETag: modification time and inode change with every (atomic, renamed) rewrite."""
    return f"{st.st_mtime_ns}.{st.st_ino}"


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class LocalBlockstore(Blockstore):
    """Objects as files under ``root``; writes go to a temp file that is fsynced and renamed."""

    schemes: ClassVar[frozenset[str]] = frozenset({"local"})

    def __init__(
        self,
        *,
        root: str | os.PathLike[str],
        chunk_size: int = 1024 * 1024,
        allowed_external_prefixes: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        root_str = os.fspath(root)
        if not root_str:
            raise StorageConfigError("local blockstore: 'path' (the root directory) is empty")
        if chunk_size <= 0:
            raise StorageConfigError(f"local blockstore: chunk_size must be positive, got {chunk_size}")
        self.root = os.path.abspath(os.path.expanduser(root_str))
        self._real_root = os.path.realpath(self.root)
        self.chunk_size = chunk_size
        # lakeFS's blockstore.local.allowed_external_prefixes: absolute paths outside the root that
        # FULL (imported) addresses may name.
        external = [os.path.abspath(os.path.expanduser(os.fspath(p))) for p in allowed_external_prefixes]
        if "/" in external:
            raise StorageConfigError("local blockstore: '/' is not allowed as an external prefix")
        self._allowed = [(self.root, self._real_root)] + [(p, os.path.realpath(p)) for p in external]

    def describe(self) -> str:
        return f"local root {self.root}"

    # -- path resolution ---------------------------------------------------------------------------

    def _check_segments(self, uri: str, text: str) -> None:
        if ".." in text.split("/"):
            raise PathEscapeError(
                f"{uri}: '..' path segments are not allowed in local URIs (store root {self.root})", uri=uri
            )

    def _textual_path(self, uri: str) -> str:
        """The absolute path a URI names, before normalisation; rejects other schemes and escapes."""
        parsed = parse_uri(uri)
        if parsed.scheme != "local":
            raise InvalidStorageURI(f"{uri}: local blockstore only serves local:// URIs", uri=uri)
        rest = uri.split("://", 1)[1]
        self._check_segments(uri, rest)
        if parsed.is_local_absolute:
            if self._base_of(rest) is None:
                raise PathEscapeError(
                    f"{uri}: absolute local path is outside the store root {self.root}"
                    + (" and the allowed external prefixes" if len(self._allowed) > 1 else ""),
                    uri=uri,
                )
            return rest
        return f"{self.root}/{rest}"

    def _base_of(self, path: str) -> str | None:
        """The root or allowed external prefix (as spelled in ``path``) that contains ``path``."""
        for spelled, real in self._allowed:
            for base in (spelled, real):
                if _under(path, base):
                    return base
        return None

    def _check_real(self, uri: str, path: str) -> None:
        real = os.path.realpath(path)
        if not any(_under(real, allowed_real) for _, allowed_real in self._allowed):
            raise PathEscapeError(f"{uri}: resolves (through a symbolic link) outside {self.root}", uri=uri)

    def path_for(self, uri: str) -> str:
        """The file path of an object URI, guaranteed to lie under the root (or an allowed prefix)."""
        text = self._textual_path(uri)
        if text.endswith("/"):
            raise InvalidStorageURI(f"{uri}: ends with '/', so it names a directory, not an object", uri=uri)
        path = os.path.normpath(text)
        if any(path in pair for pair in self._allowed):
            raise InvalidStorageURI(f"{uri}: names the store root, not an object", uri=uri)
        self._check_real(uri, path)
        return path

    def canonical_uri(self, uri: str) -> str:
        """``local:///<root>/name/x`` -> ``local://name/x``: the form namespaces use."""
        path = os.path.realpath(self.path_for(uri))
        if not _under(path, self._real_root):
            return "local://" + path  # an allowed external path keeps its absolute form
        return "local://" + os.path.relpath(path, self._real_root).replace(os.sep, "/")

    # -- reads -------------------------------------------------------------------------------------

    def stat(self, uri: str) -> ObjectStat | None:
        path = self.path_for(uri)
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise _map_os_error(exc, "stat", uri) from exc
        if not stat_module.S_ISREG(st.st_mode):
            return None
        return ObjectStat(size=st.st_size, etag=None, version=_version(st))

    def open_read(self, uri: str, *, size: int | None = None) -> BinaryIO:
        path = self.path_for(uri)
        try:
            return open(path, "rb")  # the caller owns and closes the stream
        except NotADirectoryError as exc:
            raise ObjectNotFound(f"read {uri}: no such object", uri=uri) from exc
        except OSError as exc:
            raise _map_os_error(exc, "read", uri) from exc

    # -- writes ------------------------------------------------------------------------------------

    def write_stream(self, uri: str, stream: ReadableStream, size: int | None = None) -> ObjectStat:
        path = self.path_for(uri)
        directory = os.path.dirname(path)
        tmp: str | None = None
        try:
            os.makedirs(directory, exist_ok=True)
            self._check_real(uri, directory)
            fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=directory)
            os.fchmod(fd, 0o644)
            written = 0
            with os.fdopen(fd, "wb") as out:
                while True:
                    try:
                        chunk = stream.read(self.chunk_size)
                    except OSError as exc:  # the source failed, not us: do not relabel its error
                        raise _SourceReadError(exc) from exc
                    if not chunk:
                        break
                    out.write(chunk)
                    written += len(chunk)
                    if size is not None and written > size:
                        break
                out.flush()
                os.fsync(out.fileno())
            if size is not None and written != size:
                raise SizeMismatchError(
                    f"write {uri}: expected {size} bytes but the source delivered "
                    f"{'more than ' + str(size) if written > size else written}; nothing was stored",
                    uri=uri,
                )
            os.replace(tmp, path)
            tmp = None
            _fsync_dir(directory)
            return ObjectStat(size=written, etag=None, version=_version(os.stat(path)))
        except _SourceReadError as exc:
            raise exc.error from None
        except OSError as exc:
            raise _map_os_error(exc, "write", uri) from exc
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def write_bytes(self, uri: str, data: bytes, *, md5: str | None = None) -> ObjectStat:
        view = memoryview(data)
        return self.write_stream(uri, _MemoryReader(view), len(view))

    def delete(self, uri: str) -> None:
        path = self.path_for(uri)
        try:
            os.unlink(path)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise _map_os_error(exc, "delete", uri) from exc

    # -- listing -----------------------------------------------------------------------------------

    def list_prefix(self, uri_prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        text = self._textual_path(uri_prefix)
        absolute_form = parse_uri(uri_prefix).is_local_absolute
        root_form = (self._base_of(text) or self.root) if absolute_form else self.root
        walk_from = text if text.endswith("/") else os.path.dirname(text)
        walk_from = os.path.normpath(walk_from)
        if not _under(walk_from, root_form):
            walk_from = root_form
        self._check_real(uri_prefix, walk_from)
        for path, size in self._walk(walk_from, text):
            uri = "local://" + (path if absolute_form else path[len(root_form) + 1 :])
            if start_after is None or uri > start_after:
                yield ObjectInfo(uri=uri, size=size, etag=None)

    def _walk(self, directory: str, prefix: str) -> Iterator[tuple[str, int]]:
        """Depth-first in key order, as S3 lists (a directory sorts as its name plus ``/``, so ``a-b`` comes
        before ``a/x``: a merge of two listings relies on it); skips temp files, never follows symlinks."""
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name + "/" if e.is_dir(follow_symlinks=False) else e.name)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise _map_os_error(exc, "list", "local://" + directory) from exc
        for entry in entries:
            if entry.name.startswith(TEMP_PREFIX):
                continue
            full = f"{directory}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                sub = full + "/"
                if sub.startswith(prefix) or prefix.startswith(sub):
                    yield from self._walk(full, prefix)
            elif entry.is_file(follow_symlinks=False) and full.startswith(prefix):
                try:
                    yield full, entry.stat(follow_symlinks=False).st_size
                except FileNotFoundError:
                    continue  # deleted while listing

    # -- copies ------------------------------------------------------------------------------------

    def same_endpoint_as(self, other: Blockstore) -> bool:
        return isinstance(other, LocalBlockstore) and other._real_root == self._real_root

    def server_side_copy(self, src_uri: str, dst_uri: str) -> ObjectStat:
        st = self.stat(src_uri)
        if st is None:
            raise ObjectNotFound(f"copy {src_uri}: no such object", uri=src_uri)
        with self.open_read(src_uri) as src:
            return self.write_stream(dst_uri, src, st.size)


class _SourceReadError(Exception):
    """Carries an OSError raised by the source stream past the destination's error mapping."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class _MemoryReader:
    """Reads a memoryview in slices without copying the whole buffer."""

    def __init__(self, view: memoryview) -> None:
        self._view = view
        self._pos = 0

    def read(self, size: int = -1, /) -> bytes:
        end = len(self._view) if size < 0 else min(len(self._view), self._pos + size)
        chunk = bytes(self._view[self._pos : end])
        self._pos = end
        return chunk
