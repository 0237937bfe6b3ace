"""The mount table read as Linux writes it: which file system holds a path,
and which of those the watcher polls."""

from __future__ import annotations

from pathlib import Path

from backscroll.mounts import fs_type, remote_fs, windows_drive

# Lines as /proc/self/mountinfo writes them: a mount point with a space is
# escaped (\040), and the type follows the " - " separator.
MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:26 / /proc rw,nosuid - proc proc rw
41 22 0:40 / /mnt/c rw,noatime - 9p drvfs rw,aname=drvfs;path=C:\\
42 22 0:41 / /srv/team\\040share rw - nfs4 nas:/export rw
43 42 0:42 / /srv/team\\040share/local rw - tmpfs tmpfs rw
44 22 0:43 / /data rw - ext4 /dev/sdb1 rw
45 22 0:44 / /data rw - cifs //nas/data rw
"""


def _table(tmp_path: Path) -> str:
    path = tmp_path / "mountinfo"
    path.write_text(MOUNTINFO)
    return str(path)


def test_the_longest_mount_point_above_a_path_names_its_file_system(tmp_path: Path) -> None:
    table = _table(tmp_path)
    assert fs_type("/home/u/.claude", table) == "ext4"
    assert fs_type("/mnt/c/Users/u/AppData", table) == "9p"
    assert fs_type("/mnt/c", table) == "9p"
    assert fs_type("/mnt/cd", table) == "ext4"  # a sibling with a longer name is not under it
    assert fs_type("/srv/team share/notes", table) == "nfs4"  # \040 is a space
    assert fs_type("/srv/team share/local/x", table) == "tmpfs"
    assert fs_type("/data/x", table) == "cifs"  # mounted over /data: the last one shows


def test_only_file_systems_written_from_outside_count_as_remote(tmp_path: Path) -> None:
    table = _table(tmp_path)
    assert remote_fs("/mnt/c/Users/u", table) == "9p"
    assert remote_fs("/srv/team share/a", table) == "nfs4"
    assert remote_fs("/home/u", table) is None
    assert remote_fs("/srv/team share/local/a", table) is None


def test_without_a_mount_table_nothing_is_known(tmp_path: Path) -> None:
    assert fs_type("/home/u", str(tmp_path / "absent")) is None
    assert remote_fs("/home/u", str(tmp_path / "absent")) is None


def test_a_table_that_lists_the_root_after_other_mounts_still_names_them(
    tmp_path: Path,
) -> None:
    """Some tables list ``/`` after ``/proc`` and ``/dev`` (this is not the
    order of mounting): a later mount above a path does not hide a nearer one."""
    table = tmp_path / "mountinfo"
    table.write_text(
        "30 1 0:26 / /proc rw - proc proc rw\n"
        "31 1 0:41 / /srv/share rw - nfs4 nas:/export rw\n"
        "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
    )
    assert fs_type("/proc/self", str(table)) == "proc"
    assert remote_fs("/srv/share/sessions", str(table)) == "nfs4"
    assert fs_type("/home/u", str(table)) == "ext4"


def test_wsl_s_windows_drive_is_found_wherever_wsl_conf_mounts_it(tmp_path: Path) -> None:
    table = tmp_path / "mountinfo"
    table.write_text(
        "22 1 8:1 / / rw - ext4 /dev/sdc rw\n"
        "60 22 0:60 / /win/c rw,noatime - 9p C:\\134 rw,dirsync,aname=drvfs;path=C:\\;uid=1000\n"
        "61 22 0:61 / /win/d rw,noatime - 9p D:\\134 rw,aname=drvfs;path=D:\\;uid=1000\n"
    )
    assert windows_drive("C", str(table)) == Path("/win/c")
    assert windows_drive("d", str(table)) == Path("/win/d")
    assert windows_drive("E", str(table)) is None
    assert windows_drive("C", str(tmp_path / "absent")) is None
