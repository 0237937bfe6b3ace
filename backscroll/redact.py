"""Replace secrets in turn text with ``[REDACTED:<kind>]`` before it is stored.

Every turn passes through :meth:`Redactor.redact` on its way to the database,
so the cost is kept to a few fast scans. Vendor formats are regexes that start
with a literal (``sk-``, ``AKIA``, ``eyJ``...), which ``re`` searches for as fast
as ``in``; ``search`` runs first and ``sub`` only on a hit. The
case-insensitive rules (assignments, headers, entropy) are never scanned over
the text: their trigger words are found with ``str.find`` in the lower-cased
text, kept only when a ``:`` or ``=`` follows, and the rules are tried at those
places alone. Text with no candidate comes back as the same object.

Why not a library: detect-secrets (Yelp, the best-kept Python scanner) was
measured against these rules with ``python bench/bench_redact.py`` (figures in
``bench/RESULTS.md``). It reports, never redacts, and works one line at a time,
so backscroll would still write the span-replacing glue. On transcript-like
text it caught 8 of the 16 kinds planted (no Anthropic, current OpenAI or
Google keys, URL passwords, AWS secret keys, bearer/authorization headers or
private key blocks) and ran at 0.03-0.07 MB/s, against 16/16 at
21-33 MB/s here: several hundred times slower than the budget of a step run on
every indexed turn. Both made no finding on clean text.

Rules run in order; the specific ones (private key blocks, vendor key formats)
come before the generic ones (assignments, high-entropy values), and every rule
skips text that is already a marker, so redacting twice changes nothing.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from backscroll.errors import ConfigError

MARKER = "[REDACTED:{}]"
_NOT_MARKER = r"(?!\[REDACTED:)"

#: Minimum Shannon entropy (bits per character) of a value assigned to a
#: secret-looking name; hex values carry at most 4 bits per character.
ENTROPY_THRESHOLD = 3.5
HEX_ENTROPY_THRESHOLD = 3.0
ENTROPY_MIN_LENGTH = 16

_Replacer = Callable[[re.Match[str]], str]


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    pattern: re.Pattern[str]
    #: Literal substrings, one of which must occur for the rule to run at all.
    #: Empty for a rule whose pattern starts with a literal: re's own search
    #: for that prefix is as fast as ``in``, so a check would only add a scan.
    triggers: tuple[str, ...]
    #: Case-insensitive rule: its triggers are lower-case and are where a match
    #: can start, so the pattern is only tried at their places in the
    #: lower-cased text instead of at every character.
    fold: bool = False
    #: (Folded rules) a match needs ':' or '=' shortly after the trigger.
    needs_sep: bool = True
    #: Builds the replacement; default: the whole match becomes the marker.
    replace: _Replacer | None = None


def _marker(name: str) -> str:
    return MARKER.format(name)


def _group_replacer(name: str, group: str | int) -> _Replacer:
    """Replace only ``group``; the text around it in the match is kept."""

    def replace(m: re.Match[str]) -> str:
        start, end = m.span(group)
        if start < 0:
            return m.group(0)
        base = m.start()
        whole = m.group(0)
        return whole[: start - base] + _marker(name) + whole[end - base :]

    return replace


# --- assignments ---------------------------------------------------------------

_SEP = r"""["']?[ \t]*(?::=|=>|[:=])[ \t]*"""
_QUOTED = r"""(?P<q>["'`])(?P<qv>""" + _NOT_MARKER + r"""(?:\\.|(?!(?P=q))[^\\\n]){1,500})(?P=q)"""
_UNQUOTED = r"""(?P<uv>""" + _NOT_MARKER + r"""[^\s'"`,;&<>(){}\[\]]{1,500})"""

#: Names whose value is a credential whatever it looks like. Every alternative
#: starts with one of _ANCHORS; "key" counts only as api/access/private key.
_ASSIGN_NAMES = (
    r"passw(?:or)?d|passphrase|pwd|pass|secret|token|key(?:"
    + "|".join(
        f"(?<={prefix}{sep}key)"
        for prefix in ("api", "access", "private")
        for sep in ("", "_", "-")
    )
    + ")"
)
_ANCHORS = ("pass", "pwd", "secret", "token", "key")
_ASSIGN_RE = re.compile(
    r"(?P<name>" + _ASSIGN_NAMES + r")"
    r"(?![A-Za-z0-9])(?P<sep>" + _SEP + r")(?:" + _QUOTED + r"|" + _UNQUOTED + r")",
    re.IGNORECASE,
)
_REFERENCE_RE = re.compile(r"^(?:\$\{?\w+\}?|\{\{.*\}\}|<[^>]*>|%\(?\w+\)?s?|\*+|x+|\.\.\.)$")
_LITERALS = frozenset({"none", "null", "nil", "true", "false", "undefined", "required"})
_DOTTED_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")
_SECRETISH_RE = re.compile(r"[0-9!@#$%^&*+=/~?|]")


def _value_is_placeholder(value: str) -> bool:
    return value.lower() in _LITERALS or _REFERENCE_RE.match(value) is not None


def _replace_assignment(m: re.Match[str]) -> str:
    name, sep = m.group("name"), m.group("sep")
    if m.group("qv") is not None:
        if _value_is_placeholder(m.group("qv")):
            return m.group(0)
        return _group_replacer("secret-assignment", "qv")(m)
    value = m.group("uv")
    following = m.string[m.end() : m.end() + 1]
    if _value_is_placeholder(value) or value[0] in "$%" or following in ("(", "[", "{"):
        return m.group(0)
    env_style = name.isupper() and sep == "="
    if not env_style and (
        _DOTTED_IDENT_RE.match(value) or not _SECRETISH_RE.search(value) or len(value) < 6
    ):
        return m.group(0)
    return _group_replacer("secret-assignment", "uv")(m)


# --- high-entropy values ---------------------------------------------------------

_ENTROPY_RE = re.compile(
    r"(?P<name>(?:secret|key|token|passw(?:or)?d|pwd)[A-Za-z0-9_.-]{0,40})"
    r"(?P<sep>" + _SEP + r""")["'`]?(?P<v>""" + _NOT_MARKER + r"""[A-Za-z0-9+/=_.~-]{16,512})"""
    r"(?![A-Za-z0-9+/=_.~-])",
    re.IGNORECASE,
)
_HEX_RE = re.compile(r"^[0-9a-fA-F]+$")
_WORDISH_RE = re.compile(r"^(?:[a-z]+|[A-Z][a-z]+|[A-Z]+|\d+|[a-z0-9]{1,5})$")


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value`` (0 for the empty string)."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def looks_random(value: str) -> bool:
    """True when ``value`` reads as a generated secret rather than a word or path."""
    if len(value) < ENTROPY_MIN_LENGTH or value[0] in "/.~":
        return False
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    parts = re.split(r"[_.-]", value)
    if len(parts) > 1 and all(_WORDISH_RE.match(p) for p in parts if p):
        return False
    threshold = HEX_ENTROPY_THRESHOLD if _HEX_RE.match(value) else ENTROPY_THRESHOLD
    return shannon_entropy(value) >= threshold


def _replace_entropy(m: re.Match[str]) -> str:
    if not looks_random(m.group("v")):
        return m.group(0)
    return _group_replacer("high-entropy-secret", "v")(m)


# --- the default rules, in the order they run -------------------------------------

_RULE_LIST: tuple[_Rule, ...] = (
    _Rule(
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:(?:\s|\\n)+(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+: [^\n\\]*))*)",
            re.DOTALL,
        ),
        (),
    ),
    _Rule(
        "anthropic-api-key",
        re.compile(r"sk-ant-(?<![A-Za-z0-9_-].{7})[A-Za-z0-9_-]{20,}"),
        (),
    ),
    _Rule(
        "openai-api-key",
        re.compile(r"sk-(?<![A-Za-z0-9_-].{3})(?=[A-Za-z0-9_-]{0,200}\d)[A-Za-z0-9_-]{17,}"),
        (),
    ),
    _Rule("google-api-key", re.compile(r"AIza[0-9A-Za-z_-]{35}"), ()),
    _Rule(
        "stripe-key",
        re.compile(r"[prs]k_(?:live|test)_(?<![A-Za-z0-9].{8})[0-9A-Za-z]{10,99}"),
        ("_live_", "_test_"),
    ),
    _Rule(
        "slack-webhook",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+"),
        (),
    ),
    _Rule(
        "slack-token",
        re.compile(r"xox[abposr]-(?<![A-Za-z0-9].{5})[A-Za-z0-9-]{10,}"),
        (),
    ),
    _Rule(
        "github-token",
        re.compile(
            r"g(?:h[pousr]_(?<![A-Za-z0-9_].{4})[A-Za-z0-9]{36,255}"
            r"|ithub_pat_(?<![A-Za-z0-9_].{11})[A-Za-z0-9_]{22,255})"
        ),
        (),
    ),
    _Rule(
        "aws-access-key",
        re.compile(r"A(?:KIA|SIA|BIA|CCA)(?<![A-Z0-9].{4})[A-Z0-9]{16}(?![A-Z0-9])"),
        (),
    ),
    _Rule(
        "aws-secret-key",
        re.compile(
            r"(?:aws[_-]?secret(?:[_-]?access)?|secret[_-]?access)[_-]?key"
            + _SEP
            + r"""["'`]?(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])""",
            re.IGNORECASE,
        ),
        ("aws", "secret"),
        fold=True,
        replace=_group_replacer("aws-secret-key", "v"),
    ),
    _Rule(
        "jwt",
        re.compile(
            r"eyJ(?<![A-Za-z0-9_-].{3})[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"
        ),
        (),
    ),
    _Rule(
        "authorization-header",
        re.compile(
            r"authorization" + _SEP + r"""["'`]?"""
            r"(?:(?:bearer|basic|token|digest)[ \t]+)?"
            r"(?P<v>(?![$<{])[A-Za-z0-9._~+/=-]{8,})",
            re.IGNORECASE,
        ),
        ("authorization",),
        fold=True,
        replace=_group_replacer("authorization-header", "v"),
    ),
    _Rule(
        "bearer-token",
        re.compile(
            r"bearer[ \t]+(?P<v>(?=[A-Za-z0-9._~+/-]{0,200}\d)[A-Za-z0-9._~+/-]{16,}=*)",
            re.IGNORECASE,
        ),
        ("bearer",),
        fold=True,
        needs_sep=False,
        replace=_group_replacer("bearer-token", "v"),
    ),
    _Rule(
        "url-password",
        re.compile(
            r"://[^\s:/?#@\[\]]{0,128}:"
            r"(?P<v>" + _NOT_MARKER + r"[^\s@/?#]{1,256})@(?=[A-Za-z0-9\[])"
        ),
        (),
        replace=_group_replacer("url-password", "v"),
    ),
    _Rule(
        "secret-assignment",
        _ASSIGN_RE,
        _ANCHORS,
        fold=True,
        replace=_replace_assignment,
    ),
    _Rule(
        "high-entropy-secret",
        _ENTROPY_RE,
        _ANCHORS,
        fold=True,
        replace=_replace_entropy,
    ),
)

