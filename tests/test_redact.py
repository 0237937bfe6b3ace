from __future__ import annotations

import random
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backscroll.errors import ConfigError
from backscroll.redact import (
    DEFAULT_RULE_NAMES,
    Redactor,
    plant_examples,
    planted_secrets,
    shannon_entropy,
)

REDACTOR = Redactor()
_RNG = random.Random(1)


def fake(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def test_every_default_rule_has_one_planted_example() -> None:
    assert tuple(plant_examples()) == DEFAULT_RULE_NAMES
    assert tuple(planted_secrets()) == DEFAULT_RULE_NAMES
    assert len(set(DEFAULT_RULE_NAMES)) == len(DEFAULT_RULE_NAMES)


@pytest.mark.parametrize("kind", DEFAULT_RULE_NAMES)
def test_planted_example_is_gone_and_the_marker_names_its_kind(kind: str) -> None:
    text = f"Here is what I ran:\n{plant_examples()[kind]}\nand it worked."
    out = REDACTOR.redact(text)
    assert planted_secrets()[kind] not in out
    assert f"[REDACTED:{kind}]" in out
    assert out.startswith("Here is what I ran:\n") and out.endswith("\nand it worked.")


# More shapes of each kind, as they show up in transcripts: (kind, text, secret).
SHAPES = [
    ("anthropic-api-key", "key sk-ant-admin01-{s}", "sk-ant-admin01-{s}"),
    ("openai-api-key", "OPENAI_API_KEY=sk-{s}", "sk-{s}"),
    ("openai-api-key", '"apiKey": "sk-proj-{s}"', "sk-proj-{s}"),
    ("google-api-key", "const k = 'AIza{g}';", "AIza{g}"),
    ("stripe-key", "rk_live_{s}", "rk_live_{s}"),
    ("stripe-key", "pk_test_{s}", "pk_test_{s}"),
    ("stripe-key", "Stripe::api_key = 'sk_test_{s}'", "sk_test_{s}"),
    ("slack-token", "token xoxp-1234567890-{s}", "xoxp-1234567890-{s}"),
    ("slack-webhook", "POST https://hooks.slack.com/services/T0ABC/B0DEF/{s}", "{s}"),
    ("github-token", "gho_{g36}", "gho_{g36}"),
    ("github-token", "GH_TOKEN=ghs_{g36}", "ghs_{g36}"),
    ("github-token", "ghu_{g36} and ghr_{g36}", "{g36}"),
    ("github-token", "github_pat_11ABCDEFG0{s}_{s}", "github_pat_11ABCDEFG0{s}_{s}"),
    ("aws-access-key", "ASIAY34FZKBOKMUTVV7A in the profile", "ASIAY34FZKBOKMUTVV7A"),
    ("aws-secret-key", "AWS_SECRET_ACCESS_KEY={a40}", "{a40}"),
    ("aws-secret-key", '"SecretAccessKey": "{a40}",', "{a40}"),
    ("jwt", "id_token: eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.{s}", "eyJzdWIiOiIxIn0.{s}"),
    ("authorization-header", "-H 'Authorization: Bearer {s}'", "{s}"),
    ("authorization-header", '"authorization": "Basic dXNlcjpodW50ZXIy"', "dXNlcjpodW50ZXIy"),
    ("bearer-token", "Use Bearer {s} for the call.", "{s}"),
    ("url-password", "redis://:{s}@cache:6379/0", "{s}"),
    ("url-password", "https://alice:pa55w0rd!@git.example.org/repo.git", "pa55w0rd!"),
    ("secret-assignment", "DB_PASSWORD=correcthorse", "correcthorse"),
    ("secret-assignment", "password: 'Tr0ub4dor&3'", "Tr0ub4dor&3"),
    ("secret-assignment", "  passwd: hunter2x\n", "hunter2x"),
    ("secret-assignment", "curl 'https://api.example.com/v1?token=q1w2e3r4t5&x=1'", "q1w2e3r4t5"),
    ("secret-assignment", "client_secret = \"with spaces and 'quotes' 9\"", "with spaces and"),
    ("secret-assignment", "API_KEY: abc123!xyz", "abc123!xyz"),
    ("secret-assignment", "encryptionKey: {s}", "{s}"),
    ("high-entropy-secret", "sessionKeyMaterial: {s}", "{s}"),
    ("high-entropy-secret", 'SECRET_KEY_BASE = "{h}"', "{h}"),
    ("high-entropy-secret", "webhook_secret_v2={s}", "{s}"),
]


@pytest.mark.parametrize(("kind", "template", "secret"), SHAPES)
def test_shape_is_redacted(kind: str, template: str, secret: str) -> None:
    values = {
        "s": fake(32),
        "g": fake(35),
        "g36": fake(36),
        "a40": fake(40, string.ascii_letters + string.digits + "/+"),
        "h": fake(64, "0123456789abcdef"),
    }
    text, secret = template.format(**values), secret.format(**values)
    out = REDACTOR.redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out


def test_private_key_block_is_redacted_whole() -> None:
    body = "\n".join(fake(64) for _ in range(5))
    kind = "EC PRIVATE" + " KEY"
    text = f"cat key.pem\n-----BEGIN {kind}-----\n{body}\n-----END {kind}-----\ndone"
    assert REDACTOR.redact(text) == "cat key.pem\n[REDACTED:private-key]\ndone"


def test_truncated_private_key_block_loses_its_body() -> None:
    body = "\n".join(fake(64) for _ in range(3))
    text = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}"
    assert REDACTOR.redact(text) == "[REDACTED:private-key]"


