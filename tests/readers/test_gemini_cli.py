"""Gemini CLI reader, against the real samples in ``tests/fixtures/gemini-cli``.

The ``$rewindTo``, ``$set.messages`` (compression checkpoint), repeated-id and
sub-agent records below are hand-made: no public sample shows them. Their shapes
follow ``shared/formats/gemini-cli/README.md`` §3 (record shapes) and §4 (what a
compression writes).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv
from backscroll.readers.gemini_cli import GeminiCliReader
from tests.readers.util import MemoryIndex, fixture, grow_file_incrementally, line_cuts, read_fresh

HOST = "gemini-cli"
LEGACY = "session-2025-12-01T21-45-5b959dae.json"
JSONL = "agent-sessions-jsonl_v040.jsonl"
LEGACY_SID = "5b959dae-8655-4cd1-b10f-720b8c336ea2"
PROJECT = "/home/dev/assistants"

reader = GeminiCliReader()


def project_dir(home: Path, slug: str = "assistants", root: str | None = PROJECT) -> Path:
    """``~/.gemini/tmp/<slug>/`` with its ``.project_root`` marker (v0.29+ layout)."""
    d = home / ".gemini" / "tmp" / slug
    (d / "chats").mkdir(parents=True, exist_ok=True)
    if root is not None:
        (d / ".project_root").write_text(root + "\n")
    return d


def place(home: Path, name: str, new_name: str | None = None, slug: str = "assistants") -> Path:
    dest = project_dir(home, slug) / "chats" / (new_name or name)
    shutil.copyfile(fixture(HOST, name), dest)
    return dest


def write_lines(path: Path, records: list[object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# --------------------------------------------------------------------------- legacy .json


def test_legacy_document_indexes_prompts_and_answers(isolated_home: Path) -> None:
    index = read_fresh(reader, place(isolated_home, LEGACY))
    assert len(index.texts("user")) == 3
    assert len(index.texts("assistant")) == 3
    assert index.texts("summary") == []
    assert index.texts("user") == [
        "hi",
        "Explain what this is",
        "Make a copy of lead_memory.txt name it as lead_gemini.txt and optimize this "
        "instructions to be shorter, consice but without loosing functionality",
    ]
    assert any("support a Team Lead" in t for t in index.texts("assistant"))
    keys = {k for _, k in index.turns}
    assert "aa4e1408-dfa9-4337-8768-70d6d3f17129" in keys  # the host's message id


def test_thoughts_and_tool_traffic_are_not_searchable(isolated_home: Path) -> None:
    index = read_fresh(reader, place(isolated_home, LEGACY))
    everything = "\n".join(index.texts()).lower()
    assert "streamlining" not in everything  # only in a thought
    assert "extra_cerebrum" not in everything  # only in a read_file result
    assert "list_directory" not in everything  # a tool name


def test_legacy_session_metadata(isolated_home: Path) -> None:
    index = read_fresh(reader, place(isolated_home, LEGACY))
    session = index.sessions[LEGACY_SID]
    assert session.project == PROJECT
    assert session.title == "hi"
    assert session.started_at == pytest.approx(1764625534.362)  # 2025-12-01T21:45:34.362Z
    assert session.updated_at == pytest.approx(1764625810.837)
    assert session.resume_command == f"cd {PROJECT} && gemini --resume {LEGACY_SID}"


def test_legacy_document_rewritten_in_place_reads_like_fresh(isolated_home: Path) -> None:
    doc = json.loads(fixture(HOST, LEGACY).read_bytes())
    path = project_dir(isolated_home) / "chats" / LEGACY
    index = MemoryIndex()
    for n in (1, 3, 9, len(doc["messages"])):
        path.write_text(json.dumps({**doc, "messages": doc["messages"][:n]}, indent=2))
        result = index.read(reader, path)
        assert result.replace and result.position == path.stat().st_size
    assert index.comparable() == read_fresh(reader, path).comparable()
    assert len(index.turns) == 6


def test_truncated_document_raises_for_a_retry(isolated_home: Path) -> None:
    path = place(isolated_home, LEGACY)
    path.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(ValueError):
        reader.read(path, None, ReaderOptions())


def test_legacy_document_migrated_to_jsonl_is_left_to_the_jsonl(isolated_home: Path) -> None:
    legacy = place(isolated_home, LEGACY)
    shutil.copyfile(legacy, legacy.with_suffix(".jsonl"))
    result = reader.read(legacy, None, ReaderOptions())
    assert result.turns == () and result.replace


def test_document_without_messages_is_unsupported(isolated_home: Path) -> None:
    path = project_dir(isolated_home) / "chats" / "session-2025-01-01T00-00-deadbeef.json"
    path.write_text(json.dumps({"sessionId": "x", "history": []}))
    assert reader.read(path, None, ReaderOptions()).unsupported


# --------------------------------------------------------------------------- streamed .json

#: Streams every document, however small (the path a > 8 MiB session takes).
STREAMED = ReaderOptions(stream_document_bytes=0)


def test_a_streamed_document_gives_the_same_turns_and_session_as_a_whole_read(
    isolated_home: Path,
) -> None:
    path = place(isolated_home, LEGACY)
    whole = reader.read(path, None, ReaderOptions())
    streamed = reader.read(path, None, STREAMED)
    assert len(whole.turns) == 6
    assert streamed == whole


def test_a_streamed_document_keeps_fields_written_after_the_messages(isolated_home: Path) -> None:
    doc = json.loads(fixture(HOST, LEGACY).read_bytes())
    messages = doc.pop("messages")
    path = project_dir(isolated_home) / "chats" / LEGACY
    path.write_text(json.dumps({"messages": messages, "kind": "main", **doc}))
    streamed = reader.read(path, None, STREAMED)
    assert streamed == reader.read(path, None, ReaderOptions())
    assert streamed.sessions[0].session_id == LEGACY_SID
    assert streamed.sessions[0].updated_at == pytest.approx(1764625810.837)


def test_a_document_over_the_whole_read_cap_is_streamed_not_skipped(isolated_home: Path) -> None:
    path = place(isolated_home, LEGACY)
    capped = ReaderOptions(max_document_bytes=1000)
    assert path.stat().st_size > 1000
    assert reader.read(path, None, capped) == reader.read(path, None, ReaderOptions())


def test_a_truncated_streamed_document_raises_for_a_retry(isolated_home: Path) -> None:
    path = place(isolated_home, LEGACY)
    path.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(ValueError, match=LEGACY):
        reader.read(path, None, STREAMED)


@pytest.mark.parametrize(
    "doc", [{"sessionId": "x", "history": []}, {"sessionId": "x", "messages": {}}, [1, 2]]
)
def test_a_streamed_document_without_a_message_list_is_unsupported(
    isolated_home: Path, doc: object
) -> None:
    path = project_dir(isolated_home) / "chats" / "session-2025-01-01T00-00-deadbeef.json"
    path.write_text(json.dumps(doc))
    streamed = reader.read(path, None, STREAMED)
    assert streamed.unsupported and streamed == reader.read(path, None, ReaderOptions())


# --------------------------------------------------------------------------- JSONL


def test_jsonl_indexes_prompt_and_reply_not_tool_output(isolated_home: Path) -> None:
    index = read_fresh(
        reader, place(isolated_home, JSONL, "session-2026-04-29T21-39-gemini_s.jsonl")
    )
    assert index.texts("user") == ["Say hello and list files."]
    assert index.texts("assistant") == ["Hello! I listed the files."]
    everything = "\n".join(index.texts())
    assert "AgentSessions" not in everything  # only in the shell tool's result
    assert "ls -F" not in everything
    session = index.sessions["gemini_stage0_jsonl"]
    assert session.project == PROJECT
    assert session.title == "Say hello and list files."
    assert session.started_at == pytest.approx(1777498762.319)  # 2026-04-29T21:39:22.319Z
    assert session.resume_command == f"cd {PROJECT} && gemini --resume gemini_stage0_jsonl"


def test_jsonl_incremental_equals_fresh(isolated_home: Path, tmp_path: Path) -> None:
    source = fixture(HOST, JSONL)
    dest = project_dir(isolated_home) / "chats" / "session-2026-04-29T21-39-gemini_s.jsonl"
    grown = grow_file_incrementally(reader, source, dest, line_cuts(source.read_bytes()))
    assert grown.comparable() == read_fresh(reader, dest).comparable()
    assert grown.sessions == read_fresh(reader, dest).sessions


def header(sid: str = "s1") -> dict[str, object]:
    return {
        "sessionId": sid,
        "projectHash": "0" * 64,
        "startTime": "2026-05-01T10:00:00.000Z",
        "lastUpdated": "2026-05-01T10:00:00.000Z",
        "kind": "main",
    }


def msg(mid: str, kind: str, content: object, **extra: object) -> dict[str, object]:
    base = {"id": mid, "timestamp": "2026-05-01T10:00:01.000Z", "type": kind, "content": content}
    return {**base, **extra}


LIFE: list[object] = [
    header(),
    msg("u1", "user", [{"text": "How do I rotate the signing keys?"}]),
    msg("a1", "gemini", "", thoughts=[{"subject": "Pondering", "description": "zanzibar"}]),
    msg("a1", "gemini", "Rotate them with the keyring tool."),
    msg("i1", "info", "Login succeeded"),
    msg("u2", "user", "/stats"),
    {"$set": {"summary": "Rotating signing keys", "lastUpdated": "2026-05-01T10:05:00.000Z"}},
    msg("u3", "user", [{"text": "And the old ones?"}]),
    msg("a3", "gemini", "Revoke the old ones afterwards."),
    {"$rewindTo": "u3"},
    msg("u4", "user", "Actually, what about expiry?"),
    msg("a4", "gemini", "Keys expire after ninety days."),
    {"$set": {"sessionId": "s1"}},
    {
        "$set": {
            "messages": [
                msg("c0", "user", [{"text": "<session_context>cwd is /srv</session_context>"}]),
                msg(
                    "c1", "user", [{"text": "<state_snapshot>keys rotate yearly</state_snapshot>"}]
                ),
                msg("c2", "gemini", [{"text": "Got it. Thanks for the additional context!"}]),
                msg("a4", "gemini", "Keys expire after ninety days."),
            ],
            "lastUpdated": "2026-05-01T10:06:00.000Z",
        }
    },
    msg("u5", "user", "Thanks!"),
]


def test_last_record_wins_rewind_drops_and_checkpoint_keeps(isolated_home: Path) -> None:
    path = write_lines(project_dir(isolated_home) / "chats" / "session-x.jsonl", LIFE)
    index = read_fresh(reader, path)
    assert index.texts("user") == [
        "How do I rotate the signing keys?",
        "Actually, what about expiry?",
        "Thanks!",
    ]
    assert index.texts("assistant") == [
        "Rotate them with the keyring tool.",
        "Keys expire after ninety days.",
    ]
    assert index.texts("summary") == ["<state_snapshot>keys rotate yearly</state_snapshot>"]
    everything = "\n".join(index.texts())
    assert "old ones" not in everything  # rewound
    assert "/stats" not in everything and "session_context" not in everything
    assert "Got it" not in everything
    assert index.sessions["s1"].title == "Rotating signing keys"


def test_a_rewound_first_prompt_does_not_stay_the_sessions_title(isolated_home: Path) -> None:
    records: list[object] = [
        header(),
        msg("u1", "user", "the prompt I took back"),
        msg("a1", "gemini", "An answer to it."),
        {"$rewindTo": "u1"},
        msg("u2", "user", "What I meant to ask"),
    ]
    path = write_lines(project_dir(isolated_home) / "chats" / "session-r.jsonl", records)
    index = read_fresh(reader, path)
    assert index.texts("user") == ["What I meant to ask"]
    assert index.sessions["s1"].title == "What I meant to ask"
    grown = MemoryIndex()  # the rewind arriving in an appended piece
    write_lines(path, records[:3])
    grown.read(reader, path)
    assert grown.sessions["s1"].title == "the prompt I took back"
    write_lines(path, records)
    grown.read(reader, path)
    assert grown.sessions["s1"].title == "What I meant to ask"


SNAPSHOT = "<state_snapshot>keys rotate yearly</state_snapshot>"
ACK = "Got it. Thanks for the additional context!"


def test_a_typed_prompt_quoting_the_snapshot_mark_stays_a_prompt(isolated_home: Path) -> None:
    records: list[object] = [
        header(),
        msg("u1", "user", f"Why does my summary start with {SNAPSHOT}?"),
        msg("a1", "gemini", "That is the compression format."),
        {"$set": {"messages": [msg("c1", "user", SNAPSHOT), msg("c2", "user", "Go on")]}},
    ]
    path = write_lines(project_dir(isolated_home) / "chats" / "session-q.jsonl", records)
    index = read_fresh(reader, path)
    # Neither is followed by the model's fixed reply: both were typed.
    assert index.texts("user") == [f"Why does my summary start with {SNAPSHOT}?", SNAPSHOT, "Go on"]
    assert index.texts("summary") == []
    assert str(index.sessions["s1"].title).startswith("Why does my summary start with")
    assert_incremental_equals_fresh(path, records)


def test_a_compression_summary_in_a_legacy_document_is_a_summary(isolated_home: Path) -> None:
    doc = {
        **header("s9"),
        "messages": [
            msg("c1", "user", [{"text": SNAPSHOT}]),
            msg("c2", "gemini", [{"text": ACK}]),
            msg("u1", "user", "And expiry?"),
        ],
    }
    path = project_dir(isolated_home) / "chats" / "session-2026-05-01T10-00-s9s9s9s9.json"
    path.write_text(json.dumps(doc))
    for opts in (ReaderOptions(), STREAMED):
        result = reader.read(path, None, opts)
        roles = {t.text: t.role for t in result.turns}
        assert roles == {SNAPSHOT: "summary", "And expiry?": "user"}
        assert result.sessions[0].title == "And expiry?"


def test_a_summary_and_its_reply_appended_one_record_each_is_a_summary(
    isolated_home: Path,
) -> None:
    # A resumed legacy .json is copied into a .jsonl one message per record; the
    # reply may also be recorded empty first, then with its text (same id).
    records: list[object] = [
        header("s5"),
        msg("c1", "user", [{"text": SNAPSHOT}]),
        msg("c2", "gemini", ""),
        msg("c2", "gemini", [{"text": ACK}]),
        msg("u1", "user", "And expiry?"),
        msg("a1", "gemini", "Ninety days."),
    ]
    path = write_lines(project_dir(isolated_home) / "chats" / "session-s5.jsonl", records)
    index = read_fresh(reader, path)
    assert index.texts("summary") == [SNAPSHOT]
    assert index.texts("user") == ["And expiry?"]
    assert index.sessions["s5"].title == "And expiry?"
    assert_incremental_equals_fresh(path, records)


def assert_incremental_equals_fresh(path: Path, records: list[object]) -> None:
    """Appending the records one at a time, read after each, ends as a fresh read."""
    fresh = read_fresh(reader, path)
    grown = MemoryIndex()
    for n in range(1, len(records) + 1):
        write_lines(path, records[:n])
        grown.read(reader, path)
    assert grown.comparable() == fresh.comparable()
    assert grown.sessions == fresh.sessions


def test_rewind_met_incrementally_rereads_the_whole_file(isolated_home: Path) -> None:
    path = write_lines(isolated_home / "life.jsonl", LIFE)
    dest = project_dir(isolated_home) / "chats" / "session-y.jsonl"
    grown = grow_file_incrementally(reader, path, dest, line_cuts(path.read_bytes()))
    assert grown.comparable() == read_fresh(reader, dest).comparable()
    assert grown.sessions == read_fresh(reader, dest).sessions


def test_rewind_in_an_appended_piece_returns_replace(isolated_home: Path) -> None:
    path = project_dir(isolated_home) / "chats" / "session-z.jsonl"
    write_lines(path, LIFE[:9])
    index = MemoryIndex()
    index.read(reader, path)
    assert "Revoke the old ones afterwards." in index.texts()
    with open(path, "a") as fh:
        fh.write(json.dumps({"$rewindTo": "u3"}) + "\n")
    result = index.read(reader, path)
    assert result.replace
    assert "Revoke the old ones afterwards." not in index.texts()
    assert "Rotate them with the keyring tool." in index.texts()


def test_web_content_taints_the_answers_of_that_exchange(isolated_home: Path) -> None:
    records: list[object] = [
        header(),
        msg("u1", "user", "What changed in the latest release?"),
        {
            **msg("a1", "gemini", "Let me look that up."),
            "toolCalls": [{"id": "t1", "name": "google_web_search", "args": {"query": "x"}}],
        },
        msg("a2", "gemini", "The release adds streaming."),
        msg("u2", "user", "Thanks, now run the tests."),
        msg("a3", "gemini", "All tests pass."),
    ]
    path = write_lines(project_dir(isolated_home) / "chats" / "session-w.jsonl", records)
    index = read_fresh(reader, path)
    tainted = {t.text: t.tainted for t in index.turns.values() if t.role == "assistant"}
    assert tainted == {
        "Let me look that up.": False,
        "The release adds streaming.": True,
        "All tests pass.": False,
    }
    grown = grow_file_incrementally(reader, path, path.with_name("copy.jsonl"), [200, 400, 600])
    assert grown.comparable() == index.comparable()


def test_malformed_line_is_reported_and_the_rest_indexed(isolated_home: Path) -> None:
    lines = fixture(HOST, JSONL).read_text().splitlines(keepends=True)
    lines.insert(2, '{"id": "broken", "type": "us\n')
    path = project_dir(isolated_home) / "chats" / "session-m.jsonl"
    path.write_text("".join(lines))
    result = reader.read(path, None, ReaderOptions())
    assert [p.line for p in result.problems] == [3]
    assert sorted(t.text for t in result.turns) == [
        "Hello! I listed the files.",
        "Say hello and list files.",
    ]


def test_file_without_header_is_unsupported(isolated_home: Path) -> None:
    path = project_dir(isolated_home) / "chats" / "session-v.jsonl"
    write_lines(path, [{"formatVersion": 7, "entries": []}, msg("u1", "user", "hello")])
    result = reader.read(path, None, ReaderOptions())
    assert result.unsupported and result.turns == ()


def test_subagent_recordings_only_when_asked(isolated_home: Path) -> None:
    chats = project_dir(isolated_home) / "chats"
    path = write_lines(
        chats / "s1" / "sub-1.jsonl",
        [{**header("sub-1"), "kind": "subagent"}, msg("q", "user", "Find the config loader")],
    )
    assert reader.source_for(path) == path
    assert reader.read(path, None, ReaderOptions()).turns == ()
    index = read_fresh(reader, path, ReaderOptions(include_subagents=True))
    assert [(t.text, t.subagent) for t in index.turns.values()] == [
        ("Find the config loader", True)
    ]


# --------------------------------------------------------------------------- layout


def test_project_from_projects_json_for_slug_and_hash_dirs(isolated_home: Path) -> None:
    gemini = isolated_home / ".gemini"
    gemini.mkdir()
    (gemini / "projects.json").write_text(json.dumps({"projects": {"/srv/app": "app"}}))
    slug = project_dir(isolated_home, "app", root=None)
    path = slug / "chats" / LEGACY
    shutil.copyfile(fixture(HOST, LEGACY), path)
    assert read_fresh(reader, path).sessions[LEGACY_SID].project == "/srv/app"

    hashed = project_dir(isolated_home, hashlib.sha256(b"/srv/app").hexdigest(), root=None)
    other = hashed / "chats" / "session-2025-12-01T21-45-othersss.json"
    shutil.copyfile(fixture(HOST, LEGACY), other)
    assert read_fresh(reader, other).sessions[LEGACY_SID].project == "/srv/app"


def test_hash_dir_copy_of_a_migrated_chat_is_skipped(isolated_home: Path) -> None:
    slug_copy = place(isolated_home, LEGACY)
    hashed = project_dir(isolated_home, "a" * 64, root=None) / "chats" / LEGACY
    shutil.copyfile(slug_copy, hashed)
    assert reader.source_for(hashed) is None
    assert reader.source_for(slug_copy) == slug_copy
    root = isolated_home / ".gemini" / "tmp"
    assert list(reader.discover(root)) == [slug_copy]


def test_source_for_accepts_only_chats_and_logs(isolated_home: Path) -> None:
    d = project_dir(isolated_home)
    assert reader.source_for(d / "chats" / "session-2026-01-01T00-00-abcdef12.jsonl")
    assert reader.source_for(d / "logs.json") == d / "logs.json"
    assert reader.source_for(d / "checkpoint-mytag.json") is None
    assert reader.source_for(d / "chats" / "session-x.jsonl.unreadable-17") is None
    assert reader.source_for(isolated_home / ".gemini" / "settings.json") is None


def test_logs_json_is_a_fallback_for_sessions_without_a_chat_file(isolated_home: Path) -> None:
    d = project_dir(isolated_home)
    logs = d / "logs.json"
    shutil.copyfile(fixture(HOST, "logs.json"), logs)
    index = read_fresh(reader, logs)
    assert index.texts("user") == [
        "hi",
        "Explain what this is",
        "Make a copy of lead_memory.txt name it as lead_gemini.txt and optimize this "
        "instructions to be shorter, consice but without loosing functionality",
    ]
    session = index.sessions[LEGACY_SID]
    assert session.project == PROJECT and session.title == "hi"
    assert session.resume_command is None  # no chat file: nothing for --resume to load

    place(isolated_home, LEGACY)  # the chat recording exists: logs.json only duplicates it
    assert read_fresh(reader, logs).turns == {}


def test_roots_honour_gemini_cli_home(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert reader.roots(HostEnv(home=home, environ={})) == [home / ".gemini" / "tmp"]
    assert reader.roots(HostEnv(home=home, environ={}, platform="darwin")) == [
        home / ".gemini" / "tmp"
    ]
    assert reader.roots(HostEnv(home=home, environ={}, platform="win32")) == [
        home / ".gemini" / "tmp"
    ]
    env = HostEnv(home=home, environ={"GEMINI_CLI_HOME": str(tmp_path / "alt")})
    assert reader.roots(env) == [tmp_path / "alt" / ".gemini" / "tmp"]
