"""The generic rules: secrets known by where they stand, not by their shape.

A value assigned to a secret-looking name (``password=``, ``"token": ...``,
``API_KEY: ...``), given to a secret-looking command-line option (``--token X``,
``mysql -pPASS``, ``curl -u user:pass``), said in prose (``the password is
...``), or sent in an authorization header. These rules are case-insensitive
and never scanned over the text: each has trigger words (``pass``, ``token``,
``curl``...), looked for in the lower-cased text, and a *gate*, a
short pattern that must follow the trigger for the place to be worth trying
(``:`` or ``=`` for an assignment). The rules are tried at those places alone.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

MARKER = "[REDACTED:{}]"
NOT_MARKER = r"(?!\[REDACTED:)"

#: Minimum Shannon entropy (bits per character) of a value assigned to a
#: secret-looking name; hex values carry at most 4 bits per character.
ENTROPY_THRESHOLD = 3.5
HEX_ENTROPY_THRESHOLD = 3.0
ENTROPY_MIN_LENGTH = 16

Replacer = Callable[[re.Match[str]], str]


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    #: Lower-case words where a match can start (case-insensitive rules); empty
    #: for a rule the redactor scans the text with.
    triggers: tuple[str, ...] = ()
    #: trigger -> what must follow it (a pattern on the lower-cased text) for the
    #: rule to be tried there.
    gate: Callable[[str], str] | None = None
    #: Builds the replacement; default: the whole match becomes the marker.
    replace: Replacer | None = None


def marker(name: str) -> str:
    return MARKER.format(name)


def group_replacer(name: str, group: str | int) -> Replacer:
    """Replace only ``group``; the text around it in the match is kept."""

    def replace(m: re.Match[str]) -> str:
        start, end = m.span(group)
        if start < 0:
            return m.group(0)
        base = m.start()
        whole = m.group(0)
        return whole[: start - base] + marker(name) + whole[end - base :]

    return replace


# --- what a value looks like ------------------------------------------------------

_REFERENCE_RE = re.compile(r"^(?:\$\{?\w+\}?|\{\{.*\}\}|<[^>]*>|%\(?\w+\)?s?|\*+|x+|\.\.\.)$")
_LITERALS = frozenset(
    {"none", "null", "nil", "true", "false", "undefined", "required", "optional", "empty"}
)
_DOTTED_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")
_SECRETISH_RE = re.compile(r"[0-9!@#$%^&*+=/~?|]")
_HEX_RE = re.compile(r"^[0-9a-fA-F]+$")
_WORDISH_RE = re.compile(r"^(?:[a-z]+|[A-Z][a-z]+|[A-Z]+|\d+|[a-z0-9]{1,5})$")
_LETTERS_RE = re.compile(r"^[A-Za-z]+$")
_CASE_FLIP_RE = re.compile(r"[a-z](?=[A-Z])|[A-Z](?=[a-z])")
#: Names a password-like value may not be: it is then code, not a secret.
_NAME_WORDS = ("pass", "pwd", "secret", "token", "key", "cred", "auth")
_TYPE_WORDS = frozenset({"str", "string", "bytes", "int", "bool", "any", "object", "text"})


def is_placeholder(value: str) -> bool:
    return value.lower() in _LITERALS or _REFERENCE_RE.match(value) is not None


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
    if _LETTERS_RE.match(value):
        # Letters only: random when about half are upper case and the case flips
        # often (a CamelCase name has one capital a word).
        upper = sum(c.isupper() for c in value)
        return (
            len(value) >= 20
            and 0.28 * len(value) <= upper <= 0.72 * len(value)
            and 4 * len(_CASE_FLIP_RE.findall(value)) >= len(value)
            and shannon_entropy(value) >= 3.7
        )
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    parts = re.split(r"[_.-]", value)
    if len(parts) > 1 and all(_WORDISH_RE.match(p) for p in parts if p):
        return False
    threshold = HEX_ENTROPY_THRESHOLD if _HEX_RE.match(value) else ENTROPY_THRESHOLD
    return shannon_entropy(value) >= threshold


def is_tokenish(value: str) -> bool:
    """A credential-shaped value of 16+ characters: not words joined by ``_.-``."""
    if len(value) < 16 or is_placeholder(value):
        return False
    parts = [p for p in re.split(r"[_.~+/=-]", value) if p]
    return not all(_WORDISH_RE.match(p) for p in parts)


def _is_code_name(value: str) -> bool:
    """``value`` reads as a variable, attribute or type rather than a password."""
    lower = value.lower()
    return (
        "_" in value
        or lower in _TYPE_WORDS
        or any(word in lower for word in _NAME_WORDS)
        or len(_CASE_FLIP_RE.findall(value)) >= 3  # userPassword, SecretStr...
    )


# --- assignments ---------------------------------------------------------------

#: Between a name and its value: maybe the name's closing quote (and a
#: subscript's bracket: ``config['SECRET_KEY'] = ...``), then ':', '=', ':=' or '=>'.
SEP = r"""["']?\]?[ \t]*(?::=|=>|[:=])[ \t]*"""
_QUOTED = r"""(?P<q>["'`])(?P<qv>""" + NOT_MARKER + r"""(?:\\.|(?!(?P=q))[^\\\n]){1,500})(?P=q)"""
#: An unquoted value: characters up to a space, a quote or a comma. A bracket
#: belongs to it when closed within it (``hunter(22)zz``, ``Qw3rty{42}Zz``);
#: ``;`` and ``&`` do unless they end a statement (``&&``, ``; ``, at the end)
#: or start the next pair of a URL query or connection string (``&user=``,
#: ``;User Id=``, ``&amp;``). A value starts with neither (Rust's ``&str``).
_VALUE_CHAR = r"""[^\s'"`,;&<>(){}\[\]]"""
_INNER = _VALUE_CHAR + "{0,100}"
_BRACKETED = rf"\({_INNER}\)|\[{_INNER}\]|\{{{_INNER}\}}|<{_INNER}>"
_JOINED = r"&(?![&\s]|amp;|[\w.-]+=|$)|;(?![;\s]|[\w.-]+(?: [\w.-]+)?=|$)"
_UNQUOTED = (
    r"(?P<uv>" + NOT_MARKER + rf"(?:{_VALUE_CHAR}|{_BRACKETED})"
    rf"(?:{_VALUE_CHAR}|{_BRACKETED}|{_JOINED}){{0,499}})"
)

#: What makes "key" name a credential (API_KEY, SECRET_KEY, Laravel's APP_KEY);
#: a key alone is as often a dict's or a database's.
_KEY_KINDS = ("api", "access", "private", "secret", "encryption", "signing", "master", "app")
#: Names whose value is a credential whatever it looks like. Every alternative
#: starts with one of ANCHORS; "key" counts only after one of _KEY_KINDS.
_ASSIGN_NAMES = (
    r"passw(?:or)?d|passphrase|pwd|pass|secret|token|key(?:"
    + "|".join(f"(?<={kind}{sep}key)" for kind in _KEY_KINDS for sep in ("", "_", "-"))
    + ")"
)
ANCHORS = ("pass", "pwd", "secret", "token", "key")
_PASSWORD_NAMES = ("pass", "pwd")
_ASSIGN_RE = re.compile(
    r"(?P<name>" + _ASSIGN_NAMES + r")"
    r"(?![A-Za-z0-9])(?P<sep>" + SEP + r")(?:" + _QUOTED + r"|" + _UNQUOTED + r")",
    re.IGNORECASE,
)
#: (Gates follow the trigger, in the lower-cased text.) An assignment: the rest
#: of the name, maybe a closing quote, then ':' or '='.
SEP_AHEAD = r"""[a-z0-9_.-]{0,48}["'`]?\]?[ \t]*[:=]"""


def _sep_gate(_: str) -> str:
    return SEP_AHEAD


#: What ends a config value's field: the end of its line (YAML, INI, .env) or
#: the next ``name:`` / ``name=`` on it (``password: hunter user: app``).
_FIELD_END_RE = re.compile(r"[ \t]*(?:[\r\n]|#|$)|[ \t]+[A-Za-z_][\w.-]{0,48}[ \t]*[:=]")
#: A value that is code: a (dotted) name, maybe called, subscripted or made
#: generic, maybe chained (``get_password()``, ``b64encode(d).decode``,
#: ``Optional[str]``, ``Promise<string>``), with nothing after its last bracket.
_CODE_VALUE_RE = re.compile(
    r"^[A-Za-z_$][\w$.]*(?:[(\[{<][^()\[\]{}<>]*[)\]}>](?:\.[A-Za-z_$][\w$]*)*)*$"
)
#: A bracket inside a value that is code: a name interpolated (``{self.id}``,
#: f-strings and templates) or a regex character class (``[a-zA-Z0-9_]``).
_CODE_BRACKET_RE = re.compile(r"\{[A-Za-z_][\w.]*\}|\[\^?[^\]]*[a-z0-9]-[a-z0-9][^\]]*\]", re.I)


def _is_code_value(value: str, following: str) -> bool:
    """``value`` (followed by ``following``) is an expression, not a secret: it
    opens with a bracket (``{config.secret}``, ``[1, 2]``), is a call or a
    subscript, a name an unclosed bracket follows (``os.environ["X"]``), or
    holds an interpolated name or a character class."""
    if value[0] in "([{<":
        return True
    bracketed = "(" in value or "[" in value or "{" in value or "<" in value
    if (bracketed or following in ("(", "[", "{", "<")) and _CODE_VALUE_RE.match(value):
        return True
    return bracketed and _CODE_BRACKET_RE.search(value) is not None


def _replace_assignment(m: re.Match[str]) -> str:
    name, sep = m.group("name"), m.group("sep")
    if m.group("qv") is not None:
        if is_placeholder(m.group("qv")):
            return m.group(0)
        return group_replacer("secret-assignment", "qv")(m)
    value = m.group("uv")
    following = m.string[m.end() : m.end() + 1]
    if is_placeholder(value) or value[0] in "$%" or _is_code_value(value, following):
        return m.group(0)
    lower = name.lower()
    password = lower.startswith(_PASSWORD_NAMES)
    if lower == "pwd" and value[0] in "/~.":  # the shell's working directory
        return m.group(0)
    if name.isupper() and sep == "=":  # an environment variable: any value
        return group_replacer("secret-assignment", "uv")(m)
    if _DOTTED_IDENT_RE.match(value) or len(value) < 4:
        return m.group(0)
    if name.isupper() or (len(value) >= 6 and _SECRETISH_RE.search(value)):
        return group_replacer("secret-assignment", "uv")(m)
    # A letters-and-digits value under a password name: a password unless it
    # reads as code. Joined to its name (password=x, URL queries, connection
    # strings) it is one; spaced (YAML, INI, or code's `password = other`) only
    # when it ends its field: its line, or before the next `name:` or `name=`.
    if (
        password
        and not _is_code_name(value)
        and (sep == "=" or _FIELD_END_RE.match(m.string, m.end()))
    ):
        return group_replacer("secret-assignment", "uv")(m)
    return m.group(0)


# --- high-entropy values ---------------------------------------------------------

_ENTROPY_RE = re.compile(
    r"(?P<name>(?:secret|key|token|passw(?:or)?d|pwd)[A-Za-z0-9_.-]{0,40})"
    r"(?P<sep>" + SEP + r""")["'`]?(?P<v>""" + NOT_MARKER + r"""[A-Za-z0-9+/=_.~-]{16,512})"""
    r"(?![A-Za-z0-9+/=_.~-])",
    re.IGNORECASE,
)


def _replace_entropy(m: re.Match[str]) -> str:
    if not looks_random(m.group("v")):
        return m.group(0)
    return group_replacer("high-entropy-secret", "v")(m)


# --- command lines --------------------------------------------------------------

_ARG = r"""(?:"(?P<dq>[^"\n]{1,300})"|'(?P<sq>[^'\n]{1,300})'|(?P<bare>[^\s'"`|;&<>]{1,300}))"""
_REST = r"[^\n|;&]{0,200}?[ \t]"
_CLI_RE = re.compile(
    # --password X, --api-key=X, --client-secret X ...
    r"(?<=-)(?P<flag>passw(?:or)?d|passphrase|pass|pwd|secret|token|key)"
    r"(?:=|[ \t]+)(?!-)" + _ARG + "|"
    # mysql -pPASS (the password joined to -p), redis-cli -a PASS
    r"(?:mysql\w*|mariadb\w*)\b" + _REST + r"-p(?!-)" + _ARG.replace("?P<", "?P<m") + "|"
    r"redis-cli\b" + _REST + r"-a[ \t]+" + _ARG.replace("?P<", "?P<r") + "|"
    # sshpass -p PASS, docker/podman/helm login -p PASS
    r"(?:sshpass|login)\b" + _REST + r"-p[ \t]*" + _ARG.replace("?P<", "?P<s") + "|"
    # curl -u user:PASS, --user user:PASS
    r"curl\b" + _REST + r"(?:-u|--user)[ \t=]*['\"]?[^\s:'\"]{1,100}:(?P<u>[^\s'\"@]{1,300})",
    re.IGNORECASE,
)
_CLI_TRIGGERS = (*ANCHORS, "mysql", "mariadb", "redis-cli", "sshpass", "login", "curl")
#: The command words count only in text with one of these options.
COMMAND_WORDS = frozenset(_CLI_TRIGGERS[len(ANCHORS) :])


def has_command_option(folded: str) -> bool:
    """``folded`` holds `` -p``, `` -a``, `` -u`` or `` --user``: substring tests,
    about twice as fast as one regex scan of the text for the same options."""
    return " -" in folded and (
        " -p" in folded or " -a" in folded or " -u" in folded or " --user" in folded
    )


def _cli_gate(trigger: str) -> str:
    if trigger in COMMAND_WORDS:  # an option of the kind the command takes follows
        return r"[a-z]*\b[^\n]{0,200}[ \t]--?(?:[pau]|user)"
    # an option: '-' before the word, then '=' or a value
    return rf"(?<=-[\s\S]{{{len(trigger)}}})[a-z]*(?:=|[ \t]+[^\s-])"


#: The option before the value starts with '--' (or is '-p'): not a word in prose.
_FLAG_START_RE = re.compile(r"(?:^|[\s'\"(=])--[A-Za-z0-9-]*$")


def _replace_cli(m: re.Match[str]) -> str:
    flag = m.group("flag")
    alone = False  # the option is the trigger word alone: --key, --token
    if flag is not None:
        line_start = m.string.rfind("\n", 0, m.start()) + 1
        before = _FLAG_START_RE.search(m.string, max(line_start, m.start() - 64), m.start())
        if before is None:
            return m.group(0)
        alone = before.group(0).endswith("--")
    group = next(
        (g for g in ("dq", "sq", "bare", "mdq", "msq", "mbare", "rdq", "rsq", "rbare",
                     "sdq", "ssq", "sbare", "u")
         if m.group(g) is not None),
        None,
    )  # fmt: skip
    if group is None:
        return m.group(0)
    value = m.group(group)
    if (
        is_placeholder(value)
        or value[0] in "$<{-"
        or value.startswith(("/", "~/", "./", "[REDACTED:"))
    ):
        return m.group(0)
    if alone and flag is not None and flag.lower() == "key" and not looks_random(value):
        # A bare --key names a sort field or a key id as often as a secret.
        return m.group(0)
    if len(value) < 3:
        return m.group(0)
    return group_replacer("command-line-secret", group)(m)


# --- prose ----------------------------------------------------------------------

_PHRASE_RE = re.compile(
    r"(?P<name>passw(?:or)?d|passphrase|passcode|pwd|secret|token|key)s?"
    r"(?:[ \t]+(?:for|of)[ \t]+[\w.@-]{1,64})?"
    r"[ \t]+(?:is|was|to|would[ \t]+be|is[ \t]+set[ \t]+to):?[ \t]+"
    r"(?:(?P<q>[\"'`])(?P<qv>" + NOT_MARKER + r"[^\"'`\n]{3,200})(?P=q)"
    r"|(?P<uv>" + NOT_MARKER + r"[^\s\"'`]{6,300}))"
    # .netrc: machine HOST login USER password PASS
    r"|password[ \t]+(?P<nv>" + NOT_MARKER + r"[^\s\"'`]{1,300})",
    re.IGNORECASE,
)
_CONNECTORS = frozenset({"is", "was", "to", "would", "for", "of"})
#: A .netrc entry on one line: ``login USER`` right before ``password``.
_NETRC_INLINE_RE = re.compile(r"(?:^|\s)login[ \t]+\S+[ \t]+$", re.IGNORECASE)
#: A .netrc entry over several lines: a line that starts with one of its keywords.
_NETRC_LINE_RE = re.compile(
    r"^[ \t]*(?:machine|login|default)(?:[ \t]|$)", re.IGNORECASE | re.MULTILINE
)


def _phrase_gate(trigger: str) -> str:
    said = r"[a-z]*[ \t]+(?:(?:for|of)[ \t]+\S{1,64}[ \t]+)?(?:is|was|to|would):?[ \t]"
    return said + r"|word[ \t]+\S" if trigger == "pass" else said


def _in_netrc_entry(text: str, at: int) -> bool:
    """``password`` at ``at`` belongs to a .netrc entry: ``login USER`` right
    before it, or it starts its line and one of the two lines before starts
    with ``machine``, ``login`` or ``default``. (Not prose that merely says
    login: "a login form with email and password fields".)"""
    line = text.rfind("\n", 0, at) + 1
    if _NETRC_INLINE_RE.search(text, line, at):
        return True
    if text[line:at].strip():
        return False
    start = line
    for _ in range(2):
        start = text.rfind("\n", 0, max(start - 1, 0)) + 1
    return _NETRC_LINE_RE.search(text, start, line) is not None


def _replace_phrase(m: re.Match[str]) -> str:
    if m.group("nv") is not None:
        if m.group("nv").lower() in _CONNECTORS:  # prose whose secret is gone already
            return m.group(0)
        if not _in_netrc_entry(m.string, m.start()):
            return m.group(0)
        return group_replacer("secret-phrase", "nv")(m)
    password = m.group("name").lower().startswith(_PASSWORD_NAMES)
    quoted = m.group("qv")
    if quoted is not None:
        if is_placeholder(quoted) or not (password or looks_random(quoted)):
            return m.group(0)
        return group_replacer("secret-phrase", "qv")(m)
    value = m.group("uv").rstrip(".,;:!?)")
    if is_placeholder(value) or _DOTTED_IDENT_RE.match(value):
        return m.group(0)
    if (password and len(value) >= 6 and _SECRETISH_RE.search(value)) or looks_random(value):
        start = m.start("uv") - m.start()
        whole = m.group(0)
        return whole[:start] + marker("secret-phrase") + whole[start + len(value) :]
    return m.group(0)


# --- the rules --------------------------------------------------------------------

PRIVATE_KEY = Rule(
    "private-key",
    re.compile(
        r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:(?:\s|\\n)+(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+: [^\n\\]*))*)",
        re.DOTALL,
    ),
)
URL_PASSWORD = Rule(
    "url-password",
    re.compile(
        r"://[^\s:/?#@\[\]]{0,128}:"
        r"(?P<v>" + NOT_MARKER + r"[^\s@/?#]{1,256})@(?=[A-Za-z0-9\[])"
    ),
    replace=group_replacer("url-password", "v"),
)


