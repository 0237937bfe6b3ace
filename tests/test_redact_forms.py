"""Secrets known by where they stand: options on a command line, ``key: value``,
letters-only passwords, bearer tokens, and secrets said in prose."""

from __future__ import annotations

import random

import pytest

from backscroll.redact import Redactor
from backscroll.redact.examples import fill

REDACTOR = Redactor()
_RNG = random.Random(13)
#: A letters-only secret and one with digits and symbols, generated.
L = fill("{l24}", _RNG)
P = fill("{a10}", _RNG) + "!" + fill("{d3}", _RNG)
W = "sunshine"  # a dictionary word used as a password
DJANGO = "django-insecure-7l$x#k9!w@5b(3z_q^m+e&r*t2y8u0i1o4p6a"  # Django's generated key shape

# (kind, text, secret)
REDACTED = [
    # command-line options
    ("command-line-secret", f"mytool --token {L} --verbose", L),
    ("command-line-secret", f"mytool --token={W}", W),
    ("command-line-secret", f"deploy --api-key {L}", L),
    ("command-line-secret", f'login --password "{W} two"', f"{W} two"),
    ("command-line-secret", f"app --client-secret '{P}'", P),
    ("command-line-secret", f"svc --auth-token {L} && echo done", L),
    ("command-line-secret", f"mysql -u root -p{W} app_db", W),
    ("command-line-secret", f"mysqldump --single-transaction -uroot -p'{P}' shop", P),
    ("command-line-secret", f"mariadb -h db -p{L}", L),
    ("command-line-secret", f"redis-cli -h cache -a {W} ping", W),
    ("command-line-secret", f"sshpass -p {W} ssh deploy@host", W),
    ("command-line-secret", f"docker login -u me -p {L} registry.example.com", L),
    ("command-line-secret", f"curl -u admin:{W} https://api.example.com/", W),
    ("command-line-secret", f"curl --user 'admin:{P}' https://api.example.com/", P),
    # key: value and key = value, letters only
    ("secret-assignment", f"password={W}", W),
    ("secret-assignment", f"password = {W}", W),
    ("secret-assignment", f"  password: {W}\n  user: app", W),
    ("secret-assignment", f"DB_PASS={W}", W),
    ("secret-assignment", f"DB_PASSWORD: {W}", W),
    ("secret-assignment", f"Server=db;User Id=app;Password={W};Pooling=true", W),
    ("secret-assignment", f"jdbc:postgresql://db/app?user=app&password={W}&ssl=true", W),
    ("secret-assignment", f"API_KEY: {L}", L),
    ("secret-assignment", f"SECRET_TOKEN: {W}", W),
    ("high-entropy-secret", f"SECRET_TOKEN: {L}", L),
    ("secret-assignment", f'"password": "{W}"', W),
    # "key" names a credential after secret, encryption, signing, master and app too
    ("secret-assignment", f"SECRET_KEY={W}", W),
    ("secret-assignment", f"export JWT_SECRET_KEY={W}", W),
    ("secret-assignment", f"secret_key: {P}", P),
    ("secret-assignment", f'"secretKey": "{W}"', W),
    ("secret-assignment", f"app.config['SECRET_KEY'] = '{P}'", P),
    ("secret-assignment", f"ENCRYPTION_KEY={W}", W),
    ("secret-assignment", f"SIGNING_KEY={W}", W),
    ("secret-assignment", f"MASTER_KEY={W}", W),
    ("secret-assignment", f"APP_KEY=base64:{L}", f"base64:{L}"),
    ("secret-assignment", f"SECRET_KEY = '{DJANGO}'", DJANGO),
    ("high-entropy-secret", f"api_key: {L}", L),
    ("high-entropy-secret", f"x-api-key: {L}", L),
    ("high-entropy-secret", f"session_token = {L}", L),
    # authorization headers and bearer tokens without digits
    ("authorization-header", f"Authorization: Bearer {L}", L),
    ("bearer-token", f"-H 'X-Upstream: Bearer {L}'", L),
    ("bearer-token", f"send it as Bearer {L}.", L),
    # prose
    ("secret-phrase", f"The password is {P} for now.", P),
    ("secret-phrase", f"my password was `{W}`", W),
    ("secret-phrase", f"The password for admin is {P}", P),
    ("secret-phrase", f'set the password to "{W}" and restart', W),
    ("secret-phrase", f"the API token is {L}", L),
    ("secret-phrase", f"my password is: {P}", P),
    ("secret-phrase", f'the password was: "{W}"', W),
    ("secret-phrase", f"The password for admin is: {P}", P),
    ("secret-phrase", f"machine api.example.com login me@example.com password {W}", W),
    ("secret-phrase", f"machine db\n  login app\n  password {P}\n", P),
    ("secret-phrase", f"login app password {W}", W),
    ("secret-phrase", f"default\nlogin anonymous\npassword {W}", W),
]


