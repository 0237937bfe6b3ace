"""Vendor token formats: one scan of the text for every family.

Each family is written from the vendor's documented token shape (the prefix the
vendor puts on every token, then the body's alphabet and length), covering the
vendor families that gitleaks and detect-secrets know. All prefixes are merged
into one pattern (:mod:`backscroll.redact.anchored`), so the text is scanned
once whatever the number of families; an empty named group right after each
prefix tells which family matched.

A match must start at a token boundary (no letter, digit, ``_`` or ``-``
before it); families whose body is a fixed-length hex or alphanumeric run also
need a boundary after it, so longer identifiers and hashes are left alone.

Families found by a literal inside their tokens (``.atlasv1.``, ``-us12``) are
:data:`INFIX_FAMILIES`: the same scan finds the literal, and the family's whole
pattern, run once over the text, says whether a token holds it.
"""

from __future__ import annotations

import bisect
import re
import sys
from dataclasses import dataclass

from backscroll.redact.anchored import Literal, compile_anchored

#: After a fixed-length body: the token ends here.
_END = r"(?![A-Za-z0-9])"
_HEX = "[a-fA-F0-9]"
_LHEX = "[a-f0-9]"
_ALNUM = "[A-Za-z0-9]"
_B64 = "[A-Za-z0-9+/]"
_URLSAFE = r"[A-Za-z0-9_-]"


@dataclass(frozen=True, slots=True)
class Family:
    """Tokens that start with one of ``prefixes`` followed by ``body``."""

    name: str
    prefixes: tuple[str, ...]
    body: str
    #: The prefix is a field name (``AccountKey=``), kept in the text; only the
    #: body becomes the marker.
    keep_prefix: bool = False
    #: For a family found by a literal inside its tokens (``.atlasv1.``): the
    #: whole token's pattern.
    whole: re.Pattern[str] | None = None


def _f(name: str, prefixes: str, body: str, *, keep_prefix: bool = False) -> Family:
    return Family(name, tuple(prefixes.split()), body, keep_prefix)


