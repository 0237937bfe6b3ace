"""Readers, one module per agent host, registered in :data:`READERS`."""

from __future__ import annotations

from backscroll.readers.base import BaseReader, HostEnv, Reader

READERS: tuple[Reader, ...] = ()

_BY_HOST: dict[str, Reader] = {}


def by_host() -> dict[str, Reader]:
    """Readers keyed by host name."""
    if not _BY_HOST:
        _BY_HOST.update({reader.host: reader for reader in READERS})
    return _BY_HOST


__all__ = ["READERS", "BaseReader", "HostEnv", "Reader", "by_host"]