def test_url_password_keeps_user_and_host() -> None:
    out = REDACTOR.redact("psql postgresql://report:s3cr3t-Pw@db.example.com:5432/app")
    assert out == "psql postgresql://report:[REDACTED:url-password]@db.example.com:5432/app"


def test_authorization_header_keeps_the_scheme() -> None:
    token = fake(40)
    out = REDACTOR.redact(f"Authorization: Bearer {token}")
    assert out == "Authorization: Bearer [REDACTED:authorization-header]"


CLEAN = [
    "I read the loader and the token count includes the system prompt; the API key lookup"
    " falls back to the environment. Pass the session key through to the writer.",
    "Edited /home/dev/src/backscroll/store/writer.py and ~/.config/backscroll/config.yaml",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b\n"
    "HEAD is now at 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "session 550e8400-e29b-41d4-a716-446655440000 resumed; "
    "request id 0f8fad5b-d9cb-469f-a165-70867728950e",
    "def login(user, password):\n    password = getpass.getpass()\n    token = tokens[0]\n"
    "    api_key = os.environ['API_KEY']\n    secret = settings.SECRET\n",
    "login(user, password=password)\ntoken = self._token\npassword = args.password",
    "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')\nmax_tokens = 4096",
    '"input_tokens": 1234, "cache_key": "user_profile_v2_settings", "token_count": 12',
    "primary_key = 'id'\nsort(key=len)\nforeign_key_name = 'fk_users_accounts_2024'",
    'PASSWORD=${DB_PASSWORD}\npassword: "{{ vault_password }}"\ntoken: <your-token-here>',
    'password: null\n"token": null\nsecret: true',
    "The password: it must be at least twelve characters. The token: rotated weekly.",
    "Bearer tokens are described in RFC 6750. Send Authorization: Bearer $TOKEN",
    "https://github.com/org/repo/blob/main/x.py git@github.com:org/repo.git http://localhost:8080/",
    "pip install scikit-learn; sk-learn-compatible-estimator-wrapper; task-runner",
    "ssh-keygen prints -----BEGIN OPENSSH PUBLIC KEY----- for the public half",
    "AKIA is the prefix of an AWS access key id; ghp_ is a GitHub prefix.",
    "Run `kubectl get secret my-secret -o yaml` to see it.",
]


