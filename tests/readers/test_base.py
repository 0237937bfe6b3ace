"""The helpers every reader shares."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from backscroll.model import Cursor, ReaderOptions
from backscroll.readers.base import (
    READ_CHUNK,
    Tail,
    first_line_title,
    is_absolute_path,
    is_external_tool,
    loads,
    parse_time,
    path_from_uri,
    resume_in,
    tail_jsonl,
)


@pytest.mark.parametrize(
    "name",
    ["WebFetch", "WebSearch", "web_search", "mcp__fetch__fetch", "fetch", "browser_navigate"],
)
def test_tools_that_read_outside_content_are_external(name: str) -> None:
    assert is_external_tool(name)


@pytest.mark.parametrize("name", ["Bash", "Read", "Edit", "apply_patch", "grep", None, 7])
def test_local_tools_are_not_external(name: object) -> None:
    assert not is_external_tool(name)


def test_parse_time_reads_iso_and_epoch_in_any_unit() -> None:
    assert parse_time("2026-02-10T22:57:54.684Z") == pytest.approx(1770764274.684)
    assert parse_time("1770764274") == pytest.approx(1770764274)
    assert parse_time(1770764274684) == pytest.approx(1770764274.684)
    assert parse_time(1770764274684123) == pytest.approx(1770764274.684123)
    assert parse_time("not a time") is None and parse_time(True) is None and parse_time("") is None


def test_loads_takes_what_json_allows_beyond_the_fast_parser() -> None:
    assert loads(b'{"s": "\\udc80"}')["s"] == "\udc80"
    with pytest.raises(ValueError):
        loads(b'{"unterminated": ')


def test_path_helpers() -> None:
    assert path_from_uri("file:///home/u/my%20app") == "/home/u/my app"
    # A remote window's folder is the path on the remote machine, given as a URI
    # or plainly; another scheme names no folder.
    remote = "vscode-remote://ssh-remote%2Bbox/home/dev/proj"
    assert path_from_uri(remote, plain_paths=True) == "/home/dev/proj"
    assert path_from_uri("/home/dev/proj", plain_paths=True) == "/home/dev/proj"
    assert path_from_uri("C:\\Users\\u", plain_paths=True) == "C:\\Users\\u"
    assert path_from_uri("vscode-vfs://github/o/r", plain_paths=True) is None
    assert is_absolute_path("/home/u") and is_absolute_path("C:\\Users\\u")
    assert not is_absolute_path("relative/dir") and not is_absolute_path(None)
    assert resume_in("/p q", "claude", "--resume", "x") == "cd '/p q' && claude --resume x"


def test_lines_across_read_chunks_keep_their_bytes_offsets_and_numbers(tmp_path: Path) -> None:
    # Lengths around and beyond the read size, blank lines between, so lines
    # start, end and span several reads at every kind of boundary.
    chunk = READ_CHUNK
    lengths = [10, chunk - 12, 1, chunk, chunk + 1, 3 * chunk + 7, 0, 0, 5, chunk - 1, 2]
    body = b"".join(b"x" * n + b"\n" for n in lengths) + b"y" * 40  # (and a half line)
    path = tmp_path / "t.jsonl"
    path.write_bytes(body)
    tail = Tail(path, max_line_bytes=4 * chunk)
    got = [(line.offset, line.number, line.raw) for line in tail]
    expected, offset = [], 0
    for number, n in enumerate(lengths, 1):
        if n:
            expected.append((offset, number, b"x" * n))
        offset += n + 1
    assert got == expected
    assert tail.end == offset and tail.lines_read == len(lengths) and not tail.problems


def test_tail_stops_before_a_half_written_line_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c": ')
    tail, records = tail_jsonl(path, None, ReaderOptions())
    assert [obj for _line, obj in records] == [{"a": 1}, {"b": 2}]
    assert tail.end == len(b'{"a": 1}\n{"b": 2}\n')
    with open(path, "ab") as fh:
        fh.write(b"3}\n")
    _tail2, more = tail_jsonl(path, Cursor(tail.end, {"line": 3}), ReaderOptions())
    assert [(line.number, obj) for line, obj in more] == [(3, {"c": 3})]


def test_an_oversized_line_is_skipped_and_reported_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(b'{"ok": 1}\n' + b'{"x": "' + b"a" * 5000 + b'"}\n' + b'{"ok": 2}\n')
    tail = Tail(path, max_line_bytes=1000)
    lines = [line.number for line in tail]
    assert lines == [1, 3]
    assert [p.line for p in tail.problems] == [2]
    assert "raise index.max_line_bytes to read it" in tail.problems[0].message


def test_lines_of_only_whitespace_are_skipped_and_counted_not_reported(tmp_path: Path) -> None:
    path = tmp_path / "spaced.jsonl"
    path.write_bytes(b'{"ok": 1}\n\n  \t\r\n\x0b\x0c\n  {"ok": 2}  \r\n{"ok": 3}\n')
    tail, records = tail_jsonl(path, None, ReaderOptions())
    assert [(line.number, obj["ok"]) for line, obj in records] == [(1, 1), (5, 2), (6, 3)]
    assert tail.problems == [] and tail.lines_read == 6 and tail.end == path.stat().st_size


def test_malformed_lines_are_reported_and_the_rest_parsed(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"ok": 1}\nnot json\n{"ok": 2}\n')
    tail, records = tail_jsonl(path, None, ReaderOptions())
    assert [obj["ok"] for _l, obj in records] == [1, 2]
    assert [(p.line, p.message.startswith("malformed JSON")) for p in tail.problems] == [(2, True)]


def test_unterminated_last_line_is_read_only_once_the_file_is_quiet(tmp_path: Path) -> None:
    import os
    import time

    from backscroll.model import ReaderOptions
    from backscroll.readers.base import SETTLE_SECONDS, next_line_number, tail_jsonl

    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}')
    tail, lines = tail_jsonl(path, None, ReaderOptions())
    assert [obj for _, obj in lines] == [{"a": 1}] and tail.end == 9
    quiet = time.time() - SETTLE_SECONDS - 1
    os.utime(path, (quiet, quiet))
    tail, lines = tail_jsonl(path, None, ReaderOptions())
    assert [obj for _, obj in lines] == [{"a": 1}, {"b": 2}]
    assert tail.end == path.stat().st_size and next_line_number(tail) == 3


def test_unterminated_fragment_that_is_not_whole_json_is_left_for_later(tmp_path: Path) -> None:
    import os
    import time

    from backscroll.model import ReaderOptions
    from backscroll.readers.base import SETTLE_SECONDS, tail_jsonl

    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": ')
    quiet = time.time() - SETTLE_SECONDS - 1
    os.utime(path, (quiet, quiet))
    tail, lines = tail_jsonl(path, None, ReaderOptions())
    assert [obj for _, obj in lines] == [{"a": 1}]
    assert tail.end == 9 and tail.problems == []


def test_a_title_is_cut_between_words_so_no_half_token_is_stored() -> None:
    # Titles are redacted after they are cut: half a token no longer has its
    # vendor's shape and would be stored as it stands.
    token = "ghp_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Y"
    prompt = "please push the release branch to origin using this token " + token + " then tag"
    title = first_line_title(prompt)
    assert title == "please push the release branch to origin using this token…"
    assert "ghp_" not in title


def test_a_title_keeps_every_whole_word_that_fits() -> None:
    line = " ".join(["word"] * 30)
    title = first_line_title(line, limit=24)
    assert title == "word word word word…" and len(title) <= 24
    assert first_line_title("short prompt\nsecond line") == "short prompt"
    # The cut falls just after a word: that word stays.
    assert first_line_title("abcd efgh ijkl", limit=10) == "abcd efgh…"


def test_a_title_in_a_script_without_spaces_is_cut_where_the_limit_falls() -> None:
    line = "请帮我检查一下这个项目里的配置加载逻辑" * 6
    assert first_line_title(line) == line[:79] + "…"
    # An ASCII token glued to such text is still left out whole.
    glued = "密" * 70 + "ghp_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Y"
    assert first_line_title(glued) == "密" * 70 + "…"


def test_a_first_line_that_is_one_overlong_word_gives_no_title() -> None:
    assert first_line_title("x" * 200) == ""
    assert first_line_title("  \n" + "sk-ant-api03-" + "Z" * 90 + "\nnext") == ""


def test_a_record_after_nul_padding_left_by_a_crash_is_read(tmp_path: Path) -> None:
    # A crash can leave a file's preallocated tail as NUL bytes; the host then
    # appends after them, and that record must not be lost with the padding.
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"n": 1}\n' + b"\x00" * 4096 + b'{"n": 2}\n' + b"\x00" * 10 + b"\n")
    tail, lines = tail_jsonl(path, None, ReaderOptions())
    read = [(line.offset, obj) for line, obj in lines]
    assert read == [(0, {"n": 1}), (9 + 4096, {"n": 2})]
    assert [p.message for p in tail.problems] == [
        "4096 NUL bytes (left by a crash) skipped",
        "10 NUL bytes (left by a crash) skipped",
    ]
    assert tail.end == path.stat().st_size


def test_a_settled_last_line_after_nul_padding_is_read_without_its_newline(
    tmp_path: Path,
) -> None:
    # (The host's last record after a crash's padding, its newline not written.)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"n": 1}\n' + b"\x00" * 64 + b'{"n": 2}')
    old = time.time() - 60
    os.utime(path, (old, old))  # quiet for a minute: settled
    tail, lines = tail_jsonl(path, None, ReaderOptions())
    assert [obj for _, obj in lines] == [{"n": 1}, {"n": 2}]
    assert [p.message for p in tail.problems] == ["64 NUL bytes (left by a crash) skipped"]
    assert tail.end == path.stat().st_size
    padding_only = tmp_path / "p.jsonl"  # preallocated, nothing after it yet: wait
    padding_only.write_bytes(b'{"n": 1}\n' + b"\x00" * 64)
    os.utime(padding_only, (old, old))
    tail, lines = tail_jsonl(padding_only, None, ReaderOptions())
    assert [obj for _, obj in lines] == [{"n": 1}]
    assert tail.end == 9
