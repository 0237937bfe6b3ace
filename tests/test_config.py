"""config.example.yaml, validation that reports every problem at once, env overrides,
and ``backscroll config check|show``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from backscroll import cli, config
from backscroll.config import Config, HostConfig
from backscroll.errors import ConfigError
from backscroll.readers import READERS

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "config.example.yaml"
HOSTS = tuple(r.host for r in READERS)


def dotted_keys(data: dict[str, Any], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for key, value in data.items():
        name = f"{prefix}{key}"
        if prefix == "hosts.":
            name = "hosts.<host>"
        if isinstance(value, dict) and value and key != "patterns":
            out |= dotted_keys(value, name + ".")
        else:
            out.add(name)
    return out


def test_example_config_documents_every_option() -> None:
    data = yaml.safe_load(EXAMPLE.read_text())
    assert dotted_keys(data) == set(config.field_paths())


def test_example_config_parses_to_the_defaults() -> None:
    cfg = config.parse(yaml.safe_load(EXAMPLE.read_text()), str(EXAMPLE), known_hosts=HOSTS)
    defaults = Config()
    for name in ("data_dir", "socket", "log_level", "index", "redaction", "limits", "server",
                 "exclude"):  # fmt: skip
        assert getattr(cfg, name) == getattr(defaults, name), name
    assert cfg.hosts and all(hc == HostConfig() for hc in cfg.hosts.values())


def test_example_config_says_why_above_every_option() -> None:
    lines = EXAMPLE.read_text().splitlines()
    leaves = [(i, m) for i, line in enumerate(lines)
              if (m := re.match(r"^\s*([\w-]+):\s*\S", line))]  # fmt: skip
    assert len(leaves) == len(config.field_paths())
    for i, m in leaves:
        assert lines[i - 1].strip().startswith("#"), f"{m.group(1)} (line {i + 1}) is not explained"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_every_problem_is_reported_together_with_file_key_and_fix(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
log_levle: debug
index:
  debounce_ms: soon
  on_delete: purge
  project_roots: 7
limits:
  max_hits: -3
hosts:
  claude-cod:
    enabled: yes-please
  codex:
    colour: blue
redaction:
  patterns:
    broken: "([a-z"
""",
    )
    with pytest.raises(ConfigError) as caught:
        config.load(path, known_hosts=HOSTS)
    problems = caught.value.problems
    expected = {
        "log_levle": "did you mean `log_level`?",
        "index.debounce_ms": "write a whole number",  # (there are no quotes to leave out)
        "index.on_delete": "use one of them",
        "index.project_roots": "write a YAML list",
        "limits.max_hits": "use a number above 0",
        "hosts.claude-cod:": "did you mean `claude-code`?",
        "hosts.claude-cod.enabled": "write true or false",
        "hosts.codex.colour": "unknown option",
        "redaction.patterns.broken": "fix the regular expression",
    }
    assert len(problems) == len(expected), problems
    for key, fix in expected.items():
        match = [p for p in problems if f": {key}" in p]
        assert match, f"no problem names {key}: {problems}"
        assert match[0].startswith(f"{path}: "), match[0]
        assert fix in match[0], match[0]


def test_a_bad_redaction_pattern_is_a_config_error_naming_it(tmp_path: Path) -> None:
    path = write(tmp_path, "redaction:\n  patterns:\n    ticket: 'TICKET-(\\d+'\n")
    with pytest.raises(ConfigError, match=r"redaction\.patterns\.ticket: the pattern does not"):
        config.load(path)


def test_unreadable_yaml_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "index: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        config.load(path)


def test_a_yaml_error_says_where_without_quoting_the_file(tmp_path: Path) -> None:
    # PyYAML quotes the lines around an error: here, a password in team.url.
    path = write(tmp_path, 'team:\n  url: "postgresql://alice:S3cretPassw0rd@db.example/team\n')
    with pytest.raises(ConfigError) as raised:
        config.load(path)
    text = str(raised.value)
    assert text.startswith(f"{path}: not valid YAML at line 3, column 1: ")
    assert "while scanning a quoted scalar at line 2" in text and text.endswith(
        "fix the syntax there"
    )
    assert "S3cret" not in text and "postgresql" not in text


