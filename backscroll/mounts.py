"""Which file system a directory lives on (Linux's mount table), whether the
kernel's file events see its changes, and where WSL shows the Windows drive.

inotify reports what this machine's kernel does to a file. On a file system
that another machine writes to (an NFS or SMB share, the Windows side of WSL
seen through 9p, a virtual machine's shared folder, an sshfs mount) a change
made over there sends no event here: the watch is silent while transcripts
grow. The daemon's watcher polls a root on such a file system instead.

Where there is no ``/proc`` (macOS, Windows) nothing is known: every root gets
the platform's native watch.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import NamedTuple

from backscroll.paths import is_under

#: Linux's table of the mounts this process sees.
MOUNTINFO = "/proc/self/mountinfo"
#: How often a polled root is looked at, in seconds.
POLL_SECONDS = 2

#: File systems written from outside this kernel: changes made there send no
#: inotify event. ``9p`` and ``drvfs`` are WSL's Windows drives (``/mnt/c``);
#: ``virtiofs``, ``fuse.grpcfuse``, ``vboxsf``, ``vmhgfs`` and ``prl_fs`` are
#: shared folders of a virtual machine or a container.
REMOTE = frozenset(
    {
        "9p",
        "drvfs",
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "afs",
        "ceph",
        "glusterfs",
        "lustre",
        "davfs",
        "virtiofs",
        "vboxsf",
        "vmhgfs",
        "prl_fs",
        "fuse.vmhgfs-fuse",
        "fuse.sshfs",
        "fuse.rclone",
        "fuse.grpcfuse",
        "fuse.s3fs",
        "fuse.gcsfuse",
    }
)

#: The file systems WSL mounts a Windows drive with.
_WINDOWS_DRIVE_FS = frozenset({"9p", "drvfs", "virtiofs"})

_ESCAPE = re.compile(r"\\([0-7]{3})")


class Mount(NamedTuple):
    point: str
    kind: str
    source: str
    options: str


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), text)


#: The last table read: (when, which file, its visible mounts). The daemon asks
#: once per root it arms, and a machine running containers has hundreds of mounts.
_cache: tuple[float, str, list[Mount]] | None = None
_CACHE_SECONDS = 5.0


def mounts(mountinfo: str | None = None) -> list[Mount]:
    """The mounts this process sees, as the table lists them. Empty where there
    is no mount table to read. Read again at most every few seconds."""
    global _cache
    source = mountinfo or MOUNTINFO
    now = time.monotonic()
    if _cache is not None and _cache[1] == source and now - _cache[0] < _CACHE_SECONDS:
        return _cache[2]
    try:
        with open(source, encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    found: list[Mount] = []
    for line in lines:
        # "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw"
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or not tail:
            continue
        device = _unescape(tail[1]) if len(tail) > 1 else ""
        found.append(Mount(_unescape(fields[4]), tail[0], device, tail[2] if len(tail) > 2 else ""))
    _cache = (now, source, found)
    return found


def fs_type(path: str, mountinfo: str | None = None) -> str | None:
    """The type of the file system holding ``path`` (a real path): the mount
    with the longest mount point above it, the last listed where several share
    one (mounted over each other). None if unknown.

    The table's order is not the order of mounting everywhere (``/`` can come
    after ``/proc``), so a mount made later over a *parent* of another is not
    taken to hide it."""
    best: Mount | None = None
    for mount in mounts(mountinfo):
        if is_under(path, mount.point) and (best is None or len(mount.point) >= len(best.point)):
            best = mount
    return best.kind if best else None


def remote_fs(path: str, mountinfo: str | None = None) -> str | None:
    """The type of ``path``'s file system if it is one of :data:`REMOTE`."""
    kind = fs_type(path, mountinfo)
    return kind if kind in REMOTE else None


def windows_drive(letter: str = "C", mountinfo: str | None = None) -> Path | None:
    """Where WSL mounts the Windows drive ``letter`` (``/mnt/c`` unless
    ``/etc/wsl.conf`` moved it), from its mount's source or ``path=`` option."""
    want = f"{letter.upper()}:"
    for mount in mounts(mountinfo):
        if mount.kind not in _WINDOWS_DRIVE_FS:
            continue
        options = mount.options.upper()
        if mount.source.upper().startswith(want) or f"PATH={want}" in options:
            return Path(mount.point)
    return None