#: The literal-triggered rules run first, then the case-insensitive ones.
_RULES = tuple(sorted(_RULE_LIST, key=lambda rule: rule.fold))

#: Marker names of the default rules, in the order they run.
DEFAULT_RULE_NAMES: tuple[str, ...] = tuple(rule.name for rule in _RULES)

_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def _user_rule(name: str, regex: str, origin: str) -> _Rule:
    where = f"{origin}.{name}"
    if not _NAME_RE.match(name):
        raise ConfigError(
            [
                f"{where}: the pattern name {name!r} cannot be used in a marker — use letters, "
                "digits, '-', '_' or '.' (at most 64)"
            ]
        )
    try:
        pattern = re.compile(regex)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise ConfigError(
            [
                f"{where}: the redaction pattern {name!r} does not compile ({exc}) — "
                "fix the regular expression (Python `re` syntax) or remove it"
            ]
        ) from None
    if pattern.fullmatch(""):
        raise ConfigError(
            [
                f"{where}: the redaction pattern {name!r} matches empty text — "
                "make it require at least one character"
            ]
        )
    replace = (
        _group_replacer(name, "secret")
        if "secret" in pattern.groupindex
        else _group_replacer(name, 0)
    )

    def guarded(m: re.Match[str]) -> str:
        if m.end() == m.start() or m.group(0).startswith("[REDACTED:"):
            return m.group(0)
        return replace(m)

    return _Rule(name, pattern, (), replace=guarded)