def test_env_overrides_beat_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "data_dir: ~/from-file\nsocket: ~/from-file.sock\nlog_level: error\n")
    monkeypatch.setenv("BACKSCROLL_CONFIG", str(path))
    cfg = config.load()
    assert cfg.source == str(path)
    assert cfg.data_path() == tmp_path / "data"  # BACKSCROLL_HOME from the test fixture
    monkeypatch.delenv("BACKSCROLL_HOME")
    assert cfg.data_path() == Path.home() / "from-file"
    assert cfg.socket_path() == Path.home() / "from-file.sock"
    monkeypatch.setenv("BACKSCROLL_SOCKET", str(tmp_path / "s.sock"))
    assert cfg.socket_path() == tmp_path / "s.sock"
    assert cfg.effective_log_level() == "error"
    monkeypatch.setenv("BACKSCROLL_LOG_LEVEL", "DEBUG")
    cfg = config.load()
    assert cfg.log_level == "debug" and cfg.effective_log_level() == "debug"


def test_a_bad_log_level_in_the_environment_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BACKSCROLL_LOG_LEVEL", "loud")
    with pytest.raises(ConfigError, match=r"\$BACKSCROLL_LOG_LEVEL: 'loud' is not one of"):
        config.load()


def test_a_missing_explicit_config_file_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BACKSCROLL_CONFIG", str(tmp_path / "nope.yaml"))
    with pytest.raises(ConfigError, match="no such config file"):
        config.load()
    monkeypatch.delenv("BACKSCROLL_CONFIG")
    assert config.load().source is None  # the default location may be absent


def test_config_check_says_ok_for_a_good_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "hosts:\n  codex:\n    enabled: false\n")
    assert cli.main(["config", "check", str(path)]) == 0
    assert capsys.readouterr().out.strip() == f"ok: {path}"
    assert cli.main(["config", "check", str(EXAMPLE)]) == 0


def test_config_check_lists_every_problem_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "hosts:\n  nosuchhost: {}\nindex:\n  rescan_minutes: often\n")
    assert cli.main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("2 problems:")
    assert f"{path}: hosts.nosuchhost: unknown option" in err
    assert f"{path}: index.rescan_minutes: expected a whole number" in err


