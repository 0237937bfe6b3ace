"""``backscroll service install|uninstall|status``: a systemd user unit or a LaunchAgent.

The unit and the plist are rendered here, from this installation's real executable
and the effective data and socket directories; ``systemd/backscroll.service`` and
``launchd/dev.backscroll.daemon.plist`` in the repository are the same renderings
with placeholder paths (a test keeps them identical). What ``install`` writes
carries a marker line, and ``uninstall`` removes a file only when it has it.

The service manager is run only when it is reachable (``systemctl --user`` answers,
or ``launchctl`` exists) and ``BACKSCROLL_SERVICE_MANAGER`` is not ``none``;
otherwise the exact commands to run are printed instead.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from backscroll.paths import make_dirs

UNIT_NAME = "backscroll.service"
LABEL = "dev.backscroll.daemon"
MARKER = "Written by `backscroll service install`"
Platform = Literal["systemd", "launchd"]

#: Environment passed on to the service when set where ``install`` runs: without it
#: the daemon would look at another index than the CLI does.
PASSED_ENV = (
    "BACKSCROLL_HOME",
    "BACKSCROLL_SOCKET",
    "BACKSCROLL_CONFIG",
    # (the index, the config and several hosts' roots follow these; a user manager
    # usually has neither, so a daemon without them would use other directories)
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
)
LAUNCHD_PATH = "/usr/local/bin:/opt/homebrew/bin:/usr/bin:/bin:/usr/sbin:/sbin"

Runner = Callable[[Sequence[str]], int]


def _run(argv: Sequence[str]) -> int:
    try:
        return subprocess.run(list(argv), check=False, timeout=60).returncode
    except (OSError, subprocess.TimeoutExpired):
        return 127


def _quiet(argv: Sequence[str]) -> int:
    try:
        return subprocess.run(list(argv), check=False, timeout=10, capture_output=True).returncode
    except (OSError, subprocess.TimeoutExpired):
        return 127


# --------------------------------------------------------------------------- what to run


def program() -> list[str]:
    """This installation's command line for ``backscroll`` (without ``daemon``):
    the console script that runs, ``python -m backscroll`` when run so (not
    whatever ``backscroll`` comes first on PATH), else the one on PATH."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "backscroll" and argv0.is_file():
        return [os.path.abspath(argv0)]
    if argv0 is not None and argv0.name == "__main__.py" and argv0.parent.name == "backscroll":
        return [sys.executable, "-m", "backscroll"]
    found = shutil.which("backscroll")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "backscroll"]


@dataclass(frozen=True)
class Layout:
    """Everything a rendering depends on."""

    program: tuple[str, ...]
    data_dir: str
    socket_dir: str
    #: Host directories holding SQLite databases (reading one in WAL mode creates
    #: its ``-shm`` file, so they must stay writable under ``ProtectSystem=strict``).
    database_roots: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()
    home: str = "~"
    marker: bool = True
    #: The daemon's paths (data, socket, config) under /tmp or /var/tmp: there
    #: PrivateTmp= would give the daemon a /tmp of its own, hidden from its clients.
    in_tmp: tuple[str, ...] = ()


def template_layout(platform: Platform) -> Layout:
    """The placeholder layout of the files kept in the repository."""
    if platform == "systemd":
        return Layout(
            program=("%h/.local/bin/backscroll",),
            data_dir="%h/.local/share/backscroll",
            socket_dir="%t/backscroll",
            database_roots=_database_roots(Path("%h"), "linux", {}),
            home="%h",
            marker=False,
        )
    return Layout(
        program=("/Users/USER/.local/bin/backscroll",),
        data_dir="/Users/USER/Library/Application Support/backscroll",
        socket_dir="",
        home="/Users/USER",
        marker=False,
    )


