"""Hash functions for keys and fingerprints, without loading OpenSSL.

``import hashlib`` loads OpenSSL's libcrypto (~3 ms), which every command that
lists the hosts' files paid before its first read, the index command on the
path its reader processes wait on. CPython's own implementations give the
same digests; hashlib's are the fallback where they are missing."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (typed as hashlib's: the same constructors)
    from hashlib import blake2b, md5, sha1, sha256
else:
    try:
        from _blake2 import blake2b
        from _md5 import md5
        from _sha1 import sha1
        from _sha256 import sha256
    except ImportError:  # pragma: no cover - another interpreter, or a newer CPython (_sha2)
        from hashlib import blake2b, md5, sha1, sha256

__all__ = ["blake2b", "md5", "sha1", "sha256"]