def test_config_show_prints_the_effective_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "limits:\n  max_hits: 25\n")
    monkeypatch.setenv("BACKSCROLL_CONFIG", str(path))
    assert cli.main(["config", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["limits"]["max_hits"] == 25
    assert shown["effective"]["db"] == str(tmp_path / "data" / "index.db")
    assert shown["effective"]["source"] == str(path)
    assert cli.main(["config", "show"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["limits"]["max_hits"] == 25


def test_ui_port_beyond_the_tcp_range_is_an_error_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("ui:\n  port: 70000\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        config.load(path)
    assert f"{path}: ui.port: 70000 is not a TCP port" in str(err.value)


def test_config_check_rejects_zero_sizes_and_intervals_naming_file_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "index:\n  max_line_bytes: 0\n  rescan_minutes: 0\n  debounce_ms: 0\n"
                 "limits:\n  max_hits: -3\nui:\n  port: 0\n")  # fmt: skip
    assert cli.main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("3 problems:")
    assert f"{path}: index.max_line_bytes: 0 makes no sense here" in err
    assert f"{path}: index.rescan_minutes: 0 makes no sense here" in err
    assert (
        f"{path}: limits.max_hits: expected a whole number > 0, got -3; use a number above 0" in err
    )
    assert "debounce_ms" not in err and "ui.port" not in err  # 0 means something there


def test_a_key_given_twice_is_an_error_naming_the_key_and_both_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "limits:\n  max_hits: 5\n  max_turn_chars: 100\n  max_hits: 50\n"
                 "log_level: info\nlog_level: debug\n")  # fmt: skip
    assert cli.main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: line 4: the key 'max_hits' is given twice (first on line 2)" in err
    assert f"{path}: line 6: the key 'log_level' is given twice (first on line 5)" in err
    assert err.startswith("2 problems:")
    both = write(tmp_path, "limits:\n  max_hits: 5\n  max_hits: 6\nindex:\n  rescan_minutes: 0\n")
    assert cli.main(["config", "check", str(both)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("2 problems:"), err  # (the other problems are not hidden)
    assert "given twice" in err and "index.rescan_minutes: 0 makes no sense here" in err
    merged = write(tmp_path, "base: &b {max_hits: 5}\n")  # anchors alone are not duplicates
    with pytest.raises(ConfigError, match="base: unknown option"):
        config.load(merged)


def test_config_check_names_the_fix_for_each_kind_of_bad_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "limits:\n  max_hits: 5000\n  max_turn_chars: -5\n"
                 "  max_total_chars: 2.5\nindex:\n  debounce_ms: '100'\n")  # fmt: skip
    assert cli.main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    # A search asks for at most 1000 hits: more passed the check, then failed every search.
    assert f"{path}: limits.max_hits: 5000 is more than the 1000 allowed; use 1000 or less" in err
    # (0 is refused for this key too: the fix must not offer it)
    assert "limits.max_turn_chars: expected a whole number > 0, got -5; use a number above 0" in err
    assert (
        "limits.max_total_chars: expected a whole number > 0, got 2.5; leave out the fraction"
        in err
    )
    assert (
        "index.debounce_ms: expected a whole number ≥ 0, got '100'; write it without quotes" in err
    )
    assert cli.main(["config", "check", str(write(tmp_path, "limits:\n  max_hits: 1000\n"))]) == 0


def test_a_fifo_or_a_device_in_the_configs_place_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)  # (opened blocking, this waited for a writer for ever)
    with pytest.raises(ConfigError, match="not a regular file"):
        config.load(fifo)
    zero = tmp_path / "zero.yaml"
    zero.symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="not a regular file"):
        config.load(zero)
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * config.MAX_CONFIG_BYTES + "\n")
    with pytest.raises(ConfigError, match="too large for a config file"):
        config.load(big)


@pytest.mark.parametrize(
    ("patterns", "key", "fix"),
    [
        ('    empty: "x*"\n', "redaction.patterns.empty", "make it require at least one character"),
        (
            '    "bad]name": "abc"\n',
            "redaction.patterns.bad]name",
            "use letters, digits, '-', '_' or '.'",
        ),
    ],
)
def test_config_check_refuses_a_redaction_pattern_the_redactor_would_refuse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], patterns: str, key: str, fix: str
) -> None:
    """Found when the config is loaded, not by the first index pass after it."""
    path = write(tmp_path, "redaction:\n  patterns:\n" + patterns)
    assert cli.main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {key}: " in err and fix in err, err
    with pytest.raises(ConfigError, match=re.escape(key)):
        config.load(path)