def current_layout(platform: Platform) -> Layout:
    """This machine's layout: real executable, data and socket directories."""
    from backscroll import config as config_mod

    cfg = config_mod.load()
    home = Path(os.path.expanduser("~"))
    # (absolute: the service runs elsewhere than the directory install ran in)
    env = tuple(
        (k, os.path.abspath(os.path.expanduser(os.environ[k].strip())))
        for k in PASSED_ENV
        if os.environ.get(k, "").strip()
    )
    roots: tuple[str, ...] = ()
    if platform == "systemd":
        from backscroll.indexing.indexer import build_hosts
        from backscroll.readers.base import HostEnv

        host_env = HostEnv.current()
        roots = tuple(
            dict.fromkeys(
                str(r) for s in build_hosts(cfg) for r in s.reader.database_dirs(host_env)
            )
        )
    data_dir, socket_dir = str(cfg.data_path()), str(cfg.socket_path().parent)
    from backscroll.paths import config_path

    places = (data_dir, socket_dir, str(config_path()))
    return Layout(
        program=tuple(program()),
        data_dir=data_dir,
        socket_dir=socket_dir,
        database_roots=roots,
        environment=env,
        home=str(home),
        in_tmp=tuple(dict.fromkeys(p for p in places if under_tmp(p))),
    )


#: The directories PrivateTmp= replaces with the service's own.
PRIVATE_TMP_DIRS = ("/tmp", "/var/tmp")


def under_tmp(path: str) -> bool:
    """Whether ``path`` (as given, or with its symlinks resolved) is in /tmp or /var/tmp."""
    forms = {os.path.abspath(os.path.expanduser(path))}
    forms.add(os.path.realpath(next(iter(forms))))
    return any(f == t or f.startswith(t + "/") for f in forms for t in PRIVATE_TMP_DIRS)


def _database_roots(home: Path, platform: str, environ: dict[str, str]) -> tuple[str, ...]:
    from backscroll.readers import READERS
    from backscroll.readers.base import HostEnv

    env = HostEnv(home=home, environ=environ, platform=platform)
    found = (str(r) for rd in READERS for r in rd.database_dirs(env))
    return tuple(dict.fromkeys(found))


# --------------------------------------------------------------------------- systemd


def _sd_quote(word: str) -> str:
    """A word for ExecStart=/ReadWritePaths=: ``%`` doubled, quoted when needed."""
    word = word.replace("%", "%%") if not word.startswith(("%h", "%t")) else word
    if any(c in word for c in " \t\"'\\"):
        return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return word


def render_unit(layout: Layout) -> str:
    exec_start = " ".join(_sd_quote(w) for w in (*layout.program, "daemon"))
    head = (
        f"# {MARKER}; `backscroll service uninstall` removes it.\n"
        if layout.marker
        else "# Template: `backscroll service install` writes this with real paths to\n"
        "# ~/.config/systemd/user/backscroll.service and starts it.\n"
    )
    env_lines = "".join(f"Environment={_sd_quote(f'{k}={v}')}\n" for k, v in layout.environment)
    rw = [layout.data_dir, layout.socket_dir]
    rw_lines = "".join(f"ReadWritePaths=-{_sd_quote(p)}\n" for p in rw)
    db_lines = "".join(f"ReadWritePaths=-{_sd_quote(p)}\n" for p in layout.database_roots)
    private_tmp = "PrivateTmp=yes\n"
    if layout.in_tmp:
        private_tmp = (
            "# PrivateTmp= is left out: a /tmp of the service's own would hide these from\n"
            "# its clients: " + ", ".join(_sd_comment(p) for p in layout.in_tmp) + "\n"
        )
    return _UNIT.format(
        head=head,
        exec_start=exec_start,
        env_lines=env_lines,
        rw_lines=rw_lines,
        db_lines=db_lines,
        private_tmp=private_tmp,
    )


def _sd_comment(text: str) -> str:
    """``text`` kept on one comment line."""
    return text.replace("\n", " ").replace("\r", " ")


