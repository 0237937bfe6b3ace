"""Which file system a watched directory lives on, and whether the kernel's
file events see its changes.

inotify reports what this machine's kernel does to a file. On a file system
that another machine writes to (an NFS or SMB share, the Windows side of WSL
seen through 9p, a virtual machine's shared folder, an sshfs mount) a change
made over there sends no event here: the watch is silent while transcripts
grow. The watcher polls a root on such a file system instead (watcher.py).
"""

from __future__ import annotations

import re

from backscroll.paths import is_under

#: Linux's table of the mounts this process sees.
MOUNTINFO = "/proc/self/mountinfo"

#: File systems written from outside this kernel: changes made there send no
#: inotify event. ``9p`` and ``drvfs`` are WSL's Windows drives (``/mnt/c``),
#: ``virtiofs``, ``fuse.grpcfuse`` and ``vboxsf`` a virtual machine's or a
#: container's shared folders.
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
        "virtiofs",
        "vboxsf",
        "fuse.sshfs",
        "fuse.rclone",
        "fuse.grpcfuse",
        "fuse.s3fs",
        "fuse.gcsfuse",
    }
)

_ESCAPE = re.compile(r"\\([0-7]{3})")


def fs_type(path: str, mountinfo: str | None = None) -> str | None:
    """The type of the file system holding ``path`` (a real path): the mount
    with the longest mount point above it (the last one, where mounts stack).
    None where there is no mount table to read (macOS)."""
    try:
        with open(mountinfo or MOUNTINFO, encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    best, kind = "", None
    for line in lines:
        # "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw"
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right.split():
            continue
        point = _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4])
        if is_under(path, point) and len(point) >= len(best):
            best, kind = point, right.split()[0]
    return kind


def remote_fs(path: str, mountinfo: str | None = None) -> str | None:
    """The type of ``path``'s file system if it is one of :data:`REMOTE`."""
    kind = fs_type(path, mountinfo)
    return kind if kind in REMOTE else None