def test_loading_a_config_with_redaction_patterns_does_not_import_the_redactor(
    tmp_path: Path,
) -> None:
    """Checking the user's patterns must not cost the default patterns' compiling."""
    path = write(tmp_path, "redaction:\n  patterns:\n    ticket: 'TCK-[0-9]{6}'\n")
    code = (
        "import sys; from backscroll import config; "
        f"config.load(__import__('pathlib').Path({str(path)!r})); "
        "print('backscroll.redact' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)  # fmt: skip
    assert done.stdout.split() == ["False"]


def test_nan_and_infinity_are_refused_for_every_number_naming_the_key_and_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A NaN idle timeout dropped every connection after a reload, an infinite request
    # timeout turned the slow-request guard off, and `config show --json` printed NaN.
    path = write(tmp_path, "server:\n  idle_timeout_s: .nan\n  request_timeout_s: .inf\n"
                 "index:\n  rescan_minutes: .NaN\nui:\n  port: -.inf\n")  # fmt: skip
    assert cli.main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("4 problems:"), err
    assert (
        f"{path}: server.idle_timeout_s: expected a number > 0, got .nan, which is not a "
        "finite number; write a number such as 300 (or remove the line for the default)"
    ) in err
    assert f"{path}: server.request_timeout_s: expected a number > 0, got .inf," in err
    assert "such as 10 (" in err
    assert f"{path}: index.rescan_minutes: expected a whole number > 0, got .nan," in err
    assert f"{path}: ui.port: expected a whole number ≥ 0, got -.inf," in err
    assert "fraction" not in err
    monkeypatch.setenv("BACKSCROLL_CONFIG", str(path))
    assert cli.main(["config", "show", "--json"]) == 2
    assert "NaN" not in capsys.readouterr().out


def test_a_number_yaml_reads_as_text_gets_the_fix_for_how_it_was_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # YAML 1.1 reads 1e9 as text: there are no quotes to leave out.
    path = write(tmp_path, "limits:\n  max_hits: 1e2\n  max_turn_chars: '800'\n"
                 "team:\n  interval_s: 5e-1\n  timeout_s: often\n")  # fmt: skip
    assert cli.main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert (
        f"{path}: limits.max_hits: expected a whole number > 0, got '1e2'; YAML reads '1e2' "
        "as text, not a number; write it in digits: 100"
    ) in err
    assert "limits.max_turn_chars: expected a whole number > 0, got '800'; write it without " \
        "quotes" in err  # fmt: skip
    assert "team.interval_s: expected a number > 0, got '5e-1'; YAML reads '5e-1' as text, " \
        "not a number; write it as 0.5" in err  # fmt: skip
    assert "team.timeout_s: expected a number > 0, got 'often'; write a number\n" in err
    assert err.count("without quotes") == 1


def test_a_key_given_twice_on_one_line_is_an_error_naming_both_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "hosts: {codex: {enabled: true}, codex: {enabled: false}}\n")
    assert cli.main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert (
        f"{path}: line 1: the key 'codex' is given twice on this line (columns 9 and 33); "
        "keep one of them"
    ) in err
    with pytest.raises(ConfigError, match="given twice on this line"):
        config.load(write(tmp_path, "limits: {max_hits: 5, max_hits: 6}\n"))


@pytest.mark.parametrize(
    "line",
    [
        "limits:\n  max_total_chars: 1" + "0" * 400,
        "limits:\n  max_total_chars: 1" + "0" * 5000,
        "index:\n  rescan_minutes: 2000000000000",
        "index:\n  rescan_minutes: 5000000000",
        "server:\n  idle_timeout_s: 1.0e+300",
    ],
    ids=["400-digits", "5000-digits", "rescan-overflow", "rescan-past-9999", "huge-float"],
)
def test_a_number_too_large_for_any_setting_is_a_config_problem_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str
) -> None:
    """400 digits overflowed the finite check (OverflowError); 5,000 are past what
    Python reads as an int at all (ValueError from PyYAML); a rescan every 2e12
    minutes overflowed the daemon's timer, and 1e300 seconds its conversion to an
    int. Each stopped `config check`, the daemon or the MCP server."""
    path = write(tmp_path, line + "\n")
    assert cli.main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "unexpected error" not in err
    assert any(
        words in err
        for words in ("too large to be a setting", "a number too long to read", "allowed; use")
    ), err
    with pytest.raises(ConfigError):
        config.load(path)


def test_a_loaded_configuration_pickles_with_its_mappings(tmp_path: Path) -> None:
    """Reader processes started from a fork server (the daemon's) get the
    configuration pickled: its read-only ``hosts`` and ``redaction.patterns``
    mappings made that fail, and the first index read every file in-process."""
    import pickle

    path = tmp_path / "config.yaml"
    path.write_text(
        "hosts:\n  codex:\n    enabled: false\n"
        "redaction:\n  patterns:\n    ticket: 'TICKET-[0-9]+'\n"
    )
    loaded = config.load(path)
    back = pickle.loads(pickle.dumps(loaded))
    assert back == loaded
    assert not back.host("codex").enabled
    assert dict(back.redaction.patterns) == {"ticket": "TICKET-[0-9]+"}
    with pytest.raises(TypeError):
        back.redaction.patterns["other"] = "x"  # (still read-only)