_UNIT = """\
{head}#
# backscroll daemon: indexes coding-agent transcripts and answers
# `backscroll search` over a private Unix socket. A per-user unit:
#   systemctl --user status backscroll     journalctl --user -u backscroll -f

[Unit]
Description=backscroll: keep every coding-agent conversation turn findable
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
# The daemon sends READY=1 once its socket is listening (the first index runs
# after that) and WATCHDOG=1 every WATCHDOG_USEC/2; see backscroll/daemon/systemd.py.
Type=notify
NotifyAccess=main
ExecStart={exec_start}
ExecReload=/bin/kill -HUP $MAINPID
{env_lines}Restart=on-failure
RestartSec=5
WatchdogSec=60
# SIGTERM lets the file being written commit or roll back whole, then the WAL
# is checkpointed; a long cold index stops between batches.
TimeoutStopSec=45

# Yield to interactive work. SCHED_BATCH, not SCHED_IDLE: under a sustained load
# SCHED_IDLE can starve the socket server and make `backscroll search` hang.
Nice=10
CPUSchedulingPolicy=batch
IOSchedulingClass=idle
# Needs the memory controller delegated to the user manager (the default with
# cgroup v2); otherwise these two are ignored.
MemoryHigh=200M
MemoryMax=400M

# Hardening. Seccomp-based settings work in any user unit (they imply
# NoNewPrivileges=yes there).
NoNewPrivileges=yes
LockPersonality=yes
RestrictRealtime=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallErrorNumber=EPERM
# AF_UNIX: the query socket and sd_notify (inotify needs no address family); AF_INET:
# the web viewer, which listens on 127.0.0.1 only and only once asked for (`backscroll ui`).
RestrictAddressFamilies=AF_UNIX AF_INET
RestrictSUIDSGID=yes
RestrictNamespaces=yes
# MemoryDenyWriteExecute= is left out: libffi closures (ctypes callbacks) need
# pages that are writable and executable.
UMask=0077

# File-system namespacing needs a user namespace in a user unit, hence
# PrivateUsers=yes (implied by newer systemd). Where unprivileged user namespaces
# are disabled (sysctl kernel.unprivileged_userns_clone=0, or AppArmor's
# kernel.apparmor_restrict_unprivileged_userns=1) the unit fails with status
# 226/NAMESPACE: turn this block off with `systemctl --user edit backscroll`
# (PrivateUsers=no, ProtectSystem=no, PrivateTmp=no, ...); `backscroll doctor`
# warns about it. ProtectControlGroups= is left out: systemd does not support it
# in user units.
PrivateUsers=yes
# The whole file system read-only except what the daemon writes: its data
# directory and socket directory, and the directories of hosts that keep
# SQLite databases (opening one read-only in WAL mode creates its -shm file).
# Transcripts anywhere under home stay readable. "-": a path that does not
# exist yet is skipped, not an error (restart after installing a new host).
ProtectSystem=strict
{rw_lines}{db_lines}RuntimeDirectory=backscroll
RuntimeDirectoryMode=0700
{private_tmp}PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectClock=yes
ProtectHostname=yes

[Install]
WantedBy=default.target
"""


# --------------------------------------------------------------------------- launchd


def render_plist(layout: Layout) -> str:
    logs = f"{layout.home}/Library/Logs/backscroll"
    env = {"PATH": LAUNCHD_PATH, **dict(layout.environment)}
    body = {
        "Label": LABEL,
        "ProgramArguments": [*layout.program, "daemon"],
        "RunAtLoad": True,
        # Restart after a crash, not after a clean stop (launchctl bootout).
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": 10,
        "ProcessType": "Background",
        "LowPriorityIO": True,
        "LowPriorityBackgroundIO": True,
        "Nice": 10,
        "ExitTimeOut": 45,
        "StandardOutPath": f"{logs}/backscroll.out.log",
        "StandardErrorPath": f"{logs}/backscroll.err.log",
        "EnvironmentVariables": env,
    }
    text = plistlib.dumps(body, sort_keys=False).decode("utf-8")
    note = (
        f"<!-- {MARKER}; `backscroll service uninstall` removes it. -->"
        if layout.marker
        else "<!-- Template: `backscroll service install` writes this with real paths to\n"
        f"     ~/Library/LaunchAgents/{LABEL}.plist and loads it. -->"
    )
    head, sep, rest = text.partition("<plist")
    return f"{head}{note}\n{sep}{rest}"


# --------------------------------------------------------------------------- install


def detect_platform() -> Platform:
    return "launchd" if sys.platform == "darwin" else "systemd"