@pytest.mark.parametrize(("kind", "text", "secret"), REDACTED)
def test_secret_by_its_place_is_redacted(kind: str, text: str, secret: str) -> None:
    out = REDACTOR.redact(text)
    assert secret not in out, out
    assert f"[REDACTED:{kind}]" in out, out
    assert REDACTOR.redact(out) == out


def test_command_line_keeps_the_option_and_the_rest() -> None:
    out = REDACTOR.redact(f"mytool --token {L} --verbose")
    assert out == "mytool --token [REDACTED:command-line-secret] --verbose"
    out = REDACTOR.redact(f"mysql -u root -p{W} app_db")
    assert out == "mysql -u root -p[REDACTED:command-line-secret] app_db"
    out = REDACTOR.redact(f"curl -u admin:{W} https://api.example.com/")
    assert out == "curl -u admin:[REDACTED:command-line-secret] https://api.example.com/"


def test_letters_only_password_keeps_its_name() -> None:
    assert REDACTOR.redact(f"password={W}") == "password=[REDACTED:secret-assignment]"


KEPT = [
    # options that are not secrets, or name a file or a variable
    "mytool --token-file ~/.config/tool/token --verbose",
    "docker login --password-stdin < pass.txt",
    "sort --key 2 data.txt; gpg --key ABCD1234",
    "mkdir -p build/out && ssh -p 2222 host && git commit -pm 'wip'",
    "mytool --password $DB_PASSWORD --private-key ~/.ssh/id_ed25519",
    "mytool --token <your-token> --secret ${SECRET}",
    "The auth-token header is optional; the pass-through option too.",
    "curl -u $USER:$PASS https://x and curl -u admin https://y",
    "cc -pthread -o app main.c",
    # code: variables, attributes, types
    "login(user, password=password)\npassword = args.password\ntoken = self._token",
    "def connect(password: str, token: str = None) -> None:",
    "@dataclass\nclass Creds:\n    password: str\n    api_key: Optional[str]\n",
    "password = getpass.getpass()\nsecret = os.environ['SECRET']",
    "password: hashedPassword,\ntoken: userToken,\nsecret: SecretStr",
    "password=new_password; pwd=os.getcwd()",
    "PWD=/home/dev/project\nOLDPWD=/home/dev",
    "cd $(pwd) && echo $PWD",
    # prose
    "The password: rotated weekly by the ops team.",
    "The password is required. The token is valid for an hour.",
    "The key to a fast index is batching; the secret is to avoid fsync.",
    "the password is at least twelve characters long",
    "The password is: required, and the token is: optional.",
    "what the key is: a tuple of the session and the turn",
    "The token is a JWT signed with the server key.",
    "Bearer tokens are sent in the Authorization header.",
    "Authorization: Bearer YOUR_ACCESS_TOKEN",
    "Use Bearer authentication for the internal endpoints.",
    "api_key: AutoTokenizerFactoryBuilder",
    "SECRET_KEY = os.environ['SECRET_KEY']\nsigning_key = load_key(path)",
    "the keyboard shortcut; a monkey key; primary_key=True; sort_key=len",
    "Reset the password hunter first, then log in.",
    # 'login' in prose is not a .netrc entry
    "Create a login form component with email and password fields",
    "The login screen asks for email and password before anything else.",
    "login page: username and password inputs, then a submit button",
]


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_text_and_code_around_secret_words_is_kept(text: str) -> None:
    assert REDACTOR.redact(text) == text


def test_environment_variable_secret_of_any_length_is_redacted() -> None:
    assert REDACTOR.redact("DB_PASS=abc") == "DB_PASS=[REDACTED:secret-assignment]"


@pytest.mark.parametrize(
    "text",
    [
        "userid = passwd = acct = ''",
        "self.user, self.password = user, password",
        "ERRORTOKEN = 59\nOP = token.OP\nERRORTOKEN = token.ERRORTOKEN",
    ],
)
def test_code_assignments_between_variables_are_kept(text: str) -> None:
    assert REDACTOR.redact(text) == text


