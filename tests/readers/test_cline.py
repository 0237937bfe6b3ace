"""Cline reader against the sample in ``tests/fixtures/cline`` (see SOURCES.md there).

The sample is a structural ``ui_messages.json`` written by cli-continues. Three
hand-made documents below fill what it lacks, built from the Cline README:
``REAL_TASK`` ("What to index": the typed task as the first ``say: "text"``, an
``api_req_started`` request carrying environment details, tool/command/browser
rows, a followup question, a condense summary) and ``CLI_MESSAGES`` /
``CLI_MANIFEST`` ("Locations": the CLI/SDK ``sessions/<id>/`` store, shaped as
``buildMessagesFilePayload`` in cline/cline ``sdk/packages/core`` writes it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from backscroll.model import ReaderOptions
from backscroll.readers.base import HostEnv, parse_time
from backscroll.readers.cline import ClineReader
from tests.readers.util import MemoryIndex, fixture, read_fresh, role_counts

reader = ClineReader()
EXT = Path("Code") / "User" / "globalStorage" / "saoudrizwan.claude-dev"

REAL_TASK: list[dict[str, Any]] = [
    {"ts": 1000, "type": "say", "say": "text", "text": "Fix the flaky login test"},
    {
        "ts": 1001,
        "type": "say",
        "say": "api_req_started",
        "text": json.dumps(
            {
                "request": "<task>\nFix the flaky login test\n</task>\n\n<environment_details>\n"
                "# Current Working Directory (/home/dev/webapp) Files\nsrc/\n"
                "</environment_details>",
                "tokensIn": 10,
            }
        ),
    },
    {"ts": 1002, "type": "say", "say": "reasoning", "text": "ponderously considering timeouts"},
    {"ts": 1003, "type": "say", "say": "text", "text": "I'll look at the test first."},
    {
        "ts": 1004,
        "type": "ask",
        "ask": "tool",
        "text": json.dumps({"tool": "readFile", "path": "tests/login.spec.ts"}),
    },
    {"ts": 1005, "type": "ask", "ask": "command", "text": "npm test -- login"},
    {"ts": 1006, "type": "ask", "ask": "command_output", "text": "FAIL quuxOutputMarker"},
    {
        "ts": 1007,
        "type": "ask",
        "ask": "followup",
        "text": json.dumps({"question": "Should I raise the timeout?", "options": ["yes", "no"]}),
    },
    {"ts": 1008, "type": "say", "say": "user_feedback", "text": "Yes, raise it to 10s"},
    {"ts": 1009, "type": "ask", "ask": "browser_action_launch", "text": "https://example.com"},
    {"ts": 1010, "type": "say", "say": "browser_action_result", "text": '{"logs":"zorblax"}'},
    {"ts": 1011, "type": "say", "say": "text", "text": "The docs suggest a retry helper."},
    {"ts": 1012, "type": "ask", "ask": "condense", "text": "Summary: login test timeout raised."},
    {"ts": 1013, "type": "say", "say": "user_feedback", "text": "Thanks, commit it"},
    {"ts": 1014, "type": "say", "say": "completion_result", "text": "Committed the fix."},
    {"ts": 1015, "type": "ask", "ask": "completion_result", "text": ""},
]

CLI_ID = "1770000000000_abcde"
CLI_MESSAGES: dict[str, Any] = {
    "version": 1,
    "updated_at": "2026-03-01T10:05:00.000Z",
    "agent": "lead",
    "sessionId": CLI_ID,
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Summarise the release notes"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm wibblethink"},
                {"type": "text", "text": "Fetching them now."},
                {"type": "tool_use", "id": "t1", "name": "web_fetch", "input": {"url": "x"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "flumpresult"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "The release adds SSO."}]},
    ],
}
CLI_MANIFEST = {
    "session_id": CLI_ID,
    "cwd": "/home/dev/cli-project",
    "started_at": "2026-03-01T10:00:00.000Z",
    "metadata": {"title": "Release notes"},
}


def _task(tmp_path: Path, doc: Any, task_id: str = "1740470400000") -> Path:
    path = tmp_path / EXT / "tasks" / task_id / "ui_messages.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))
    return path


def _sample(tmp_path: Path) -> Path:
    return _task(tmp_path, json.loads(fixture("cline", "ui_messages.json").read_text()))


def _cli(tmp_path: Path, messages: dict[str, Any] = CLI_MESSAGES) -> Path:
    session_dir = tmp_path / ".cline" / "data" / "sessions" / CLI_ID
    session_dir.mkdir(parents=True, exist_ok=True)
    (session_dir / f"{CLI_ID}.json").write_text(json.dumps(CLI_MANIFEST))
    path = session_dir / f"{CLI_ID}.messages.json"
    path.write_text(json.dumps(messages, indent=2))
    return path


def _all_text(index: MemoryIndex) -> str:
    return "\n".join(index.texts())


# --------------------------------------------------------------------------- the sample


def test_sample_turns_by_role(tmp_path: Path) -> None:
    index = read_fresh(reader, _sample(tmp_path))
    assert role_counts(index) == {"user": 2, "assistant": 3}
    assert index.texts("user") == [
        "Create a React component for a dashboard with charts and KPI cards",
        "Also add a date range picker for filtering the data",
    ]
    assert index.texts("assistant") == [
        "I'll create a dashboard component with chart widgets and KPI summary cards. "
        "The layout will use a responsive CSS grid.",
        "I've added a DateRangePicker component that filters all dashboard data.",
        "Dashboard component created at src/Dashboard.tsx with charts, KPI cards, and date "
        "filtering.\n- [ ] Add export to CSV functionality\nNext step: connect to the real API "
        "endpoints",
    ]


def test_superseded_partial_row_is_dropped(tmp_path: Path) -> None:
    index = read_fresh(reader, _sample(tmp_path))
    assert "1740470402000" not in {key for _, key in index.turns}
    assert all(not t.endswith("summary cards...") for t in index.texts())


def test_reasoning_and_request_blobs_are_not_searchable(tmp_path: Path) -> None:
    text = _all_text(read_fresh(reader, _sample(tmp_path)))
    assert "controlled component pattern" not in text  # say: reasoning
    assert "tokensIn" not in text and "POST /v1/messages" not in text  # api_req_started


def test_sample_session_title_start_and_no_resume(tmp_path: Path) -> None:
    index = read_fresh(reader, _sample(tmp_path))
    session = index.sessions["1740470400000"]
    assert session.title == "Create a React component for a dashboard with charts and KPI cards"
    assert session.started_at == 1740470400.0
    assert session.updated_at == 1740470410.0
    assert session.project is None  # the sample has no environment details
    assert session.resume_command is None  # reopened from Cline's History view
    turn = index.turns[("1740470400000", "1740470406000")]
    assert turn.timestamp == 1740470406.0


# --------------------------------------------------------------------------- rewrites


def test_rewrite_with_same_content_gives_identical_turns(tmp_path: Path) -> None:
    path = _sample(tmp_path)
    index = read_fresh(reader, path)
    before = index.comparable()
    path.write_text(path.read_text())
    result = index.read(reader, path)
    assert result.replace and result.position == path.stat().st_size
    assert index.comparable() == before


def test_rewrite_appending_one_message_adds_exactly_one_key(tmp_path: Path) -> None:
    doc = json.loads(fixture("cline", "ui_messages.json").read_text())
    path = _task(tmp_path, doc[:-1])
    old = {t.key for t in reader.read(path, None, ReaderOptions()).turns}
    _task(tmp_path, doc)
    new = {t.key for t in reader.read(path, None, ReaderOptions()).turns}
    assert old < new and len(new - old) == 1
    index = MemoryIndex()
    index.read(reader, _task(tmp_path, doc[:-1]))
    index.read(reader, _task(tmp_path, doc))
    assert index.comparable() == read_fresh(reader, path).comparable()


def test_truncated_document_raises_value_error(tmp_path: Path) -> None:
    path = _sample(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError):
        reader.read(path, None, ReaderOptions())


def test_malformed_message_is_reported_and_the_rest_indexed(tmp_path: Path) -> None:
    doc = json.loads(fixture("cline", "ui_messages.json").read_text())
    path = _task(tmp_path, [doc[0], 42, *doc[1:]])
    result = reader.read(path, None, ReaderOptions())
    assert [p.message for p in result.problems] == ["malformed message #1: not a say/ask object"]
    assert len(result.turns) == 5


def test_document_that_is_not_a_message_array_is_unsupported(tmp_path: Path) -> None:
    path = _task(tmp_path, {"version": 9, "messages": []})
    result = reader.read(path, None, ReaderOptions())
    assert result.unsupported is not None and not result.turns


# --------------------------------------------------------------------------- real task shape


def test_typed_task_tools_and_summary_in_a_real_shaped_task(tmp_path: Path) -> None:
    index = read_fresh(reader, _task(tmp_path, REAL_TASK, "1000"))
    assert role_counts(index) == {"user": 3, "assistant": 4, "summary": 1}
    assert index.texts("user") == [
        "Fix the flaky login test",
        "Yes, raise it to 10s",
        "Thanks, commit it",
    ]
    assert "Should I raise the timeout?" in index.texts("assistant")
    assert index.texts("summary") == ["Summary: login test timeout raised."]
    text = _all_text(index)
    for word in ("ponderously", "quuxOutputMarker", "npm test", "login.spec", "zorblax"):
        assert word not in text


def test_project_comes_from_environment_details(tmp_path: Path) -> None:
    index = read_fresh(reader, _task(tmp_path, REAL_TASK, "1000"))
    assert index.sessions["1000"].project == "/home/dev/webapp"
    assert index.sessions["1000"].title == "Fix the flaky login test"


def test_project_falls_back_to_task_history(tmp_path: Path) -> None:
    path = _sample(tmp_path)
    state = tmp_path / EXT / "state" / "taskHistory.json"
    state.parent.mkdir(parents=True)
    state.write_text(
        json.dumps([{"id": "1740470400000", "task": "x", "cwdOnTaskInitialization": "/srv/app"}])
    )
    assert read_fresh(reader, path).sessions["1740470400000"].project == "/srv/app"


def test_the_task_historys_start_directory_comes_before_the_requests_directory(
    tmp_path: Path,
) -> None:
    path = _task(tmp_path, REAL_TASK, "1000")  # (its requests name /home/dev/webapp)
    state = tmp_path / EXT / "state" / "taskHistory.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps([{"id": "1000", "task": "x", "cwdOnTaskInitialization": "/srv"}]))
    session = read_fresh(reader, path).sessions["1000"]
    assert session.project == "/srv"
    assert session.title == "Fix the flaky login test"


def test_browser_tool_taints_assistant_text_until_next_prompt(tmp_path: Path) -> None:
    index = read_fresh(reader, _task(tmp_path, REAL_TASK, "1000"))
    tainted = {t.text for t in index.turns.values() if t.tainted}
    assert tainted == {"The docs suggest a retry helper."}


def test_web_fetch_tool_row_taints(tmp_path: Path) -> None:
    doc = [
        {"ts": 1, "type": "say", "say": "text", "text": "Read the changelog"},
        {"ts": 2, "type": "say", "say": "api_req_started", "text": "{}"},
        {"ts": 3, "type": "say", "say": "tool", "text": json.dumps({"tool": "webFetch"})},
        {"ts": 4, "type": "say", "say": "text", "text": "It says v2 is out."},
    ]
    index = read_fresh(reader, _task(tmp_path, doc, "1"))
    assert index.turns[("1", "4")].tainted


# --------------------------------------------------------------------------- CLI sessions


def test_cli_session_turns_project_and_title(tmp_path: Path) -> None:
    index = read_fresh(reader, _cli(tmp_path))
    assert role_counts(index) == {"user": 1, "assistant": 2}
    assert index.texts("assistant") == ["Fetching them now.", "The release adds SSO."]
    text = _all_text(index)
    assert "wibblethink" not in text and "flumpresult" not in text
    session = index.sessions[CLI_ID]
    assert session.project == "/home/dev/cli-project"
    assert session.title == "Release notes"
    assert session.started_at == parse_time("2026-03-01T10:00:00.000Z")
    assert session.resume_command is None  # `cline history`, then pick the session


def test_cli_prompts_are_what_was_typed_not_the_sdks_wrapping(tmp_path: Path) -> None:
    # The Cline SDK wraps each prompt in <user_input mode=...>, may put a
    # <mode_notice> before it and @-mentioned files' bodies after it.
    typed = (
        "<mode_notice>The user switched to act mode.</mode_notice>"
        '<user_input mode="act">make the sidebar collapsible</user_input>\n\n'
        '<file_content path="src/Sidebar.tsx">export function Sidebar() {}</file_content>'
    )
    messages = {**CLI_MESSAGES, "messages": [
        {"role": "user", "content": [{"type": "text", "text": typed}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]}  # fmt: skip
    manifest = {k: v for k, v in CLI_MANIFEST.items() if k != "metadata"}
    path = _cli(tmp_path, messages)
    (path.parent / f"{CLI_ID}.json").write_text(json.dumps(manifest))
    index = read_fresh(reader, path)
    assert index.texts("user") == ["make the sidebar collapsible"]
    assert index.sessions[CLI_ID].title == "make the sidebar collapsible"
    assert "Sidebar()" not in _all_text(index) and "mode_notice" not in _all_text(index)


def test_cli_text_after_web_fetch_is_tainted(tmp_path: Path) -> None:
    turns = {t.text: t.tainted for t in read_fresh(reader, _cli(tmp_path)).turns.values()}
    assert turns == {
        "Summarise the release notes": False,
        "Fetching them now.": False,
        "The release adds SSO.": True,
    }


def test_cli_unknown_version_is_unsupported(tmp_path: Path) -> None:
    path = _cli(tmp_path, {**CLI_MESSAGES, "version": 2})
    result = reader.read(path, None, ReaderOptions())
    assert result.unsupported == f"unknown format version 2 in {CLI_ID}.messages.json"


def test_cli_rewrite_appending_one_message_adds_exactly_one_key(tmp_path: Path) -> None:
    short = {**CLI_MESSAGES, "messages": CLI_MESSAGES["messages"][:-1]}
    path = _cli(tmp_path, short)
    old = {t.key for t in reader.read(path, None, ReaderOptions()).turns}
    _cli(tmp_path)
    new = {t.key for t in reader.read(path, None, ReaderOptions()).turns}
    assert old < new and len(new - old) == 1


# --------------------------------------------------------------------------- locations


def test_source_for_maps_task_files(tmp_path: Path) -> None:
    task = tmp_path / EXT / "tasks" / "17"
    assert reader.source_for(task / "ui_messages.json") == task / "ui_messages.json"
    assert reader.source_for(task / "api_conversation_history.json") is None
    assert reader.source_for(task / "task_metadata.json") is None
    roo = tmp_path / "rooveterinaryinc.roo-cline" / "tasks" / "17" / "ui_messages.json"
    assert reader.source_for(roo) is None
    cli = tmp_path / "sessions" / CLI_ID
    messages = cli / f"{CLI_ID}.messages.json"
    assert reader.source_for(messages) == messages
    assert reader.source_for(cli / f"{CLI_ID}.json") == messages
    assert reader.source_for(cli / "subagent-1.messages.json") is None


def test_discover_finds_every_task(tmp_path: Path) -> None:
    first = _task(tmp_path, [], "1")
    second = _task(tmp_path, [], "2")
    assert list(reader.discover(tmp_path / EXT)) == [first, second]


def test_roots_cover_editors_and_the_cli_env_vars(tmp_path: Path) -> None:
    home = tmp_path
    linux = reader.roots(HostEnv(home=home, environ={}, platform="linux"))
    assert home / ".config" / EXT in linux
    assert home / ".config" / "Cursor/User/globalStorage/saoudrizwan.claude-dev" in linux
    assert home / ".cline" / "data" / "sessions" in linux
    mac = reader.roots(HostEnv(home=home, environ={}, platform="darwin"))
    assert home / "Library" / "Application Support" / EXT in mac
    win = reader.roots(HostEnv(home=home, environ={"APPDATA": "C:/AppData"}, platform="win32"))
    assert Path("C:/AppData") / EXT in win
    moved = reader.roots(HostEnv(home=home, environ={"CLINE_DIR": "/opt/cline"}))
    assert Path("/opt/cline/data/sessions") in moved
    data = reader.roots(HostEnv(home=home, environ={"CLINE_DATA_DIR": "/d", "CLINE_DIR": "/x"}))
    assert Path("/d/sessions") in data and Path("/x/data/sessions") not in data
    own = reader.roots(
        HostEnv(home=home, environ={"CLINE_SESSION_DATA_DIR": "/s", "CLINE_DIR": "/x"})
    )
    assert Path("/s") in own and Path("/x/data/sessions") not in own


def test_a_sessions_folder_moved_by_cline_session_data_dir_is_read(tmp_path: Path) -> None:
    # (The format notes: CLINE_SESSION_DATA_DIR moves only the sessions folder, any name.)
    moved = tmp_path / "cline-sessions"
    messages = _cli(tmp_path)
    shutil.move(messages.parent.parent, moved)
    root = reader.roots(HostEnv(home=tmp_path, environ={"CLINE_SESSION_DATA_DIR": str(moved)}))[-1]
    assert root == moved
    found = list(reader.discover(root))
    assert found == [moved / CLI_ID / f"{CLI_ID}.messages.json"]
    assert reader.source_for(moved / CLI_ID / f"{CLI_ID}.json") == found[0]
    assert role_counts(read_fresh(reader, found[0])) == {"user": 1, "assistant": 2}


def test_discover_finds_cli_sessions_with_a_messages_file(tmp_path: Path) -> None:
    messages = _cli(tmp_path)
    waiting = tmp_path / ".cline" / "data" / "sessions" / "2_x"
    waiting.mkdir()
    (waiting / "2_x.json").write_text("{}")  # manifest written, no messages yet
    assert list(reader.discover(tmp_path / ".cline" / "data" / "sessions")) == [messages]