#: Every family with a literal prefix; marker names are the ``name``s.
FAMILIES: tuple[Family, ...] = (
    # The first ones are the kinds backscroll had before the family table; their
    # marker names stay as they were.
    _f("anthropic-api-key", "sk-ant-", _URLSAFE + "{20,}"),
    _f("openai-api-key", "sk-", r"(?=[A-Za-z0-9_-]{0,200}\d)[A-Za-z0-9_-]{17,}"),
    _f("google-api-key", "AIza", _URLSAFE + "{35}"),
    _f(
        "stripe-key",
        "sk_live_ sk_test_ sk_prod_ rk_live_ rk_test_ rk_prod_ pk_live_ pk_test_",
        _ALNUM + "{10,99}",
    ),
    _f(
        "slack-webhook",
        "https://hooks.slack.com/",
        "(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
    ),
    _f(
        "slack-token",
        "xoxa- xoxb- xoxp- xoxo- xoxs- xoxr- xoxe- xapp- xoxe.xoxb- xoxe.xoxp-",
        "[A-Za-z0-9-]{10,}",
    ),
    _f("github-token", "ghp_ gho_ ghu_ ghs_ ghr_", _ALNUM + "{36,255}"),
    _f("github-token", "github_pat_", r"\w{22,255}"),
    _f("aws-access-key", "AKIA ASIA ABIA ACCA", "[A-Z0-9]{16}(?![A-Z0-9])"),
    _f(
        "jwt",
        "eyJ",
        _URLSAFE + r"{7,}\." + _URLSAFE + r"{10,}\." + _URLSAFE + "{10,}",
    ),
    _f(
        "1password-secret-key",
        "A3-",
        r"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}",
    ),
    _f("1password-service-token", "ops_eyJ", _B64 + "{100,}={0,3}"),
    _f("adobe-client-secret", "p8e-", _ALNUM + "{32}" + _END),
    _f("age-secret-key", "AGE-SECRET-KEY-1", "[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _f("alibaba-access-key", "LTAI", _ALNUM + "{20}" + _END),
    _f("artifactory-token", "AKCp", _ALNUM + "{69}"),
    _f("artifactory-reference-token", "cmVmd", _ALNUM + "{59}"),
    _f("atlassian-api-token", "ATATT3", "[A-Za-z0-9_=-]{100,}"),
    _f(
        "authress-key",
        "sc_ ext_ scauth_ authress_",
        r"[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-]"
        r"[A-Za-z0-9-]{10,32}\.[A-Za-z0-9+/_=-]{30,120}",
    ),
    _f("azure-storage-key", "AccountKey= SharedAccessKey=", _B64 + "{40,}={0,2}", keep_prefix=True),
    _f("clickhouse-api-key", "4b1d", _ALNUM + "{38}" + _END),
    _f("clojars-token", "CLOJARS_", _ALNUM + "{60}"),
    _f("cloudflare-origin-ca-key", "v1.0-", _LHEX + "{24}-" + _LHEX + "{146}"),
    _f("databricks-token", "dapi", _LHEX + r"{32}(?:-\d)?" + _END),
    _f("digitalocean-token", "dop_v1_ doo_v1_ dor_v1_", _LHEX + "{64}"),
    _f(
        "discord-bot-token",
        "M N O",
        r"(?=[\w-]{0,25}\d)[\w-]{23,25}\.[\w-]{6}\.[\w-]{27,38}" + _END,
    ),
    _f("docker-hub-token", "dckr_pat_ dckr_oat_", _URLSAFE + "{27,}"),
    _f(
        "doppler-token",
        "dp.pt. dp.st. dp.ct. dp.sa. dp.scim. dp.audit.",
        r"[A-Za-z0-9_.-]{40,}",
    ),
    _f("duffel-token", "duffel_test_ duffel_live_", "[A-Za-z0-9_=-]{43}"),
    _f("dynatrace-token", "dt0c01.", _ALNUM + r"{24}\." + _ALNUM + "{64}"),
    _f("easypost-token", "EZAK EZTK", _ALNUM + "{54}"),
    _f("facebook-access-token", "EAA", "[A-Z]" + _ALNUM + "{96,}"),
    _f("figma-token", "figd_", _URLSAFE + "{40,}"),
    _f(
        "flutterwave-key",
        "FLWSECK_TEST- FLWPUBK_TEST- FLWSECK- FLWPUBK-",
        _ALNUM + "{12,32}(?:-X)?" + _END,
    ),
    _f("flyio-token", "fo1_", _URLSAFE + "{43}"),
    _f("flyio-macaroon", "fm1a_ fm1r_ fm2_", _B64 + "{100,}={0,3}"),
    _f("frameio-token", "fio-u-", "[A-Za-z0-9_=-]{64}"),
    _f(
        "gitlab-token",
        "glpat- gldt- glffct- glft- glimt- glagent- gloas- glrt- glrtr- glsoat- glcbt- glptt-",
        r"[A-Za-z0-9_.-]{20,}",
    ),
    _f("gitlab-runner-registration-token", "GR1348941", r"[\w-]{20,}"),
    _f("gitlab-session-cookie", "_gitlab_session=", "[0-9a-z]{32}"),
    _f(
        "google-oauth-token",
        "GOCSPX- ya29. 1//0",
        _URLSAFE + "{24,}",
    ),
    _f("grafana-cloud-token", "glc_", _B64 + "{32,}={0,3}"),
    _f("grafana-service-account-token", "glsa_", _ALNUM + "{32}_" + _HEX + "{8}"),
    _f("grafana-api-key", "eyJrIjoi", _ALNUM + "{50,}={0,3}"),
    _f("groq-api-key", "gsk_", _ALNUM + "{48,}"),
    _f(
        "harness-token",
        "pat. sat.",
        _URLSAFE + r"{22}\." + _ALNUM + r"{24}\." + _ALNUM + "{20}",
    ),
    _f("heroku-api-key", "HRKU-", _URLSAFE + "{60}"),
    _f("huggingface-token", "hf_ api_org_", _ALNUM + "{30,}"),
    _f("infracost-token", "ico-", _ALNUM + "{32}" + _END),
    _f("intra42-client-secret", "s-s4t2ud- s-s4t2af-", _HEX + "{64}"),
    _f("langsmith-api-key", "lsv2_pt_ lsv2_sk_", _LHEX + "{32}_" + _LHEX + "{10}"),
    _f("linear-api-key", "lin_api_ lin_oauth_", _ALNUM + "{40}"),
    _f("mailgun-key", "key- pubkey-", _LHEX + "{32}" + _END),
    _f("mapbox-token", "pk.eyJ sk.eyJ tk.eyJ", _URLSAFE + r"{20,}\." + _URLSAFE + "{20,}"),
    _f("new-relic-key", "NRAK- NRII- NRJS- NRRA- NRAA-", r"[\w-]{19,}"),
    _f("notion-token", "ntn_", r"[0-9]{11}" + _ALNUM + "{35}"),
    _f("notion-integration-secret", "secret_", _ALNUM + "{43}" + _END),
    _f("npm-token", "npm_", _ALNUM + "{36}"),
    _f("octopus-deploy-key", "API-", "[A-Z0-9]{26}" + _END),
    _f("openshift-token", "sha256~", r"[\w-]{43}"),
    _f("perplexity-api-key", "pplx-", _ALNUM + "{48}"),
    _f("planetscale-token", "pscale_tkn_ pscale_oauth_ pscale_pw_", r"[\w=.-]{32,64}"),
    _f("postman-api-key", "PMAK-", _HEX + "{24}-" + _HEX + "{34}"),
    _f("prefect-api-key", "pnu_", _ALNUM + "{36}"),
    _f("pulumi-token", "pul-", _LHEX + "{40}"),
    _f("pypi-token", "pypi-AgE", _URLSAFE + "{50,}"),
    _f("readme-api-key", "rdme_", "[a-z0-9]{70}"),
    _f("replicate-token", "r8_", _ALNUM + "{37}" + _END),
    _f("rubygems-api-key", "rubygems_", _LHEX + "{48}"),
    _f("scalingo-token", "tk-us-", r"[\w-]{48}"),
    _f("sendgrid-api-key", "SG.", _URLSAFE + r"{22}\." + _URLSAFE + "{43}"),
    _f("brevo-api-key", "xkeysib- xsmtpsib-", _LHEX + "{64}-" + _ALNUM + "{16}"),
    _f("sentry-org-token", "sntrys_eyJ", "[A-Za-z0-9+/=_]{60,}"),
    _f("sentry-user-token", "sntryu_", _LHEX + "{64}"),
    _f("settlemint-token", "sm_aat_ sm_pat_ sm_sat_", _ALNUM + "{16}"),
    _f("shippo-token", "shippo_live_ shippo_test_", _HEX + "{40}"),
    _f("shopify-token", "shpat_ shpca_ shppa_ shpss_", _HEX + "{32}"),
    _f("sourcegraph-token", "sgp_", "(?:" + _HEX + "{16}_|local_)?" + _HEX + "{40}"),
    _f("square-token", "sq0atp- sq0csp- EAAA", r"[\w-]{22,}"),
    _f("stripe-webhook-secret", "whsec_", _ALNUM + "{32,}"),
    _f("supabase-token", "sbp_", _LHEX + "{40}"),
    _f("supabase-secret-key", "sb_secret_", _URLSAFE + "{20,}"),
    _f("tailscale-key", "tskey-", r"[A-Za-z0-9-]{20,}"),
    _f("twilio-key", "SK AC", _HEX + "{32}" + _END),
    _f("typeform-token", "tfp_", r"[A-Za-z0-9_.=-]{40,}"),
    _f("vault-token", "hvs. hvb. hvr.", r"[\w-]{24,}"),
    _f("xai-api-key", "xai-", _ALNUM + "{60,}"),
    _f("yandex-api-key", "AQVN", _URLSAFE + "{35,38}" + _END),
)


def _infix(name: str, literal: str, whole: str) -> Family:
    return Family(name, (literal,), "", whole=re.compile(whole))


#: Families found by a literal that is not their first characters.
INFIX_FAMILIES: tuple[Family, ...] = (
    _infix(
        "azure-ad-client-secret",
        "Q~",
        r"(?<![\w~.])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}",
    ),
    _infix(
        "hashicorp-terraform-token",
        ".atlasv1.",
        r"(?<![A-Za-z0-9])[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}",
    ),
    _infix("mailchimp-api-key", "-us", r"(?<![A-Za-z0-9])[a-f0-9]{32}-us\d{1,2}(?![A-Za-z0-9])"),
    _infix(
        "maxmind-license-key",
        "_mmk",
        r"(?<![A-Za-z0-9_])[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk(?![A-Za-z0-9])",
    ),
    _infix("telegram-bot-token", ":AA", r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}"),
    _infix(
        "microsoft-teams-webhook",
        ".webhook.office.com/",
        r"https://[\w.-]+\.webhook\.office\.com/webhookb2/[^\s'\"<>`]+",
    ),
)


# --- the one scan ---------------------------------------------------------------------


def _compile(families: tuple[Family, ...]) -> tuple[re.Pattern[str], dict[str, tuple[Family, int]]]:
    """One pattern for all families; the group ``t<n>`` names the family, and
    the anchor index says where its prefix starts before the match."""
    literals: list[Literal] = []
    owner: dict[str, Family] = {}
    for family in families:
        for prefix in family.prefixes:
            tag = f"t{len(literals)}"
            owner[tag] = family
            if family.whole is not None:
                # Match the anchor alone, so the scan goes on right after it.
                literals.append(Literal(prefix, "", tag, boundary=False, last=True))
            else:
                literals.append(Literal(prefix, family.body, tag))
    pattern, anchors = compile_anchored(literals, tokens=True)
    return pattern, {tag: (owner[tag], anchors[tag]) for tag in owner}


VENDOR_RE, _TAGS = _compile(FAMILIES + INFIX_FAMILIES)


def _around(spans: list[tuple[int, int]], at: int, done: int) -> tuple[int, int] | None:
    """The span in ``spans`` (sorted) that holds position ``at`` and starts at or
    after ``done``, if any."""
    i = bisect.bisect_right(spans, (at, sys.maxsize)) - 1
    if i >= 0 and spans[i][0] >= done and spans[i][0] <= at < spans[i][1]:
        return spans[i]
    return None


def sub_vendors(text: str) -> str:
    """``text`` with every vendor-family token replaced by its marker."""
    first = VENDOR_RE.search(text)
    if first is None:
        return text
    pieces: list[str] = []
    wholes: dict[str, list[tuple[int, int]]] = {}
    done = 0
    for m in VENDOR_RE.finditer(text, first.start()):
        tag = m.lastgroup
        if tag is None:  # pragma: no cover - every branch ends in a tag
            continue
        family, before = _TAGS[tag]
        start, end = m.start() - before, m.end()
        if start < done:
            continue
        if family.whole is not None:
            # The whole tokens of this family, found in one scan the first time.
            if family.name not in wholes:
                wholes[family.name] = [w.span() for w in family.whole.finditer(text)]
            span = _around(wholes[family.name], start, done)
            if span is None:
                continue
            start, end = span
        keep = m.start(tag) if family.keep_prefix else start
        pieces += (text[done:keep], f"[REDACTED:{family.name}]")
        done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


#: Marker names of the vendor families, in the order they are listed.
FAMILY_NAMES: tuple[str, ...] = tuple(dict.fromkeys(f.name for f in (*FAMILIES, *INFIX_FAMILIES)))
