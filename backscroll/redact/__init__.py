"""Replace secrets in turn text with ``[REDACTED:<kind>]`` before it is stored.

Every turn passes through :meth:`Redactor.redact` on its way to the database,
so the cost is kept to a few scans of the text:

1. private key blocks (one literal search for ``-----BEGIN``);
2. every vendor token family (:mod:`backscroll.redact.vendors`): one scan of a
   pattern built from all the vendors' prefixes, plus a substring check per
   family whose fixed part is not its start;
3. passwords in URLs (``://user:PASS@``);
4. the case-insensitive rules (:mod:`backscroll.redact.rules`: assignments,
   command-line options, prose, headers, high-entropy values), tried only where
   their trigger words occur in the lower-cased text;
5. the user's own patterns.

Text with no candidate comes back as the same object. Every rule skips text
that is already a marker, so redacting twice changes nothing.

Why not a library: detect-secrets (Yelp, the best-kept Python scanner) was
measured against these rules with ``python bench/bench_redact.py`` (figures in
``bench/RESULTS.md``). It reports, never redacts, and works one line at a time,
so backscroll would still write the span-replacing glue; it missed half of the
kinds planted and ran several hundred times slower than the budget of a step run
on every indexed turn. gitleaks is a Go program. The vendor formats here are
written from the token shapes the vendors document, for the families those two
projects know.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from backscroll.redact.anchored import Literal, compile_anchored
from backscroll.redact.rules import (
    COMMAND_WORDS,
    FOLDED,
    MARKER,
    PRIVATE_KEY,
    URL_PASSWORD,
    Rule,
    group_replacer,
    has_command_option,
    looks_random,
    marker,
    shannon_entropy,
)
from backscroll.redact.vendors import FAMILY_NAMES, sub_vendors
from backscroll.user_patterns import compile_user_pattern

__all__ = [
    "DEFAULT_RULE_NAMES",
    "MARKER",
    "Redactor",
    "looks_random",
    "plant_examples",
    "planted_secrets",
    "shannon_entropy",
]

#: Marker names of the default rules, in the order they run.
DEFAULT_RULE_NAMES: tuple[str, ...] = (
    PRIVATE_KEY.name,
    *FAMILY_NAMES,
    URL_PASSWORD.name,
    *(rule.name for rule in FOLDED),
)


def _user_rule(name: str, regex: str, origin: str) -> Rule:
    pattern = compile_user_pattern(name, regex, f"{origin}.{name}")
    replace = (
        group_replacer(name, "secret")
        if "secret" in pattern.groupindex
        else group_replacer(name, 0)
    )

    def guarded(m: re.Match[str]) -> str:
        if m.end() == m.start() or m.group(0).startswith("[REDACTED:"):
            return m.group(0)
        return replace(m)

    return Rule(name, pattern, replace=guarded)


#: trigger -> its rules in order, each with the pattern its own gate holds at.
_Rules = dict[str, tuple[tuple[Rule, re.Pattern[str]], ...]]
#: tag -> (trigger, how many of its characters come before the match's start).
_Tags = dict[str, tuple[str, int]]


def _plan(rules: tuple[Rule, ...]) -> tuple[re.Pattern[str], re.Pattern[str], _Tags, _Rules]:
    """The places worth trying: one pattern finding every trigger that has one
    of its rules' gates after it (and one without the command words)."""
    by_trigger: dict[str, list[Rule]] = {}
    for rule in rules:
        for trigger in rule.triggers:
            by_trigger.setdefault(trigger, []).append(rule)
    literals: list[Literal] = []
    by_rule: _Rules = {}
    for trigger, group in by_trigger.items():
        gates = [rule.gate(trigger) if rule.gate else "" for rule in group]
        after = "(?=" + "|".join(dict.fromkeys(gates)) + ")"
        literals.append(Literal(trigger, after, f"g{len(literals)}", boundary=False))
        word = re.escape(trigger)
        by_rule[trigger] = tuple(
            (rule, re.compile(f"{word}(?={gate})")) for rule, gate in zip(group, gates, strict=True)
        )
    every, anchors = compile_anchored(literals)
    common, _ = compile_anchored([x for x in literals if x.text not in COMMAND_WORDS])
    tags = {x.tag: (x.text, anchors[x.tag]) for x in literals}
    return every, common, tags, by_rule


_EVERY_TRIGGER, _COMMON_TRIGGERS, _TRIGGER_TAGS, _RULES = _plan(FOLDED)


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
        #: Marker names of every rule, in the order they run.
        self.names: tuple[str, ...] = DEFAULT_RULE_NAMES + tuple(r.name for r in self._user)

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by its marker; unchanged when none."""
        # (`in` finds a literal faster than re's prefix search.)
        if "PRIVATE KEY" in text:
            text = PRIVATE_KEY.pattern.sub(marker(PRIVATE_KEY.name), text)
        text = sub_vendors(text)
        if "://" in text and URL_PASSWORD.replace is not None:
            text = URL_PASSWORD.pattern.sub(URL_PASSWORD.replace, text)
        text = _sub_folded(text)
        for rule in self._user:
            text = rule.pattern.sub(rule.replace or marker(rule.name), text)
        return text


def _fold(text: str) -> str:
    """Lower-case ``text`` keeping every character at its index."""
    folded = text.lower()
    if len(folded) != len(text):  # a character lower-cased to two (U+0130)
        folded = text.translate(_ASCII_FOLD)
    return folded


_ASCII_FOLD = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _sub_folded(text: str) -> str:
    """Apply the case-insensitive rules in one pass over ``text``.

    One scan of the lower-cased text finds every trigger with one of its
    rules' gates after it (:mod:`backscroll.redact.anchored`). At each place,
    in text order, the rules whose gate holds are tried in rule order and the
    first that redacts something wins.
    """
    folded = _fold(text)
    hits: list[tuple[int, str]] = []
    triggers = _EVERY_TRIGGER if has_command_option(folded) else _COMMON_TRIGGERS
    first = triggers.search(folded)  # most texts have none: no iterator then
    if first is None:
        return text
    for found in triggers.finditer(folded, first.start()):
        trigger, before = _TRIGGER_TAGS[found.lastgroup or ""]
        hits.append((found.start() - before, trigger))
    hits.sort()
    pieces: list[str] = []
    done = 0
    for at, trigger in hits:
        if at < done:
            continue
        for rule, gate in _RULES[trigger]:
            if not gate.match(folded, at):
                continue
            m = rule.pattern.match(text, at)
            if m is None or m.end() == at:
                continue
            replacement = rule.replace(m) if rule.replace else marker(rule.name)
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


def plant_examples() -> dict[str, str]:
    """One fake example per default rule: marker name → a snippet to plant in text.

    Each snippet is a realistic line (or a whole PEM block) holding a fake
    secret built from the documented shape of its kind; after
    :meth:`Redactor.redact` the secret in it is gone and the marker names the
    kind. :func:`planted_secrets` gives the bare secrets.
    """
    from backscroll.redact.examples import example_snippets  # tests and benches only

    examples = example_snippets()
    return {kind: examples[kind][0] for kind in DEFAULT_RULE_NAMES}


def planted_secrets() -> dict[str, str]:
    """Marker name → the secret inside the matching :func:`plant_examples` snippet."""
    from backscroll.redact.examples import example_snippets

    examples = example_snippets()
    return {kind: examples[kind][1] for kind in DEFAULT_RULE_NAMES}
