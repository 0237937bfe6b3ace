"""The systemd unit, the launchd plist, and ``backscroll service install|uninstall|status``."""

from __future__ import annotations

import configparser
import os
import plistlib
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

from backscroll import cli, service

REPO = Path(__file__).resolve().parents[1]
UNIT = REPO / "systemd" / "backscroll.service"
PLIST = REPO / "launchd" / f"{service.LABEL}.plist"
REGENERATE = (
    'python -c "from backscroll import service as s; '
    "open('systemd/backscroll.service','w').write(s.render_unit(s.template_layout('systemd'))); "
    "open('launchd/dev.backscroll.daemon.plist','w')"
    ".write(s.render_plist(s.template_layout('launchd')))\""
)


def console_script() -> str:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    (name,) = [n for n, target in scripts.items() if target == "backscroll.cli:entry"]
    return str(name)


def parse_unit(text: str) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return parser


def run_cli(*argv: str) -> int:
    return cli.main(list(argv))


@pytest.fixture
def no_manager(monkeypatch: pytest.MonkeyPatch) -> None:
    """systemctl/launchctl are never run: install prints what to run instead."""
    monkeypatch.setenv("BACKSCROLL_SERVICE_MANAGER", "none")


# --------------------------------------------------------------------------- the unit file


def test_repository_unit_and_plist_are_the_rendered_templates() -> None:
    assert UNIT.read_text() == service.render_unit(service.template_layout("systemd")), (
        f"systemd/backscroll.service is out of date; regenerate it: {REGENERATE}"
    )
    assert PLIST.read_text() == service.render_plist(service.template_layout("launchd")), (
        f"the launchd plist is out of date; regenerate it: {REGENERATE}"
    )


def test_unit_execstart_runs_the_console_script_daemon_subcommand() -> None:
    unit = parse_unit(UNIT.read_text())
    argv = shlex.split(unit["Service"]["ExecStart"])
    assert Path(argv[0]).name == console_script()
    assert argv[1:] == ["daemon"]
    assert cli.build_parser().parse_args(argv[1:]).func is cli.cmd_daemon


def test_unit_is_a_notify_user_service_with_watchdog_limits_and_hardening() -> None:
    s = parse_unit(UNIT.read_text())
    svc = s["Service"]
    assert svc["Type"] == "notify"
    assert svc["WatchdogSec"] == "60"
    assert svc["Restart"] == "on-failure"
    assert {"StartLimitIntervalSec", "StartLimitBurst"} <= set(s["Unit"])
    assert svc["MemoryHigh"] == "200M" and "MemoryMax" in svc
    assert svc["Nice"] == "10" and svc["IOSchedulingClass"] == "idle"
    assert svc["ProtectSystem"] == "strict" and svc["PrivateUsers"] == "yes"
    assert svc["RestrictAddressFamilies"] == "AF_UNIX AF_INET"
    for key in ("NoNewPrivileges", "PrivateTmp", "ProtectKernelTunables", "LockPersonality",
                "RestrictRealtime"):  # fmt: skip
        assert svc[key] == "yes", key
    assert svc["SystemCallArchitectures"] == "native"
    assert s["Install"]["WantedBy"] == "default.target"
    # Not supported in user units: systemd would ignore it.
    assert "ProtectControlGroups" not in svc
    # The data and socket directories stay writable; a missing one is not fatal.
    rw = [line.split("=", 1)[1] for line in UNIT.read_text().splitlines()
          if line.startswith("ReadWritePaths=")]  # fmt: skip
    assert "-%h/.local/share/backscroll" in rw and "-%t/backscroll" in rw
    assert "-%h/.local/share/opencode" in rw  # a host database directory (-shm files)
    # VS Code's per-workspace state.vscdb, where the chat reader finds titles (WAL).
    assert "-%h/.config/Code/User/workspaceStorage" in rw
    assert '-"%h/.config/Code - Insiders/User/workspaceStorage"' in rw