def _replace_authorization(m: re.Match[str]) -> str:
    value = m.group("v")
    parts = [p for p in re.split(r"[_.~+/=-]", value) if p]
    if all(_WORDISH_RE.match(p) for p in parts):  # YOUR_ACCESS_TOKEN, a word
        return m.group(0)
    return group_replacer("authorization-header", "v")(m)


def _replace_bearer(m: re.Match[str]) -> str:
    if not is_tokenish(m.group("v")):
        return m.group(0)
    return group_replacer("bearer-token", "v")(m)


#: The case-insensitive rules, in the order they are tried at a place.
FOLDED: tuple[Rule, ...] = (
    Rule(
        "aws-secret-key",
        re.compile(
            r"(?:aws[_-]?secret(?:[_-]?access)?|secret[_-]?access)[_-]?key"
            + SEP
            + r"""["'`]?(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])""",
            re.IGNORECASE,
        ),
        ("aws", "secret"),
        _sep_gate,
        group_replacer("aws-secret-key", "v"),
    ),
    Rule(
        "authorization-header",
        re.compile(
            r"authorization" + SEP + r"""["'`]?"""
            r"(?:(?:bearer|basic|token|digest)[ \t]+)?"
            r"(?P<v>(?![$<{])[A-Za-z0-9._~+/=-]{8,})",
            re.IGNORECASE,
        ),
        ("authorization",),
        _sep_gate,
        _replace_authorization,
    ),
    Rule(
        "bearer-token",
        re.compile(
            r"bearer[ \t]+(?P<v>" + NOT_MARKER + r"[A-Za-z0-9._~+/-]{16,}=*)", re.IGNORECASE
        ),
        ("bearer",),
        lambda _: r"[ \t]+[a-z0-9._~+/-]{16}",
        _replace_bearer,
    ),
    Rule("secret-assignment", _ASSIGN_RE, ANCHORS, _sep_gate, _replace_assignment),
    Rule("high-entropy-secret", _ENTROPY_RE, ANCHORS, _sep_gate, _replace_entropy),
    Rule("command-line-secret", _CLI_RE, _CLI_TRIGGERS, _cli_gate, _replace_cli),
    Rule("secret-phrase", _PHRASE_RE, ANCHORS, _phrase_gate, _replace_phrase),
)
