"""One fake example per redaction kind, built from the kind's documented shape.

The tokens are generated from a seeded random generator, never written out, so
this source file holds no string a secret scanner would flag. A shape is a
template: literal text plus ``{<alphabet><length>}`` fields, where the alphabet
is one of :data:`ALPHABETS` (``{h40}`` is 40 lower-case hex digits).
"""

from __future__ import annotations

import random
import re
import string
from functools import cache

ALPHABETS = {
    "a": string.ascii_letters + string.digits,  # alphanumeric
    "l": string.ascii_letters,  # letters
    "x": string.ascii_lowercase + string.digits,  # lower-case alphanumeric
    "U": string.ascii_uppercase + string.digits,  # upper-case alphanumeric
    "h": "0123456789abcdef",  # lower-case hex
    "H": "0123456789ABCDEFabcdef",  # hex, either case
    "d": string.digits,
    "u": string.ascii_letters + string.digits + "_-",  # URL-safe base64
    "b": string.ascii_letters + string.digits + "+/",  # base64
    "B": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",  # bech32, upper case
}
_FIELD = re.compile(r"\{([A-Za-z])(\d+)\}")


def fill(shape: str, rng: random.Random) -> str:
    """``shape`` with each ``{<alphabet><n>}`` field replaced by n random characters.

    A field of letters or alphanumerics always gets a digit and both cases
    where it is long enough, as generated tokens do.
    """

    def field(m: re.Match[str]) -> str:
        alphabet, n = ALPHABETS[m.group(1)], int(m.group(2))
        while True:
            value = "".join(rng.choice(alphabet) for _ in range(n))
            if (
                n < 12
                or m.group(1) not in "au"
                or (any(c.isdigit() for c in value) and not value.islower() and not value.isupper())
            ):
                return value

    return _FIELD.sub(field, shape)