def service_path(platform: Platform) -> Path:
    home = Path(os.path.expanduser("~"))
    if platform == "launchd":
        return home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    root = Path(os.path.expanduser(base)) if base else home / ".config"
    return root / "systemd" / "user" / UNIT_NAME


def render(platform: Platform, layout: Layout) -> str:
    return render_unit(layout) if platform == "systemd" else render_plist(layout)


def manager_reachable(platform: Platform, probe: Runner = _quiet) -> bool:
    """Whether ``systemctl --user`` / ``launchctl`` can be run here."""
    if os.environ.get("BACKSCROLL_SERVICE_MANAGER", "").lower() == "none":
        return False
    if platform == "launchd":
        return shutil.which("launchctl") is not None
    if shutil.which("systemctl") is None:
        return False
    return probe(["systemctl", "--user", "show-environment"]) == 0


def stop_hint(pid: object = None) -> str:
    """How to stop a running daemon: through its service manager when the
    service is installed, else by its pid."""
    kill = f"`kill {pid}`" if isinstance(pid, int) else "stop the `backscroll daemon` you started"
    platform = detect_platform()
    if not service_path(platform).exists():
        return kill
    manager = (
        f"launchctl bootout {_gui()}/{LABEL}"
        if platform == "launchd"
        else "systemctl --user stop backscroll"
    )
    return f"`{manager}` (or {kill} for one started by hand)"


def _gui() -> str:
    return f"gui/{os.getuid()}"


def install_commands(platform: Platform, path: Path, update: bool) -> list[list[str]]:
    if platform == "launchd":
        steps = [["launchctl", "bootstrap", _gui(), str(path)]]
        if update:
            steps.insert(0, ["launchctl", "bootout", f"{_gui()}/{LABEL}"])
        return steps
    steps = [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", "backscroll"],
    ]
    if update:
        steps.append(["systemctl", "--user", "restart", "backscroll"])
    return steps


def uninstall_commands(platform: Platform, path: Path) -> tuple[list[list[str]], list[list[str]]]:
    """Commands to run before and after the file is removed."""
    if platform == "launchd":
        return [["launchctl", "bootout", f"{_gui()}/{LABEL}"]], []
    return (
        [["systemctl", "--user", "disable", "--now", "backscroll"]],
        [["systemctl", "--user", "daemon-reload"]],
    )


@dataclass
class Outcome:
    """What a service command did (or would do), for printing and tests."""

    path: Path
    lines: list[str] = field(default_factory=list)
    code: int = 0

    def say(self, line: str) -> None:
        self.lines.append(line)


def _cmd(argv: Sequence[str]) -> str:
    return shlex.join(argv)


def is_ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def install(
    platform: Platform,
    layout: Layout,
    *,
    dry_run: bool = False,
    run: Runner = _run,
    reachable: bool | None = None,
) -> Outcome:
    path = service_path(platform)
    text = render(platform, layout)
    out = Outcome(path)
    existing = path.read_text(encoding="utf-8") if path.exists() else None
    if existing is not None and not is_ours(path):
        out.say(
            f"{path} exists and was not written by `backscroll service install`; left it "
            "untouched. Move it aside and run `backscroll service install` again."
        )
        out.code = 1
        return out
    if existing == text:
        out.say(f"already installed, up to date: {path}")
        return out
    update = existing is not None
    commands = install_commands(platform, path, update)
    live = manager_reachable(platform) if reachable is None else reachable
    if dry_run:
        out.say(f"would write {path}:")
        out.lines.extend("    " + line for line in text.splitlines())
        if platform == "systemd" and layout.in_tmp:
            out.say(_tmp_note(layout))
        out.say("would run:" if live else "then you would run:")
        out.lines.extend("    " + _cmd(c) for c in commands)
        return out
    # (modes set here, not left to the umask: a unit file others could write runs
    # their commands as you)
    make_dirs(path.parent, 0o755)
    if platform == "launchd":
        make_dirs(Path(layout.home, "Library", "Logs", "backscroll"), 0o700)
    else:  # ProtectSystem=strict cannot create the data directory: make it now.
        make_dirs(Path(layout.data_dir), 0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o644)  # (an older .tmp left with other bits)
    os.replace(tmp, path)
    out.say(f"{'updated' if update else 'wrote'} {path}")
    if platform == "systemd" and layout.in_tmp:
        out.say(_tmp_note(layout))
    if not live:
        manager = "launchctl" if platform == "launchd" else "systemctl --user"
        out.say(f"{manager} is not reachable here; to start the service, run:")
        out.lines.extend("    " + _cmd(c) for c in commands)
        return out
    for argv in commands:
        code = run(argv)
        out.say(f"ran: {_cmd(argv)}" + (f" (exit {code})" if code else ""))
        if code and argv[-1] != f"{_gui()}/{LABEL}":  # bootout of an unloaded job is fine
            out.code = 1
            out.say("the service manager refused; see `backscroll service status`")
            break
    return out