def _analyze(unit_dir: Path, home: Path) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed (.ci/run installs the systemd package)")
    runtime = home / "run"
    runtime.mkdir(exist_ok=True, mode=0o700)
    env = {**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)}
    return subprocess.run(
        [tool, "verify", "--user", str(unit_dir / service.UNIT_NAME)],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_systemd_analyze_verifies_the_template_unit(tmp_path: Path, isolated_home: Path) -> None:
    # %h is the HOME systemd-analyze sees: put an executable console script there.
    script = isolated_home / ".local" / "bin" / console_script()
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    unit_dir = tmp_path / "units"
    unit_dir.mkdir()
    shutil.copyfile(UNIT, unit_dir / service.UNIT_NAME)
    done = _analyze(unit_dir, isolated_home)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", done.stderr  # unknown keys are only warnings


def test_systemd_analyze_verifies_the_unit_install_writes(
    tmp_path: Path, isolated_home: Path, no_manager: None
) -> None:
    assert run_cli("service", "install") == 0
    written = service.service_path("systemd")
    done = _analyze(written.parent, isolated_home)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "", done.stderr


def test_a_socket_or_index_under_tmp_gets_a_unit_without_private_tmp_that_verifies(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, no_manager: None,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    # PrivateTmp=yes gave the daemon a /tmp of its own: a socket or an index under
    # /tmp was made where no client could see it.
    sock = Path(tempfile.mkdtemp(prefix="bs-", dir="/tmp")) / "backscroll.sock"
    monkeypatch.setenv("BACKSCROLL_SOCKET", str(sock))
    try:
        assert run_cli("service", "install") == 0
    finally:
        shutil.rmtree(sock.parent)
    out = capsys.readouterr().out
    written = service.service_path("systemd")
    svc = parse_unit(written.read_text())["Service"]
    assert "PrivateTmp" not in svc
    assert f"ReadWritePaths=-{sock.parent}" in written.read_text()
    assert "leaves out PrivateTmp=" in out and str(sock.parent) in out
    done = _analyze(written.parent, isolated_home)
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr
    elsewhere = service.Layout(
        program=("/usr/bin/backscroll",), data_dir="/home/u/.local/share/backscroll",
        socket_dir="/run/user/1000/backscroll",
    )  # fmt: skip
    assert parse_unit(service.render_unit(elsewhere))["Service"]["PrivateTmp"] == "yes"


def test_plist_is_a_valid_background_launch_agent() -> None:
    data = plistlib.loads(PLIST.read_bytes())
    assert data["Label"] == service.LABEL == "dev.backscroll.daemon"
    assert Path(data["ProgramArguments"][0]).name == console_script()
    assert data["ProgramArguments"][1:] == ["daemon"]
    assert data["RunAtLoad"] is True
    assert data["KeepAlive"] == {"SuccessfulExit": False}
    assert data["ProcessType"] == "Background"
    assert data["LowPriorityIO"] is True and data["Nice"] == 10
    for key in ("StandardOutPath", "StandardErrorPath"):
        assert "/Library/Logs/backscroll/" in data[key]
    assert "/usr/bin" in data["EnvironmentVariables"]["PATH"]


# --------------------------------------------------------------------------- install / uninstall


def test_dry_run_prints_the_unit_and_commands_and_writes_nothing(
    isolated_home: Path, no_manager: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli("service", "install", "--dry-run") == 0
    out = capsys.readouterr().out
    path = service.service_path("systemd")
    assert f"would write {path}" in out
    assert "Type=notify" in out
    assert "systemctl --user enable --now backscroll" in out
    assert not path.exists()
    assert not (isolated_home / ".config" / "systemd").exists()


def test_install_writes_this_installations_executable_and_prints_what_to_run(
    isolated_home: Path, no_manager: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli("service", "install") == 0
    out = capsys.readouterr().out
    path = isolated_home / ".config" / "systemd" / "user" / "backscroll.service"
    assert path.exists()
    unit = parse_unit(path.read_text())
    argv = shlex.split(unit["Service"]["ExecStart"])
    assert argv[:-1] == service.program() and argv[-1] == "daemon"
    assert Path(argv[0]).is_absolute()
    # The daemon must use the same index as the CLI that installed it.
    assert f"BACKSCROLL_HOME={os.environ['BACKSCROLL_HOME']}" in path.read_text()
    assert service.MARKER in path.read_text()
    assert "systemctl --user is not reachable here" in out
    assert "systemctl --user daemon-reload" in out
    assert "systemctl --user enable --now backscroll" in out
    assert Path(os.environ["BACKSCROLL_HOME"]).is_dir()  # ProtectSystem=strict cannot mkdir it


def test_install_under_umask_zero_writes_nothing_others_can_change(
    isolated_home: Path, no_manager: None
) -> None:
    """A unit file, or a directory above it, that others can write runs their
    commands as you: under umask 000 `mkdir -p` made them 0777 and the file 0666."""
    old = os.umask(0)
    try:
        assert run_cli("service", "install") == 0
    finally:
        os.umask(old)
    path = isolated_home / ".config" / "systemd" / "user" / "backscroll.service"
    modes = {p: p.stat().st_mode & 0o777 for p in (path, *path.parents) if p.is_relative_to(
        isolated_home) and p != isolated_home}  # fmt: skip
    assert modes[path] == 0o644
    assert all(mode & 0o022 == 0 for mode in modes.values()), modes


def test_install_honours_xdg_config_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_manager: None
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert run_cli("service", "install") == 0
    assert (tmp_path / "xdg" / "systemd" / "user" / "backscroll.service").exists()


def test_second_install_is_up_to_date_and_changes_nothing(
    no_manager: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli("service", "install") == 0
    path = service.service_path("systemd")
    before = (path.read_text(), path.stat().st_mtime_ns)
    capsys.readouterr()
    assert run_cli("service", "install") == 0
    assert "already installed, up to date" in capsys.readouterr().out
    assert (path.read_text(), path.stat().st_mtime_ns) == before


def test_install_rewrites_the_unit_when_what_it_would_write_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_manager: None,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    assert run_cli("service", "install") == 0
    monkeypatch.setenv("BACKSCROLL_HOME", str(tmp_path / "elsewhere"))
    capsys.readouterr()
    assert run_cli("service", "install") == 0
    assert "updated" in capsys.readouterr().out
    assert str(tmp_path / "elsewhere") in service.service_path("systemd").read_text()


def test_uninstall_removes_only_the_unit_install_wrote(
    no_manager: None, capsys: pytest.CaptureFixture[str]
) -> None:
    path = service.service_path("systemd")
    path.parent.mkdir(parents=True)
    path.write_text("[Service]\nExecStart=/usr/bin/true\n")  # the user's own unit
    assert run_cli("service", "uninstall") == 1
    assert "left it untouched" in capsys.readouterr().out
    assert path.read_text() == "[Service]\nExecStart=/usr/bin/true\n"
    assert run_cli("service", "install") == 1  # nor is it overwritten
    assert path.read_text() == "[Service]\nExecStart=/usr/bin/true\n"

    path.unlink()
    assert run_cli("service", "install") == 0
    assert run_cli("service", "uninstall") == 0
    assert not path.exists()
    assert run_cli("service", "uninstall") == 0  # nothing to do is not an error
    assert "not installed" in capsys.readouterr().out


def test_status_says_whether_the_unit_is_installed_and_current(
    no_manager: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli("service", "status") == 1
    assert "not installed" in capsys.readouterr().out
    run_cli("service", "install")
    capsys.readouterr()
    assert run_cli("service", "status", "--json") == 0
    import json

    st = json.loads(capsys.readouterr().out)
    assert st["installed"] and st["ours"] and st["up_to_date"]
    assert st["manager_reachable"] is False


def test_install_and_uninstall_run_systemctl_when_the_user_manager_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in systemctl on PATH that records its arguments and succeeds.
    calls = tmp_path / "calls"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "systemctl"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {shlex.quote(str(calls))}\nexit 0\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("BACKSCROLL_SERVICE_MANAGER", raising=False)

    assert run_cli("service", "install") == 0
    ran = calls.read_text().splitlines()
    assert ran == [
        "--user show-environment",
        "--user daemon-reload",
        "--user enable --now backscroll",
    ]
    calls.unlink()
    assert run_cli("service", "uninstall") == 0
    assert calls.read_text().splitlines() == [
        "--user show-environment",
        "--user disable --now backscroll",
        "--user daemon-reload",
    ]
    assert not service.service_path("systemd").exists()


def test_launchd_install_writes_a_loadable_plist_with_real_paths(
    isolated_home: Path, no_manager: None
) -> None:
    out = service.install("launchd", service.current_layout("launchd"))
    path = isolated_home / "Library" / "LaunchAgents" / "dev.backscroll.daemon.plist"
    assert out.code == 0 and out.path == path
    data = plistlib.loads(path.read_bytes())
    assert data["ProgramArguments"] == [*service.program(), "daemon"]
    assert data["StandardErrorPath"] == str(
        isolated_home / "Library" / "Logs" / "backscroll" / "backscroll.err.log"
    )
    assert (isolated_home / "Library" / "Logs" / "backscroll").is_dir()
    assert data["EnvironmentVariables"]["BACKSCROLL_HOME"] == os.environ["BACKSCROLL_HOME"]
    assert any(f"launchctl bootstrap gui/{os.getuid()} {path}" in line for line in out.lines)
    assert service.uninstall("launchd").code == 0
    assert not path.exists()


def test_program_falls_back_to_this_python_when_no_script_is_on_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(sys, "argv", ["pytest"])
    assert service.program() == [sys.executable, "-m", "backscroll"]


def test_a_dry_run_from_python_m_carries_this_install_the_xdg_dirs_and_every_database_dir(
    tmp_path: Path,
) -> None:
    """`python -m backscroll service install` names this interpreter, not whatever
    `backscroll` comes first on PATH; the XDG directories in effect and an absolute
    BACKSCROLL_CONFIG reach the unit; VS Code's workspaceStorage stays writable."""
    other = tmp_path / "otherbin"
    other.mkdir()
    (other / "backscroll").write_text("#!/bin/sh\nexit 0\n")
    (other / "backscroll").chmod(0o755)
    (tmp_path / "run").mkdir()
    env = {
        "PATH": f"{other}:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "xd"),
        "XDG_CONFIG_HOME": str(tmp_path / "xc"),
        "BACKSCROLL_CONFIG": "rel.yaml",
        "BACKSCROLL_SERVICE_MANAGER": "none",
    }
    (tmp_path / "run" / "rel.yaml").write_text("log_level: info\n")
    done = subprocess.run(
        [sys.executable, "-m", "backscroll", "service", "install", "--dry-run"],
        env=env, cwd=tmp_path / "run", capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    unit = done.stdout
    assert f"ExecStart={sys.executable} -m backscroll daemon" in unit
    assert f"Environment=XDG_DATA_HOME={tmp_path / 'xd'}" in unit
    assert f"Environment=XDG_CONFIG_HOME={tmp_path / 'xc'}" in unit
    assert f"Environment=BACKSCROLL_CONFIG={tmp_path / 'run' / 'rel.yaml'}" in unit
    assert f"ReadWritePaths=-{tmp_path / 'xc' / 'Code' / 'User' / 'workspaceStorage'}" in unit