@pytest.mark.parametrize("text", CLEAN)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert REDACTOR.redact(text) == text


def test_git_sha_under_a_non_secret_name_is_kept() -> None:
    text = "commit: 3f786850e387550fdab836ed7e6dc881de23001b\nparent=9fceb02d0ae598e95dc9"
    assert REDACTOR.redact(text) == text


def test_low_entropy_value_under_a_key_name_is_kept() -> None:
    text = "cache_key = 'aaaaaaaaaaaaaaaaaaaa1'"
    assert REDACTOR.redact(text) == text


def test_shannon_entropy() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)


def test_user_pattern_redacts_its_matches() -> None:
    r = Redactor({"ticket": r"TCK-\d{6}"})
    assert r.redact("see TCK-123456 and TCK-1") == "see [REDACTED:ticket] and TCK-1"
    assert r.names[-1] == "ticket"


def test_user_pattern_group_named_secret_is_all_that_goes() -> None:
    r = Redactor({"internal": r"X-Internal-Auth: (?P<secret>\w+)"})
    assert r.redact("X-Internal-Auth: abcdef") == "X-Internal-Auth: [REDACTED:internal]"


def test_user_patterns_run_after_the_defaults() -> None:
    r = Redactor({"anything-long": r"[A-Za-z0-9]{30,}"})
    github = "gh" + "p_" + fake(36)
    assert r.redact(github) == "[REDACTED:github-token]"


def test_bad_user_pattern_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError) as info:
        Redactor({"good": "abc", "broken-one": "(unclosed"})
    message = str(info.value)
    assert "broken-one" in message
    assert "does not compile" in message and "missing )" in message
    assert "fix the regular expression" in message


def test_user_pattern_matching_empty_text_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"'maybe'.*matches empty text"):
        Redactor({"maybe": "x*"})


def test_user_pattern_name_must_fit_in_a_marker() -> None:
    with pytest.raises(ConfigError, match="cannot be used in a marker"):
        Redactor({"bad]name": "abc"})


def test_redacting_twice_is_redacting_once() -> None:
    text = "\n".join(plant_examples().values()) + "\n" + "\n".join(CLEAN)
    once = REDACTOR.redact(text)
    assert REDACTOR.redact(once) == once


def test_non_ascii_text_around_a_secret() -> None:
    text = "İstanbul ünïcödé 🙂 — DB_PASSWORD=Sünnet2024! and more İ"
    out = REDACTOR.redact(text)
    assert "Sünnet2024!" not in out
    assert out.startswith("İstanbul ünïcödé 🙂 — DB_PASSWORD=[REDACTED:secret-assignment]")


def test_text_without_candidates_is_returned_as_is() -> None:
    text = "Nothing to see here, just a plan for the migration."
    assert REDACTOR.redact(text) is text


@settings(max_examples=200, deadline=None)
@given(st.text(), st.text())
def test_redact_never_raises_and_is_idempotent(before: str, after: str) -> None:
    out = REDACTOR.redact(before + after)
    assert REDACTOR.redact(out) == out


@settings(max_examples=300, deadline=None)
@given(
    before=st.text(),
    after=st.text(),
    kind=st.sampled_from(DEFAULT_RULE_NAMES),
)
def test_planted_secret_never_survives(before: str, after: str, kind: str) -> None:
    text = f"{before}\n{plant_examples()[kind]}\n{after}"
    out = REDACTOR.redact(text)
    assert planted_secrets()[kind] not in out


@given(st.text(alphabet=" \t-pausqerx", max_size=40))
def test_the_command_option_check_finds_what_the_option_pattern_finds(text: str) -> None:
    """`` -p``, `` -a``, `` -u`` or `` --user`` anywhere, exactly as the regex
    ``' -[pau]| --user'`` finds them (the substring tests replaced it for speed)."""
    from backscroll.redact.rules import has_command_option

    assert has_command_option(text) == bool(re.search(" -[pau]| --user", text))
