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


def mounts(mountinfo: str | None = None) -> list[Mount]:
    """The mounts this process sees, in the order they were made; a mount made
    over a directory hides the earlier mounts at or under it. Empty where there
    is no mount table to read."""
    try:
        with open(mountinfo or MOUNTINFO, encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    visible: list[Mount] = []
    for line in lines:
        # "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw"
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or not tail:
            continue
        point = _unescape(fields[4])
        visible = [m for m in visible if not is_under(m.point, point)]
        source = _unescape(tail[1]) if len(tail) > 1 else ""
        visible.append(Mount(point, tail[0], source, tail[2] if len(tail) > 2 else ""))
    return visible


def fs_type(path: str, mountinfo: str | None = None) -> str | None:
    """The type of the file system holding ``path`` (a real path): the visible
    mount with the longest mount point above it. None if unknown."""
    best: Mount | None = None
    for mount in mounts(mountinfo):
        if is_under(path, mount.point) and (best is None or len(mount.point) > len(best.point)):
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