# (text, the same text with its secrets redacted): & ; ( ) { } < > [ ] inside a value.
WHOLE = [
    ("password: Tr0ub&4dor3xyz", "password: [REDACTED:secret-assignment]"),
    ("password=Tr0ub4dor&3", "password=[REDACTED:secret-assignment]"),
    ("DB_PASSWORD=s3cr3t;DROP42x", "DB_PASSWORD=[REDACTED:secret-assignment]"),
    ("secret: Qw3rty{42}Zz", "secret: [REDACTED:secret-assignment]"),
    ("db.password=hunter(22)zz", "db.password=[REDACTED:secret-assignment]"),
    ("API_KEY: ab[12]<cd>xy", "API_KEY: [REDACTED:secret-assignment]"),
    ("login(password=Tr0ub4dor&3)", "login(password=[REDACTED:secret-assignment])"),
    ("password: ab&1 user: app", "password: [REDACTED:secret-assignment] user: app"),
    (f"password: {W} user: app", "password: [REDACTED:secret-assignment] user: app"),
    # ; and & still end a value before the next pair or a statement
    ("q?password=hunter2&user=x", "q?password=[REDACTED:secret-assignment]&user=x"),
    ("q?password=hunter2&amp;user=x", "q?password=[REDACTED:secret-assignment]&amp;user=x"),
    (
        f"Password={W};User Id=app;Pooling=true",
        "Password=[REDACTED:secret-assignment];User Id=app;Pooling=true",
    ),
    ("DB_PASS=hunter2 && make", "DB_PASS=[REDACTED:secret-assignment] && make"),
    ("DB_PASS=hunter2; make", "DB_PASS=[REDACTED:secret-assignment]; make"),
]


@pytest.mark.parametrize(("text", "redacted"), WHOLE)
def test_value_with_brackets_ampersands_or_semicolons_is_redacted_whole(
    text: str, redacted: str
) -> None:
    assert REDACTOR.redact(text) == redacted


def test_the_reported_line_of_passwords_loses_every_one_whole() -> None:
    text = (
        "glorbnax creds: password: Tr0ub&4dor3xyz DB_PASSWORD=s3cr3t;DROP42x "
        "secret: Qw3rty{42}Zz db.password=hunter(22)zz"
    )
    out = REDACTOR.redact(text)
    for piece in ("Tr0ub", "4dor3xyz", "s3cr3t", "DROP42x", "Qw3rty", "42}Zz", "hunter", "zz"):
        assert piece not in out.replace("glorbnax", ""), out
    assert out.count("[REDACTED:secret-assignment]") == 4, out


@pytest.mark.parametrize(
    "text",
    [
        'password=os.environ["X"]',
        "if (password) {\n  login(password);\n}",
        "token: Dict[str, int]",
        "secret={config.secret}",
        "password=$(cat f);",
        "password = get_password()",
        "password = getpass.getpass();",
        "token = base64.b64encode(digest).decode('utf-8')",
        "token: Promise<string>;\nsecret: Array<Secret>",
        "fn login(password: &str, token: &mut String) -> Result<()>",
        "secret: [u8; 32],\ntoken: Option<Box<str>>,",
        "secret: Vec<u8>,\npassword: HashMap<String, String>,",
        "secret = f'arn:aws:secretsmanager:{region}:secret:app/{self.id}/params'",
        '"pattern": "^arn:aws:secretsmanager:secret:ecr\\\\/[a-zA-Z0-9\\\\/_+=.@-]+$"',
        "password=args.password&&login",
        "API_KEY=load_key(path)\nPASSWORD=read_secret(name)",
        "password = derive(22)",
    ],
)
def test_code_with_brackets_ampersands_or_semicolons_after_secret_names_is_kept(
    text: str,
) -> None:
    assert REDACTOR.redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "password=john.doe;2024!",
        "password: co.rrect;horse9",
        "PASSWORD: x.y;Zz99!!",
        "token=a1b2.c3d4;e5f6",
        "db.password=s3cr3t.x;Yz9",
        "password=aB3;cD.eF5gH",
        "password=Xy7;Zq(1)",
        "password=Summer2024;Fall.",
    ],
)
def test_a_password_shaped_like_code_around_a_semicolon_is_redacted_whole(text: str) -> None:
    """A dotted head or a statement-like tail does not make a value code: these
    came out whole, or with their tail, while ';' was read as ending code."""
    name, sep, value = text.partition("=") if "=" in text else text.partition(": ")
    out = REDACTOR.redact(text)
    assert out == f"{name}{sep}[REDACTED:secret-assignment]", out
    assert value not in out