def _tmp_note(layout: Layout) -> str:
    return (
        f"note: the unit leaves out PrivateTmp=, since {', '.join(layout.in_tmp)} "
        f"{'is' if len(layout.in_tmp) == 1 else 'are'} under /tmp, where a /tmp of the "
        "service's own would hide them from the CLI; to keep that part of the sandbox, "
        "put them elsewhere (BACKSCROLL_HOME, BACKSCROLL_SOCKET, BACKSCROLL_CONFIG) "
        "and install again"
    )


def uninstall(
    platform: Platform, *, dry_run: bool = False, run: Runner = _run, reachable: bool | None = None
) -> Outcome:
    path = service_path(platform)
    out = Outcome(path)
    if not path.exists():
        out.say(f"not installed: {path} does not exist")
        return out
    if not is_ours(path):
        out.say(
            f"{path} was not written by `backscroll service install`; left it untouched "
            "(remove it yourself if you mean to)"
        )
        out.code = 1
        return out
    before, after = uninstall_commands(platform, path)
    live = manager_reachable(platform) if reachable is None else reachable
    if dry_run:
        out.say("would run:" if live else "you would run:")
        out.lines.extend("    " + _cmd(c) for c in before)
        out.say(f"would remove {path}")
        out.lines.extend("    " + _cmd(c) for c in after)
        return out
    if live:
        for argv in before:
            out.say(f"ran: {_cmd(argv)}" + (f" (exit {c})" if (c := run(argv)) else ""))
    else:
        out.say("the service manager is not reachable here; to stop the service, run:")
        out.lines.extend("    " + _cmd(c) for c in before)
    path.unlink()
    out.say(f"removed {path}")
    if live:
        for argv in after:
            run(argv)
            out.say(f"ran: {_cmd(argv)}")
    return out


@dataclass(frozen=True)
class Status:
    path: Path
    installed: bool
    ours: bool
    up_to_date: bool
    manager: bool
    enabled: str | None = None
    active: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "installed": self.installed,
            "ours": self.ours,
            "up_to_date": self.up_to_date,
            "manager_reachable": self.manager,
            "enabled": self.enabled,
            "active": self.active,
        }


def _answer(argv: Sequence[str]) -> str | None:
    try:
        done = subprocess.run(list(argv), check=False, timeout=10, capture_output=True, text=True)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (done.stdout.strip().splitlines() or [""])[0] or None


def status(platform: Platform, layout: Layout | None = None) -> Status:
    path = service_path(platform)
    installed = path.exists()
    ours = installed and is_ours(path)
    up_to_date = False
    if ours and layout is not None:
        up_to_date = path.read_text(encoding="utf-8") == render(platform, layout)
    live = manager_reachable(platform)
    enabled = active = None
    if live and platform == "systemd":
        enabled = _answer(["systemctl", "--user", "is-enabled", "backscroll"])
        active = _answer(["systemctl", "--user", "is-active", "backscroll"])
    elif live:
        loaded = _quiet(["launchctl", "print", f"{_gui()}/{LABEL}"]) == 0
        enabled = active = "loaded" if loaded else "not loaded"
    return Status(path, installed, ours, up_to_date, live, enabled, active)
