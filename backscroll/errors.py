"""Exceptions that carry a sentence ending in the fix."""

from __future__ import annotations


class BackscrollError(Exception):
    """A problem the user can fix; ``str()`` says what and how."""

    #: The command's exit status when this ends it.
    exit_code = 2


class ConfigError(BackscrollError):
    """One or more problems in a config file (each names the file and dotted key)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


class DatabaseError(BackscrollError):
    """The index database cannot be used (corrupt, newer schema, unwritable)."""


class DaemonNotRunning(BackscrollError):
    """No daemon answers on the socket."""


class SourceBusy(Exception):
    """A host's own database is locked right now; try again on its next change.

    Raised by database readers instead of waiting, so backscroll never makes the
    host application wait. The indexer keeps the file's saved state unchanged.
    """
