"""The team commands from the CLI: ``team init`` (the SQL, and the schema
check), config validation of ``team.*``, and the errors that name the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from backscroll import config
from backscroll.errors import ConfigError
from backscroll.team.ddl import SCHEMA_VERSION
from tests.daemon.harness import daemon_env, run_cli
from tests.team.conftest import TeamDb
from tests.team.test_daemons import team_yaml


def config_file(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return {"BACKSCROLL_CONFIG": str(path)}


def test_team_url_without_the_driver_names_the_extra_to_install(tmp_path: Path) -> None:
    env = config_file(tmp_path, "team:\n  url: postgresql://alice@127.0.0.1:1/team\n")
    probe = (
        "import sys; sys.modules['psycopg'] = None; from backscroll import cli;"
        " sys.exit(cli.main(['search', '--team', 'word']))"
    )
    done = subprocess.run([sys.executable, "-c", probe], env=daemon_env(tmp_path, env),
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 2
    assert "pip install 'backscroll[team]'" in done.stderr


def test_search_team_without_a_team_url_says_which_option_to_set(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "search", "--team", "word", env=config_file(tmp_path, "{}\n"))
    assert done.returncode == 2
    assert "team.url" in done.stderr


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://alice:hunter2@db/team", "team.password_file"),
        ("postgresql://alice@db/team?password=hunter2", "team.password_file"),
        ("postgresql://alice@db/team?sslmode=require&sslpassword=hunter2", "team.password_file"),
        ("mysql://alice@db/team", "postgresql://USER@HOST/DB"),
    ],
)
def test_a_team_url_with_a_password_or_another_scheme_is_refused(url: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config.parse({"team": {"url": url}}, "cfg.yaml")
    message = str(caught.value)
    assert "cfg.yaml: team.url" in message and says in message
    assert "hunter2" not in message


def test_publishing_with_redaction_off_is_refused_naming_both_options() -> None:
    # Only redacted text may leave the machine: with redaction off the daemon
    # would publish secrets word for word.
    with pytest.raises(ConfigError) as caught:
        config.parse(
            {"team": {"url": "postgresql://alice@db/team"}, "redaction": {"enabled": False}},
            "cfg.yaml",
        )
    message = str(caught.value)
    assert "cfg.yaml: team.url" in message and "redaction.enabled" in message
    # Redaction off without publishing stays allowed.
    assert config.parse({"redaction": {"enabled": False}}, "cfg.yaml").team.url in ("", None)


def test_an_unreachable_team_database_is_named_without_a_password(tmp_path: Path) -> None:
    pw = tmp_path / "pw"
    pw.write_text("s3cret-pass\n")
    text = f"team:\n  url: postgresql://alice@127.0.0.1:1/team\n  password_file: {pw}\n"
    done = run_cli(tmp_path, "search", "--team", "word", env=config_file(tmp_path, text))
    assert done.returncode == 2
    assert "cannot reach the team database postgresql://alice@127.0.0.1:1/team" in done.stderr
    assert "s3cret-pass" not in done.stderr + done.stdout


def test_team_init_refuses_a_member_name_that_is_not_a_plain_role(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "team", "init", "--member", "bob; DROP TABLE x")
    assert done.returncode == 2 and "--member" in done.stderr


def test_team_init_prints_sql_that_installs_the_schema_and_check_reads_it_back(
    tmp_path: Path, team_db: TeamDb
) -> None:
    import psycopg

    server = team_db.server
    server.admin("CREATE DATABASE fresh_team")
    env = config_file(
        tmp_path, team_yaml(team_db, "carol", "m-c").replace(team_db.name, "fresh_team")
    )
    # Before: no schema, and --check says what the owner runs.
    server.admin("DO $$ BEGIN CREATE ROLE carol LOGIN PASSWORD 'member-secret';"
                 " EXCEPTION WHEN duplicate_object THEN NULL; END $$")  # fmt: skip
    before = run_cli(tmp_path, "team", "init", "--check", env=env)
    assert before.returncode == 1 and "team init" in before.stdout
    printed = run_cli(tmp_path, "team", "init", "--member", "carol")
    assert printed.returncode == 0
    with psycopg.connect(server.admin_dsn("fresh_team"), autocommit=True) as conn:
        conn.execute(printed.stdout)  # type: ignore[arg-type, unused-ignore]
        conn.execute(printed.stdout)  # type: ignore[arg-type, unused-ignore]  # a second run changes nothing
    after = run_cli(tmp_path, "team", "init", "--check", env=env)
    assert after.returncode == 0, after.stderr
    assert f"schema version {SCHEMA_VERSION} (current), connected as carol" in after.stdout
    # A schema from a newer backscroll is named as such.
    with psycopg.connect(server.admin_dsn("fresh_team"), autocommit=True) as conn:
        conn.execute("UPDATE backscroll.meta SET value = '99' WHERE key = 'schema_version'")
    newer = run_cli(tmp_path, "team", "init", "--check", env=env)
    assert newer.returncode == 1 and "upgrade backscroll" in newer.stdout


def test_the_example_config_documents_the_team_options() -> None:
    example = Path(__file__).resolve().parents[2] / "config.example.yaml"
    team = yaml.safe_load(example.read_text())["team"]
    assert set(team) == {f.split(".")[1] for f in config.field_paths() if f.startswith("team.")}
    assert config.parse({"team": team}, "example").team == config.TeamConfig()


def test_doctor_checks_the_team_database(tmp_path: Path, team_db: TeamDb) -> None:
    import json

    env = config_file(tmp_path, team_yaml(team_db, "alice", "m-doctor"))
    done = run_cli(tmp_path, "doctor", "--json", env=env)
    team = [f for f in json.loads(done.stdout)["findings"] if f["check"] == "team"]
    assert team and team[0]["status"] == "ok", team
    assert "connected as alice, machine id m-doctor" in team[0]["detail"]
    down = config_file(tmp_path, "team:\n  url: postgresql://alice@127.0.0.1:1/team\n")
    done = run_cli(tmp_path, "doctor", "--json", env=down)
    team = [f for f in json.loads(done.stdout)["findings"] if f["check"] == "team"]
    assert team[0]["status"] == "fail" and "cannot reach" in team[0]["detail"]
    assert done.returncode != 0


def test_search_team_without_a_team_url_says_no_team_database_is_configured(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from backscroll import cli

    assert cli.main(["search", "--team", "anything"]) == 2
    err = capsys.readouterr().err
    assert "no team database configured; set team.url" in err
    assert "driver is not installed" not in err


def test_a_role_that_is_not_a_member_is_told_the_fix_by_check_doctor_and_search(
    tmp_path: Path, team_db: TeamDb
) -> None:
    import json

    from tests.team.pgserver import PASSWORD

    team_db.server.admin(
        "DO $$ BEGIN CREATE ROLE dave LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$"
    )
    team_db.server.admin(f"ALTER ROLE dave PASSWORD '{PASSWORD}'")
    env = config_file(tmp_path, team_yaml(team_db, "dave", "m-dave"))
    fix = "backscroll team init --member NAME"
    check = run_cli(tmp_path, "team", "init", "--check", env=env)
    assert check.returncode != 0 and "permission" in check.stderr and fix in check.stderr
    assert "unexpected error" not in check.stderr
    doctor = run_cli(tmp_path, "doctor", "--json", env=env)
    findings = json.loads(doctor.stdout)["findings"]
    team = [f for f in findings if f["check"] == "team"]
    assert team[0]["status"] == "fail" and fix in team[0]["detail"], team
    assert len(findings) > 1  # every other check still ran
    search = run_cli(tmp_path, "search", "--team", "word", env=env)
    assert search.returncode != 0 and fix in search.stderr
