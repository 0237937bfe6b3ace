"""Every vendor token family is redacted; identifiers that only look alike are not.

Each family gets tokens generated here from the vendor's documented shape
(prefix, then the body's alphabet and length) with a seeded random generator,
placed in the ways tokens show up in transcripts.
"""

from __future__ import annotations

import random

import pytest

from backscroll.redact import Redactor
from backscroll.redact.examples import fill
from backscroll.redact.vendors import FAMILY_NAMES

REDACTOR = Redactor()

#: family -> token shapes, one per documented prefix or variant ({h40}: 40 lower-case
#: hex digits; a alphanumeric, u URL-safe, b base64, U upper-case alphanumeric, l letters,
#: x lower-case alphanumeric, d digits, H hex of either case, B bech32).
SHAPES: dict[str, tuple[str, ...]] = {
    "anthropic-api-key": ("sk-ant-api03-{u93}AA", "sk-ant-admin01-{u93}AA"),
    "openai-api-key": ("sk-proj-{u74}T3BlbkFJ{u74}", "sk-{a20}T3BlbkFJ{a20}", "sk-svcacct-{u58}"),
    "google-api-key": ("AIza{u35}",),
    "stripe-key": ("sk_live_{a24}", "rk_test_{a24}", "pk_live_{a24}", "sk_prod_{a30}"),
    "slack-webhook": ("https://hooks.slack.com/services/T{U8}/B{U10}/{a24}",),
    "slack-token": (
        "xoxb-{d12}-{d13}-{a24}", "xoxp-{d12}-{d12}-{d12}-{h32}", "xapp-1-A{U10}-{d13}-{h64}",
        "xoxe.xoxp-1-{U163}", "xoxe-1-{U146}",
    ),
    "github-token": ("ghp_{a36}", "gho_{a36}", "ghu_{a36}", "ghs_{a36}", "ghr_{a36}",
                     "github_pat_11{U9}0{a22}_{a59}"),
    "aws-access-key": ("AKIA{U16}", "ASIA{U16}"),
    "jwt": ("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJ4In0.{u86}",),
    "1password-secret-key": ("A3-{U6}-{U11}-{U5}-{U5}-{U5}", "A3-{U6}-{U6}-{U5}-{U5}-{U5}-{U5}"),
    "1password-service-token": ("ops_eyJ{b260}",),
    "adobe-client-secret": ("p8e-{a32}",),
    "age-secret-key": ("AGE-SECRET-KEY-1{B58}",),
    "alibaba-access-key": ("LTAI{a20}",),
    "artifactory-token": ("AKCp{a69}",),
    "artifactory-reference-token": ("cmVmd{a59}",),
    "atlassian-api-token": ("ATATT3{u186}",),
    "authress-key": ("sc_{x12}.{x5}.acc_{x16}.{u64}", "authress_{x8}.{x4}.acc-{x12}.{b40}"),
    "azure-storage-key": ("AccountKey={b86}==", "SharedAccessKey={b43}="),
    "clickhouse-api-key": ("4b1d{a38}",),
    "clojars-token": ("CLOJARS_{x60}",),
    "cloudflare-origin-ca-key": ("v1.0-{h24}-{h146}",),
    "databricks-token": ("dapi{h32}", "dapi{h32}-2"),
    "digitalocean-token": ("dop_v1_{h64}", "doo_v1_{h64}", "dor_v1_{h64}"),
    "discord-bot-token": ("MT{a24}.{u6}.{u38}", "NDk{a21}.{u6}.{u27}"),
    "docker-hub-token": ("dckr_pat_{u27}", "dckr_oat_{u32}"),
    "doppler-token": ("dp.pt.{a43}", "dp.st.dev.{a40}", "dp.sa.{a43}"),
    "duffel-token": ("duffel_test_{u43}", "duffel_live_{u43}"),
    "dynatrace-token": ("dt0c01.{U24}.{U64}",),
    "easypost-token": ("EZAK{a54}", "EZTK{a54}"),
    "facebook-access-token": ("EAAC{a150}", "EAAM{a120}"),
    "figma-token": ("figd_{u40}",),
    "flutterwave-key": ("FLWSECK_TEST-{h32}-X", "FLWPUBK_TEST-{h32}-X", "FLWSECK_TEST-{h12}"),
    "flyio-token": ("fo1_{u43}",),
    "flyio-macaroon": ("fm1r_{b200}", "fm2_{b180}=="),
    "frameio-token": ("fio-u-{u64}",),
    "gitlab-token": ("glpat-{u20}", "glpat-{u27}.01.{x9}", "gldt-{u20}", "glrt-t1_{u27}.01.{x9}",
                     "glptt-{h40}", "glft-{u20}", "glimt-{u25}", "glagent-{u50}", "gloas-{u64}",
                     "glsoat-{u20}", "glffct-{u20}", "glcbt-1a_{u20}"),
    "gitlab-runner-registration-token": ("GR1348941{u20}",),
    "gitlab-session-cookie": ("_gitlab_session={x32}",),
    "google-oauth-token": ("GOCSPX-{u28}", "ya29.{u120}", "1//0{u60}"),
    "grafana-cloud-token": ("glc_{b60}==",),
    "grafana-service-account-token": ("glsa_{a32}_{h8}",),
    "grafana-api-key": ("eyJrIjoi{a80}",),
    "groq-api-key": ("gsk_{a52}",),
    "harness-token": ("pat.{u22}.{a24}.{a20}", "sat.{u22}.{a24}.{a20}"),
    "heroku-api-key": ("HRKU-AA{u58}",),
    "huggingface-token": ("hf_{l34}", "api_org_{l34}"),
    "infracost-token": ("ico-{a32}",),
    "intra42-client-secret": ("s-s4t2ud-{h64}", "s-s4t2af-{h64}"),
    "langsmith-api-key": ("lsv2_pt_{h32}_{h10}", "lsv2_sk_{h32}_{h10}"),
    "linear-api-key": ("lin_api_{a40}",),
    "mailgun-key": ("key-{h32}", "pubkey-{h32}"),
    "mapbox-token": ("pk.eyJ1Ijoi{u40}.{u22}", "sk.eyJ1Ijoi{u60}.{u22}"),
    "new-relic-key": ("NRAK-{U27}", "NRII-{u32}", "NRJS-{h19}"),
    "notion-token": ("ntn_{d11}{a35}",),
    "notion-integration-secret": ("secret_{a43}",),
    "npm-token": ("npm_{a36}",),
    "octopus-deploy-key": ("API-{U26}",),
    "openshift-token": ("sha256~{u43}",),
    "perplexity-api-key": ("pplx-{a48}",),
    "planetscale-token": ("pscale_tkn_{u43}", "pscale_oauth_{u40}", "pscale_pw_{u43}"),
    "postman-api-key": ("PMAK-{h24}-{h34}",),
    "prefect-api-key": ("pnu_{a36}",),
    "pulumi-token": ("pul-{h40}",),
    "pypi-token": ("pypi-AgEIcHlwaS5vcmc{u80}", "pypi-AgENdGVzdC5weXBpLm9yZw{u80}"),
    "readme-api-key": ("rdme_{x70}",),
    "replicate-token": ("r8_{a37}",),
    "rubygems-api-key": ("rubygems_{h48}",),
    "scalingo-token": ("tk-us-{u48}",),
    "sendgrid-api-key": ("SG.{u22}.{u43}",),
    "brevo-api-key": ("xkeysib-{h64}-{a16}", "xsmtpsib-{h64}-{a16}"),
    "sentry-org-token": ("sntrys_eyJpYXQiO{b100}LCJyZWdpb25fdXJs{b60}_{b43}",),
    "sentry-user-token": ("sntryu_{h64}",),
    "settlemint-token": ("sm_aat_{a16}", "sm_pat_{a16}", "sm_sat_{a16}"),
    "shippo-token": ("shippo_live_{h40}", "shippo_test_{h40}"),
    "shopify-token": ("shpat_{h32}", "shpca_{h32}", "shppa_{h32}", "shpss_{h32}"),
    "sourcegraph-token": ("sgp_{h16}_{h40}", "sgp_local_{h40}", "sgp_{h40}"),
    "square-token": ("sq0atp-{u22}", "sq0csp-{u43}", "EAAA{u60}"),
    "stripe-webhook-secret": ("whsec_{a32}",),
    "supabase-token": ("sbp_{h40}",),
    "supabase-secret-key": ("sb_secret_{u31}",),
    "tailscale-key": ("tskey-auth-{a12}-{a32}", "tskey-api-{a12}-{a32}"),
    "twilio-key": ("SK{h32}", "AC{h32}"),
    "typeform-token": ("tfp_{u44}_{u14}",),
    "vault-token": ("hvs.{u95}", "hvb.{u140}", "hvr.{u30}"),
    "xai-api-key": ("xai-{a80}",),
    "yandex-api-key": ("AQVN{u36}",),
    "azure-ad-client-secret": ("{a3}8Q~{u34}", "{a3}7Q~{u31}"),
    "hashicorp-terraform-token": ("{a14}.atlasv1.{u67}",),
    "mailchimp-api-key": ("{h32}-us21", "{h32}-us6"),
    "maxmind-license-key": ("{a6}_{a29}_mmk",),
    "telegram-bot-token": ("{d10}:AA{u33}", "{d8}:AA{u33}"),
    "microsoft-teams-webhook": (
        "https://contoso.webhook.office.com/webhookb2/{h8}-{h4}-{h4}-{h4}-{h12}@{h8}-{h4}-{h4}"
        "-{h4}-{h12}/IncomingWebhook/{h32}/{h8}-{h4}-{h4}-{h4}-{h12}",
    ),
}  # fmt: skip