class Redactor:
    """The default rules plus the user's ``extra`` patterns (name → regex).

    A user pattern's whole match becomes ``[REDACTED:<name>]``, or only its
    group named ``secret`` when it has one. User patterns run after the
    defaults. ``origin`` prefixes the dotted key in error messages.
    """

    def __init__(
        self, extra: Mapping[str, str] | None = None, *, origin: str = "redaction.patterns"
    ) -> None:
        self._user = tuple(_user_rule(name, regex, origin) for name, regex in (extra or {}).items())
        self._literal = tuple(rule for rule in _RULES if not rule.fold)
        self._anchor_plan = _anchor_plan(rule for rule in _RULES if rule.fold)
        #: Marker names of every rule, in the order they run.
        self.names: tuple[str, ...] = DEFAULT_RULE_NAMES + tuple(r.name for r in self._user)

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by its marker; unchanged when none."""
        for rule in self._literal:
            if rule.triggers:
                for trigger in rule.triggers:
                    if trigger in text:
                        break
                else:
                    continue
            # search is one call into C; sub (template, callbacks) only on a hit.
            if rule.pattern.search(text):
                text = rule.pattern.sub(rule.replace or _marker(rule.name), text)
        # Every case-insensitive rule but bearer-token needs a ':' or '=' (memchr-fast).
        has_sep = ":" in text or "=" in text
        if not has_sep and "earer" not in text and "EARER" not in text:
            return self._run_user(text)
        text = _sub_folded(self._anchor_plan, text, has_sep)
        return self._run_user(text)

    def _run_user(self, text: str) -> str:
        for rule in self._user:
            text = rule.pattern.sub(rule.replace or _marker(rule.name), text)
        return text


def _fold(text: str) -> str:
    """Lower-case ``text`` keeping every character at its index."""
    folded = text.lower()
    if len(folded) != len(text):  # a character lower-cased to two (U+0130)
        folded = text.translate(_ASCII_FOLD)
    return folded


_ASCII_FOLD = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
#: An assignment follows: a name's tail, maybe a closing quote, then ':' or '='.
_SEP_AHEAD = re.compile(r"""[a-z0-9_.-]{0,48}["'`]?[ \t]*[:=]""")


