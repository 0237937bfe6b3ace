"""The user's redaction patterns (``redaction.patterns``: name -> regular expression).

One check, made where the config is loaded (so ``config check``, daemon start and
a reload refuse what the redactor would) and again where the redactor is built.
It lives outside :mod:`backscroll.redact`, whose import compiles every default
pattern: loading the config must not pay for that.
"""

from __future__ import annotations

import re

from backscroll.errors import ConfigError

#: What a pattern's name may be: it is written into its marker, ``[REDACTED:<name>]``.
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def compile_user_pattern(name: str, regex: str, where: str) -> re.Pattern[str]:
    """``regex`` compiled, or a ConfigError whose problem starts with ``where``
    (the file and dotted key) and ends in the fix: a name that cannot go in a
    marker, a pattern that does not compile, or one that matches empty text."""
    if not _NAME_RE.match(name):
        raise ConfigError(
            [
                f"{where}: the pattern name {name!r} cannot be used in a marker; use letters, "
                "digits, '-', '_' or '.' (at most 64)"
            ]
        )
    try:
        pattern = re.compile(regex)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise ConfigError(
            [
                f"{where}: the pattern does not compile ({exc}); fix the regular expression "
                "(Python `re` syntax) or remove it"
            ]
        ) from None
    if pattern.fullmatch(""):
        raise ConfigError(
            [
                f"{where}: the pattern {name!r} matches empty text; make it require at "
                "least one character"
            ]
        )
    return pattern
