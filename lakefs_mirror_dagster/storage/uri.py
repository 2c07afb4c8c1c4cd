"""Parsing and joining of storage URIs and lakeFS storage namespaces.

lakeFS names objects by full URIs (``s3://bucket/key``, ``local://name/path``, ``local:///abs/path``) and
stores most object addresses relative to the repository's storage namespace. URLs are parsed by hand
rather than with ``urllib`` because S3 keys may legally contain ``?``, ``#`` and ``%``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InvalidStorageURI

__all__ = [
    "StorageURI",
    "join_namespace",
    "namespace_prefix",
    "namespaces_overlap",
    "parse_uri",
    "relative_to_namespace",
    "same_namespace",
]

_SCHEME_RE = re.compile(r"^[a-z][a-z0-9+.-]*$")


@dataclass(frozen=True)
class StorageURI:
    """A parsed storage URI: ``<scheme>://<bucket>/<key>``.

    For ``s3`` the bucket is the S3 bucket and the key the object key. For ``local`` the "bucket" is the
    first path segment below the store root (``local://name/a`` -> bucket ``name``, key ``a``), or empty
    for the absolute form (``local:///var/x`` -> bucket ``""``, key ``var/x``, meaning ``/var/x``).
    """

    scheme: str
    bucket: str
    key: str

    @property
    def is_local_absolute(self) -> bool:
        """True for ``local:///abs/path`` addresses, which name an absolute filesystem path."""
        return self.scheme == "local" and self.bucket == ""

    def __str__(self) -> str:
        if not self.key:
            return f"{self.scheme}://{self.bucket}"
        return f"{self.scheme}://{self.bucket}/{self.key}"


def parse_uri(uri: str) -> StorageURI:
    """Split a storage URI into scheme, bucket and key, rejecting what cannot be an object address."""
    if not isinstance(uri, str):
        raise InvalidStorageURI(f"storage URI must be a string, got {type(uri).__name__}")
    if "\x00" in uri:
        raise InvalidStorageURI(f"storage URI {uri!r} contains a NUL character", uri=uri)
    scheme, sep, rest = uri.partition("://")
    if not sep or not scheme:
        raise InvalidStorageURI(
            f"{uri!r} is not a storage URI: expected '<scheme>://...', e.g. 's3://bucket/key' or 'local://name/path'",
            uri=uri,
        )
    scheme = scheme.lower()
    if not _SCHEME_RE.match(scheme):
        raise InvalidStorageURI(f"storage URI {uri!r} has an invalid scheme {scheme!r}", uri=uri)
    bucket, _, key = rest.partition("/")
    if scheme != "local" and not bucket:
        raise InvalidStorageURI(f"storage URI {uri!r} names no bucket (expected '{scheme}://bucket/...')", uri=uri)
    return StorageURI(scheme=scheme, bucket=bucket, key=key)


def _check_relative_address(relative_address: str) -> None:
    if not relative_address:
        raise InvalidStorageURI("relative address is empty")
    if "://" in relative_address:
        raise InvalidStorageURI(f"{relative_address!r} is a full URI, not an address relative to a storage namespace")
    if relative_address.startswith("/"):
        raise InvalidStorageURI(f"relative address {relative_address!r} must not start with '/'")
    if ".." in relative_address.split("/"):
        raise InvalidStorageURI(f"relative address {relative_address!r} must not contain '..' segments")


def join_namespace(namespace: str, relative_address: str) -> str:
    """``join_namespace("s3://b/prefix", "data/x/y") == "s3://b/prefix/data/x/y"`` (same for ``local``).

    This is how lakeFS resolves RELATIVE addresses and ``_lakefs/<id>`` metadata files.
    """
    parsed = parse_uri(namespace)
    _check_relative_address(relative_address)
    if not parsed.bucket and not parsed.key.strip("/"):
        raise InvalidStorageURI(f"storage namespace {namespace!r} names no location", uri=namespace)
    return f"{namespace.rstrip('/')}/{relative_address}"


def relative_to_namespace(namespace: str, uri: str) -> str | None:
    """The address of ``uri`` relative to ``namespace``, or None if it lies outside it.

    Only textual: a ``local:///abs`` URI is not related to a ``local://name`` namespace here (use
    ``LocalBlockstore.canonical_uri`` first).
    """
    parse_uri(namespace)
    parse_uri(uri)
    base = namespace_prefix(namespace)
    if not uri.startswith(base) or len(uri) == len(base):
        return None
    return uri[len(base) :]


def namespace_prefix(namespace: str) -> str:
    """The namespace as a listing prefix: exactly one trailing ``/``, so ``ns`` never matches ``ns-other``."""
    return namespace.rstrip("/") + "/"


def same_namespace(a: str, b: str) -> bool:
    """Whether two storage namespaces name the same place (a trailing ``/`` does not count)."""
    return namespace_prefix(a) == namespace_prefix(b)


def namespaces_overlap(a: str, b: str) -> bool:
    """Whether one namespace is the other or lies inside it: a listing of the outer one (garbage collection,
    a cleanup, a scrub) would then reach the inner one's objects."""
    outer, inner = sorted((namespace_prefix(a), namespace_prefix(b)), key=len)
    return inner.startswith(outer)