#: trigger → (whether every rule it starts needs a separator, those rules in order).
_AnchorPlan = dict[str, tuple[bool, tuple[_Rule, ...]]]


def _anchor_plan(rules: Iterable[_Rule]) -> _AnchorPlan:
    by_trigger: dict[str, list[_Rule]] = {}
    for rule in rules:
        for trigger in rule.triggers:
            by_trigger.setdefault(trigger, []).append(rule)
    return {t: (all(r.needs_sep for r in rs), tuple(rs)) for t, rs in by_trigger.items()}


def _sub_folded(plan: _AnchorPlan, text: str, has_sep: bool) -> str:
    """Apply the case-insensitive rules in one pass over ``text``.

    Each trigger is found in the lower-cased text with ``str.find``; at each
    place, in text order, the rules that trigger starts are tried in rule order
    and the first that redacts something wins. Regexes never scan the text.
    """
    folded = _fold(text)
    hits: list[tuple[int, str]] = []
    for trigger, (needs_sep, _) in plan.items():
        if needs_sep and not has_sep:
            continue
        at = folded.find(trigger)
        while at >= 0:
            if not needs_sep or _SEP_AHEAD.match(folded, at + len(trigger)):
                hits.append((at, trigger))
            at = folded.find(trigger, at + 1)
    if not hits:
        return text
    hits.sort()
    pieces: list[str] = []
    done = 0
    for at, trigger in hits:
        if at < done:
            continue
        for rule in plan[trigger][1]:
            m = rule.pattern.match(text, at)
            if m is None or m.end() == at:
                continue
            replacement = rule.replace(m) if rule.replace else _marker(rule.name)
            if replacement == m.group(0):
                continue
            pieces.append(text[done:at])
            pieces.append(replacement)
            done = m.end()
            break
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


