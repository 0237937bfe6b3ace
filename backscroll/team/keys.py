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
from pathlib import Path

from backscroll.localkey import KEY_FILE, keyed, machine_secret

__all__ = ["KEY_FILE", "TeamKeys"]


class TeamKeys:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        tag = hmac.new(secret, b"backscroll team keys", hashlib.sha256).hexdigest()[:8]
        #: What every key this secret makes starts with.
        self.prefix = f"k1:{tag}:"

    def __call__(self, key: str) -> str:
        return self.prefix + keyed(self._secret, key)

    @classmethod
    def of(cls, data_dir: Path) -> TeamKeys:
        """The keys of this machine's secret, made (0600) the first time."""
        return cls(machine_secret(data_dir))
