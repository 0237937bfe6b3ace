"""Turn keys as the team database sees them: a keyed hash of the local key.

Hosts that give a message no id get a key derived from its text (the first 20
hex digits of a SHA-1 over the text as the host wrote it, before redaction).
Published as it is, such a key would let any team member test guesses of a
redacted password against it. The team gets ``k1:<tag>:<HMAC-SHA256(secret,
key)>`` instead, with a secret that never leaves this machine (``team-key`` in
the data directory, 0600). The key stays stable for as long as the secret, so
upserts and deletes still find their rows.

``<tag>`` names the secret. When it changes (the data directory was lost, or
keys were published before this scheme), the publisher's first transaction
deletes this machine's rows that carry another tag, and the outbox (whose
settings include the tag) queues every turn again: nothing is left twice.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from backscroll.paths import make_dirs

KEY_FILE = "team-key"


class TeamKeys:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        tag = hmac.new(secret, b"backscroll team keys", hashlib.sha256).hexdigest()[:8]
        #: What every key this secret makes starts with.
        self.prefix = f"k1:{tag}:"

    def __call__(self, key: str) -> str:
        digest = hmac.new(self._secret, key.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return self.prefix + digest.hexdigest()[:32]

    @classmethod
    def of(cls, data_dir: Path) -> TeamKeys:
        """The keys of this machine's secret, made (0600) the first time."""
        return cls(machine_secret(data_dir))


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
    make_dirs(data_dir, 0o700)
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