# --- planted examples for tests ---------------------------------------------------

_B62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _examples() -> dict[str, tuple[str, str]]:
    """kind → (snippet to plant, the secret inside it). Built, not written out,
    so this source file holds no string a secret scanner would flag."""
    rng = random.Random(20240611)

    def r(n: int, alphabet: str = _B62) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    body = "\n".join(r(64, _B62 + "+/") for _ in range(4))
    pem_kind = "RSA PRIVATE" + " KEY"
    pem = f"-----BEGIN {pem_kind}-----\n{body}\n-----END {pem_kind}-----"
    anthropic = "sk-" + "ant-api03-" + r(80, _B62 + "-_") + "AA"
    openai = "sk-" + "proj-" + r(40) + "T3Blbk" + "FJ" + r(40)
    google = "AI" + "za" + "Sy" + r(33, _B62 + "-_")
    stripe = "sk" + "_live_" + r(24)
    webhook = "https://hooks." + "slack.com/services/T" + r(8).upper() + "/B" + r(10).upper()
    webhook += "/" + r(24)
    slack = "xo" + "xb-" + r(11, "0123456789") + "-" + r(13, "0123456789") + "-" + r(24)
    github = "gh" + "p_" + r(36)
    aws_id = "AK" + "IA" + r(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    aws_secret = r(40, _B62 + "/+")
    jwt = (
        "eyJ"
        + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        + "eyJ"
        + "zdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkZha2UgVXNlciJ9."
        + r(43, _B62 + "-_")
    )
    header_token = r(32)
    bearer = r(40, _B62 + "._-")
    url_pass = "Fake" + r(12) + "!"
    password = "Hunter2-" + r(10)
    entropy = r(32)
    return {
        "private-key": (pem, body.splitlines()[1]),
        "anthropic-api-key": (f"export ANTHROPIC_API_KEY_OLD={anthropic}", anthropic),
        "openai-api-key": ("client = OpenAI(api_" + f"key={openai!r})", openai),
        "google-api-key": (f"https://maps.example/api?k={google}", google),
        "stripe-key": ("stripe.api_" + f"key = {stripe!r}", stripe),
        "slack-webhook": (f"curl -X POST {webhook}", webhook.rsplit("/", 1)[1]),
        "slack-token": (f"SLACK_BOT={slack}", slack),
        "github-token": (f"git clone https://x-access:{github}@github.com/o/r", github),
        "aws-access-key": (f"aws_access_key_id = {aws_id}", aws_id),
        "aws-secret-key": ("aws_secret_" + f"access_key = {aws_secret}", aws_secret),
        "jwt": (f"cookie session={jwt}", jwt),
        "authorization-header": (f"Authorization: Basic {header_token}", header_token),
        "bearer-token": (f"curl -H 'X-Auth: Bearer {bearer}'", bearer),
        "url-password": (f"postgres://app:{url_pass}@db.internal:5432/prod", url_pass),
        "secret-assignment": ('"pass' + f'word": "{password}"', password),
        "high-entropy-secret": (f"SIGNING_KEY_V2 = '{entropy}'", entropy),
    }


def plant_examples() -> dict[str, str]:
    """One fake example per default rule: marker name → a snippet to plant in text.

    Each snippet is a realistic line (or a whole PEM block) holding a fake
    secret; after :meth:`Redactor.redact` the secret in it is gone and the
    marker names the kind. :func:`planted_secrets` gives the bare secrets.
    """
    examples = _examples()
    return {kind: examples[kind][0] for kind in DEFAULT_RULE_NAMES}


def planted_secrets() -> dict[str, str]:
    """Marker name → the secret inside the matching :func:`plant_examples` snippet."""
    examples = _examples()
    return {kind: examples[kind][1] for kind in DEFAULT_RULE_NAMES}
