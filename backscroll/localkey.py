"""This machine's secret for keyed hashes of turn keys (``team-key`` in the data
directory, 0600, named for its first use).

Hosts that give a message no id get a turn key derived from its text (the first
20 hex digits of a SHA-1 over the text as the host wrote it). Kept as it is
beyond the turn itself, such a key lets whoever holds it test guesses of the
text. Where backscroll keeps a turn key apart from its turn — published to a
team database (team/keys.py), or noted as forgotten (store/forget.py) — it keeps
``HMAC-SHA256(secret, key)`` instead, with a secret that never leaves this
machine and is not in the index file.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

KEY_FILE = "team-key"


def machine_secret(data_dir: Path) -> bytes:
    """The secret, made (0600) the first time, made anew when the file holds no
    usable secret (not hex, or under 16 bytes: an empty key would hash nothing).
    Two processes making it at once agree: the first file linked in place wins.
    Raises OSError when it can be neither read nor made."""
    path = data_dir / KEY_FILE
    try:
        secret = bytes.fromhex(path.read_text(encoding="ascii").strip())
        if len(secret) >= MIN_SECRET_BYTES:
            return secret
    except (FileNotFoundError, ValueError):
        pass
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    made = secrets.token_hex(32)
    tmp = data_dir / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(made + "\n")
        try:
            os.link(tmp, path)  # only where none is: a secret made meanwhile wins
        except FileExistsError:
            try:
                again = bytes.fromhex(path.read_text(encoding="ascii").strip())
            except (ValueError, FileNotFoundError):
                again = b""
            if len(again) >= MIN_SECRET_BYTES:
                return again
            os.replace(tmp, path)  # (an unusable one: replaced)
        except OSError:  # no hard links on this file system (vfat, some FUSE)
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return bytes.fromhex(made)


#: The shortest secret accepted from the file.
MIN_SECRET_BYTES = 16


def keyed(secret: bytes, text: str) -> str:
    """``text``'s keyed hash: 32 hex digits."""
    digest = hmac.new(secret, text.encode("utf-8", "surrogatepass"), hashlib.sha256)
    return digest.hexdigest()[:32]