#: How a token is placed: in prose, a shell assignment, JSON, a URL query, YAML,
#: a header, its own line, quoted in code.
CONTEXTS = (
    "here is the key {t} for later",
    "export SERVICE_CREDENTIAL={t}",
    '{{"credential": "{t}", "id": 7}}',
    "https://api.example.com/v1/items?auth={t}&page=2",
    "  credential: {t}\n  region: eu",
    "X-Service-Auth: {t}",
    "{t}",
    "client = Client('{t}')",
    "(`{t}`).",
)

_CASES = [
    (family, shape, context)
    for family, shapes in SHAPES.items()
    for shape in shapes
    for context in CONTEXTS
]


def test_every_vendor_family_has_generated_examples() -> None:
    assert set(SHAPES) == set(FAMILY_NAMES)


@pytest.mark.parametrize(("family", "shape", "context"), _CASES)
def test_vendor_token_is_redacted_in_every_placement(family: str, shape: str, context: str) -> None:
    rng = random.Random(f"{family}|{shape}|{context}")
    token = fill(shape, rng)
    text = context.format(t=token)
    out = REDACTOR.redact(text)
    assert f"[REDACTED:{family}]" in out, out
    # Nothing of the token's random part is left (a kept field name is not secret).
    body = token.split("=", 1)[1] if family == "azure-storage-key" else token
    assert body not in out
    assert body[-12:] not in out
    assert REDACTOR.redact(out) == out