#: kind -> (line the token is planted in, with {t} for it; the token's shape).
#: A line with {t} left out holds the secret itself in its shape.
VENDOR_SHAPES: dict[str, tuple[str, str]] = {
    "anthropic-api-key": ("export ANTHROPIC_API_KEY_OLD={t}", "sk-ant-api03-{u93}AA"),
    "openai-api-key": ("client = OpenAI(api_key={t!r})", "sk-proj-{a40}T3BlbkFJ{a40}"),
    "google-api-key": ("https://maps.example/api?k={t}", "AIzaSy{u33}"),
    "stripe-key": ("stripe.api_key = '{t}'", "sk_live_{a24}"),
    "slack-webhook": ("curl -X POST {t}", "https://hooks.slack.com/services/T{U8}/B{U10}/{a24}"),
    "slack-token": ("SLACK_BOT={t}", "xoxb-{d11}-{d13}-{a24}"),
    "github-token": ("git clone https://x-access:{t}@github.com/o/r", "ghp_{a36}"),
    "aws-access-key": ("aws_access_key_id = {t}", "AKIA{U16}"),
    "jwt": ("cookie session={t}", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.{u43}"),
    "1password-secret-key": ("Secret Key: {t}", "A3-{U6}-{U11}-{U5}-{U5}-{U5}"),
    "1password-service-token": ("OP_SERVICE_ACCOUNT_TOKEN={t}", "ops_eyJ{b300}"),
    "adobe-client-secret": ("client secret {t} from the console", "p8e-{a32}"),
    "age-secret-key": ("# key file\n{t}", "AGE-SECRET-KEY-1{B58}"),
    "alibaba-access-key": ("AccessKeyId: {t}", "LTAI{a20}"),
    "artifactory-token": ("X-JFrog-Art-Api: {t}", "AKCp{a69}"),
    "artifactory-reference-token": ("jfrog rt ping --access-token {t}", "cmVmd{a59}"),
    "atlassian-api-token": ("curl -u me@example.com:{t} https://x.atlassian.net", "ATATT3{u186}"),
    "authress-key": (
        "AUTHRESS_KEY={t}",
        "sc_{x10}.{x5}.acc_{x20}.{u60}",
    ),
    "azure-storage-key": (
        "DefaultEndpointsProtocol=https;AccountName=app;AccountKey={t};EndpointSuffix=core",
        "{b86}==",
    ),
    "clickhouse-api-key": ("key secret: {t}", "4b1d{a38}"),
    "clojars-token": ("CLOJARS_PASSWORD {t}", "CLOJARS_{x60}"),
    "cloudflare-origin-ca-key": ("origin ca: {t}", "v1.0-{h24}-{h146}"),
    "databricks-token": ("databricks configure --token {t}", "dapi{h32}"),
    "digitalocean-token": ("doctl auth init -t {t}", "dop_v1_{h64}"),
    "discord-bot-token": ("client.run('{t}')", "MT{a24}.{u6}.{u38}"),
    "docker-hub-token": ("echo {t} | docker login -u me --password-stdin", "dckr_pat_{u27}"),
    "doppler-token": ("DOPPLER_TOKEN={t}", "dp.pt.{a43}"),
    "duffel-token": ("Duffel key {t}", "duffel_test_{u43}"),
    "dynatrace-token": ("Api-Token {t}", "dt0c01.{U24}.{U64}"),
    "easypost-token": ("EasyPost::Client.new(api_key: '{t}')", "EZAK{a54}"),
    "facebook-access-token": ("graph.facebook.com/me?access_token={t}", "EAAC{a120}"),
    "figma-token": ("X-Figma-Token: {t}", "figd_{u40}"),
    "flutterwave-key": ("FLW_SECRET={t}", "FLWSECK_TEST-{h32}-X"),
    "flyio-token": ("fly deploy --access-token {t}", "fo1_{u43}"),
    "flyio-macaroon": ("FLY_API_TOKEN={t}", "fm2_{b150}"),
    "frameio-token": ("Bearer-less token {t} for Frame.io", "fio-u-{u64}"),
    "gitlab-token": ("git remote set-url origin https://oauth2:{t}@gitlab.com/g/p", "glpat-{u20}"),
    "gitlab-runner-registration-token": ("--registration-token {t}", "GR1348941{u20}"),
    "gitlab-session-cookie": ("Cookie: _gitlab_session={t}", "{x32}"),
    "google-oauth-token": ("client_secret: {t}", "GOCSPX-{u28}"),
    "grafana-cloud-token": ("GRAFANA_TOKEN={t}", "glc_{b80}"),
    "grafana-service-account-token": ("Authorization header uses {t}", "glsa_{a32}_{h8}"),
    "grafana-api-key": ("grafana key {t}", "eyJrIjoi{a70}"),
    "groq-api-key": ("Groq(api_key=\"{t}\")", "gsk_{a52}"),
    "harness-token": ("x-api-key: {t}", "pat.{u22}.{a24}.{a20}"),
    "heroku-api-key": ("heroku auth token: {t}", "HRKU-AA{u58}"),
    "huggingface-token": ("huggingface-cli login --token {t}", "hf_{l34}"),
    "infracost-token": ("INFRACOST_API_KEY={t}", "ico-{a32}"),
    "intra42-client-secret": ("secret {t}", "s-s4t2ud-{h64}"),
    "langsmith-api-key": ("LANGCHAIN_API_KEY={t}", "lsv2_pt_{h32}_{h10}"),
    "linear-api-key": ("Authorization: {t}", "lin_api_{a40}"),
    "mailgun-key": ("mailgun api {t}", "key-{h32}"),
    "mapbox-token": ("mapboxgl.accessToken = '{t}';", "pk.eyJ1Ijoi{u40}.{u22}"),
    "new-relic-key": ("NEW_RELIC_API_KEY={t}", "NRAK-{U27}"),
    "notion-token": ("NOTION_TOKEN={t}", "ntn_{d11}{a35}"),
    "notion-integration-secret": ("notion = Client(auth=\"{t}\")", "secret_{a43}"),
    "npm-token": ("//registry.npmjs.org/:_authToken={t}", "npm_{a36}"),
    "octopus-deploy-key": ("octo push --apiKey {t}", "API-{U26}"),
    "openshift-token": ("oc login --token={t} --server=https://api.c:6443", "sha256~{u43}"),
    "perplexity-api-key": ("PPLX key {t}", "pplx-{a48}"),
    "planetscale-token": ("PLANETSCALE_SERVICE_TOKEN={t}", "pscale_tkn_{u43}"),
    "postman-api-key": ("X-Api-Key: {t}", "PMAK-{h24}-{h34}"),
    "prefect-api-key": ("prefect cloud login -k {t}", "pnu_{a36}"),
    "pulumi-token": ("PULUMI_ACCESS_TOKEN={t}", "pul-{h40}"),
    "pypi-token": ("twine upload -u __token__ -p {t} dist/*", "pypi-AgEIcHlwaS5vcmc{u70}"),
    "readme-api-key": ("readme key {t}", "rdme_{x70}"),
    "replicate-token": ("REPLICATE_API_TOKEN={t}", "r8_{a37}"),
    "rubygems-api-key": (":rubygems_api_key: {t}", "rubygems_{h48}"),
    "scalingo-token": ("scalingo login --api-token {t}", "tk-us-{u48}"),
    "sendgrid-api-key": ("sg = SendGridAPIClient('{t}')", "SG.{u22}.{u43}"),
    "brevo-api-key": ("api-key: {t}", "xkeysib-{h64}-{a16}"),
    "sentry-org-token": ("SENTRY_AUTH_TOKEN={t}", "sntrys_eyJpYXQiO{b120}_{b43}"),
    "sentry-user-token": ("sentry-cli --auth-token {t}", "sntryu_{h64}"),
    "settlemint-token": ("SETTLEMINT_ACCESS_TOKEN={t}", "sm_pat_{a16}"),
    "shippo-token": ("ShippoToken {t}", "shippo_live_{h40}"),
    "shopify-token": ("X-Shopify-Access-Token: {t}", "shpat_{h32}"),
    "sourcegraph-token": ("SRC_ACCESS_TOKEN={t}", "sgp_{h16}_{h40}"),
    "square-token": ("SQUARE_ACCESS_TOKEN={t}", "EAAA{u60}"),
    "stripe-webhook-secret": ("endpoint secret {t}", "whsec_{a32}"),
    "supabase-token": ("supabase login --token {t}", "sbp_{h40}"),
    "supabase-secret-key": ("SUPABASE_SECRET_KEY={t}", "sb_secret_{u31}"),
    "tailscale-key": ("tailscale up --authkey={t}", "tskey-auth-{a12}-{a32}"),
    "twilio-key": ("twilio api key {t}", "SK{h32}"),
    "typeform-token": ("TYPEFORM_TOKEN={t}", "tfp_{u44}_{u14}"),
    "vault-token": ("VAULT_TOKEN={t} vault kv get secret/app", "hvs.{u90}"),
    "xai-api-key": ("XAI_API_KEY={t}", "xai-{a80}"),
    "yandex-api-key": ("yc key {t}", "AQVN{u36}"),
    "azure-ad-client-secret": ("AZURE_CLIENT_SECRET={t}", "{a3}8Q~{u34}"),
    "hashicorp-terraform-token": ('credentials "app.terraform.io" {{ token = "{t}" }}',
                                  "{a14}.atlasv1.{u67}"),
    "mailchimp-api-key": ("mailchimp.setConfig({{apiKey: '{t}'}})", "{h32}-us21"),
    "maxmind-license-key": ("LicenseKey {t}", "{a6}_{a29}_mmk"),
    "telegram-bot-token": ("https://api.telegram.org/bot{t}/getMe", "{d10}:AA{u33}"),
    "microsoft-teams-webhook": (
        "Invoke-RestMethod -Uri {t}",
        "https://contoso.webhook.office.com/webhookb2/{h8}-{h4}-{h4}-{h4}-{h12}@{h8}-{h4}-{h4}"
        "-{h4}-{h12}/IncomingWebhook/{h32}/{h8}-{h4}-{h4}-{h4}-{h12}",
    ),
}  # fmt: skip

#: Where the planted secret is only part of the token (the rest is not secret).
_SECRET_PART = {
    "slack-webhook": lambda token: token.rsplit("/", 1)[1],
}


@cache
def example_snippets() -> dict[str, tuple[str, str]]:
    """kind → (snippet to plant, the secret inside it), for every kind."""
    rng = random.Random(20240611)
    out: dict[str, tuple[str, str]] = {}
    body = "\n".join(fill("{b64}", rng) for _ in range(4))
    pem_kind = "RSA PRIVATE" + " KEY"
    out["private-key"] = (
        f"-----BEGIN {pem_kind}-----\n{body}\n-----END {pem_kind}-----",
        body.splitlines()[1],
    )
    for kind, (line, shape) in VENDOR_SHAPES.items():
        token = fill(shape, rng)
        out[kind] = (line.format(t=token), _SECRET_PART.get(kind, lambda t: t)(token))
    url_pass = fill("Fake{a12}!", rng)
    out["url-password"] = (f"postgres://app:{url_pass}@db.internal:5432/prod", url_pass)
    aws_secret = fill("{b40}", rng)
    out["aws-secret-key"] = ("aws_secret_" + f"access_key = {aws_secret}", aws_secret)
    header_token = fill("{a32}", rng)
    out["authorization-header"] = (f"Authorization: Basic {header_token}", header_token)
    bearer = fill("{l40}", rng)
    out["bearer-token"] = (f"curl -H 'X-Auth: Bearer {bearer}'", bearer)
    password = "Hunter2-" + fill("{a10}", rng)
    out["secret-assignment"] = ('"pass' + f'word": "{password}"', password)
    entropy = fill("{a32}", rng)
    out["high-entropy-secret"] = (f"SIGNING_KEY_V2 = '{entropy}'", entropy)
    cli = fill("{l14}", rng)
    out["command-line-secret"] = (f"vault login --password {cli} -method=userpass", cli)
    phrase = fill("{l8}", rng) + "!" + fill("{d3}", rng)
    out["secret-phrase"] = (f"The wifi password is {phrase} by the way.", phrase)
    return out
