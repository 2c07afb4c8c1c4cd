"""HTTPS for ``serve``: the certificate and key files, checked before the server starts.

uvicorn would fail on a bad file only while starting, with a traceback; this check names the file and the
problem in one line (``serve --tls-cert/--tls-key``, ``tls.cert_file``/``tls.key_file``).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from ..config import ConfigError

__all__ = ["TLSFiles", "tls_files"]


@dataclass(frozen=True)
class TLSFiles:
    """A PEM certificate (chain) and its private key that load together."""

    cert_file: str
    key_file: str


def _readable(path: str, what: str, flag: str) -> None:
    p = Path(path)
    try:
        with p.open("rb") as f:
            f.read(1)
    except OSError as exc:
        raise ConfigError(f"cannot read the TLS {what} {p} ({flag}): {exc.strerror or exc}") from None


def _no_password() -> bytes:
    return b""  # never prompt on the terminal for an encrypted key: refuse it


def tls_files(cert_file: str, key_file: str) -> TLSFiles | None:
    """None without either file (plain HTTP); ``ConfigError`` for one without the other, an unreadable file, or
    a pair that does not load (not PEM, or the key not the certificate's)."""
    if not cert_file and not key_file:
        return None
    if not cert_file or not key_file:
        given, missing = ("--tls-cert/tls.cert_file", "--tls-key/tls.key_file")[:: 1 if cert_file else -1]
        raise ConfigError(f"HTTPS needs a certificate and its key: {given} is set but {missing} is not")
    _readable(cert_file, "certificate", "--tls-cert/tls.cert_file")
    _readable(key_file, "key", "--tls-key/tls.key_file")
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert_file, key_file, password=_no_password)
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(
            f"TLS certificate {cert_file} and key {key_file} do not load together (PEM certificate and its "
            f"unencrypted private key expected): {exc}"
        ) from None
    return TLSFiles(cert_file, key_file)