@pytest.mark.parametrize("family", sorted(SHAPES))
def test_vendor_token_next_to_others_on_one_line(family: str) -> None:
    rng = random.Random(family)
    token = fill(SHAPES[family][0], rng)
    github = fill(SHAPES["github-token"][0], rng)
    out = REDACTOR.redact(f"a={token} b={github};")
    assert f"[REDACTED:{family}]" in out
    assert "[REDACTED:github-token]" in out


#: Identifiers, hashes and words that share a prefix or a shape with a vendor
#: token and must survive.
LOOKALIKES = [
    "hf_hub_download(repo_id='bert-base-uncased', filename='config.json')",
    "npm_config_registry=https://registry.npmjs.org/ npm_package_version=1.2.3",
    "api_org_name = 'acme'; secret_key_base_length = 64; secret_sauce_recipe_v2",
    "from sklearn import svm  # sk-learn, scikit-learn-compatible-estimator-wrapper",
    "commit 4b1d9fceb02d0ae598e95dc970b74767f19372d61af8a3c1\nsha256:4b1d0000ffff",
    "key-value store; api-key-header; key-3f786850e387550fdab836ed7e6dc881de23001b",
    "SKIP_TESTS=1 ACCEPT_EULA=Y API-Reference.md Makefile NOTES.md",
    "The pat.match(line) call and sat.solve() both return None.",
    "Use the tk-us-east-1 region and the dp.pt.internal host.",
    "ModuleNotFoundError: No module named 'transformers.models.auto'",
    "https://github.com/org/repo/blob/main/src/glpat_parser.py and gldt-docs",
    "session 550e8400-e29b-41d4-a716-446655440000 resumed",
    "The file EAACHECKLIST.md lists AKIA-style ids; AIza is Google's prefix.",
    "ghp_ is a GitHub prefix, glpat- a GitLab one, hf_ Hugging Face's, npm_ npm's.",
    "Content-Type: application/json; charset=utf-8; en-us; x-us-east-1",
    "eyJhbGciOiJIUzI1NiJ9 is the base64 of a JWT header",
    "v1.0-beta release notes; sha256~ is OpenShift's prefix",
    "rubygems_mirror = true; dapi_version = 2; pnu_count = 3",
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalike_identifiers_are_left_alone(text: str) -> None:
    assert REDACTOR.redact(text) == text


def test_git_hashes_and_uuids_survive_in_bulk() -> None:
    rng = random.Random(3)
    lines = []
    for _ in range(300):
        sha = fill("{h40}", rng)
        u = fill("{h32}", rng)
        lines.append(f"{sha} {u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]} {fill('{h64}', rng)}")
    text = "\n".join(lines)
    assert REDACTOR.redact(text) == text


def test_infix_families_find_every_token_around_their_literal() -> None:
    rng = random.Random(5)
    first, second = fill("{h32}-us21", rng), fill("{h32}-us6", rng)
    telegram = fill("{d10}:AA{u33}", rng)
    text = f"en-us and {first}, then -us alone, {second}; bot{telegram}/getMe"
    out = REDACTOR.redact(text)
    assert out == (
        "en-us and [REDACTED:mailchimp-api-key], then -us alone, [REDACTED:mailchimp-api-key]; "
        "bot[REDACTED:telegram-bot-token]/getMe"
    )


def test_field_name_before_an_azure_key_is_kept() -> None:
    key = fill("{b86}==", random.Random(6))
    out = REDACTOR.redact(f"AccountName=app;AccountKey={key};EndpointSuffix=core.windows.net")
    assert out == (
        "AccountName=app;AccountKey=[REDACTED:azure-storage-key];EndpointSuffix=core.windows.net"
    )
