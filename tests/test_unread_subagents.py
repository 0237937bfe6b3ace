"""A sub-agent's transcript is claimed and left unread while ``include_subagents``
is off: a pass that finds it unchanged, or grown, neither reads nor writes it;
turning the option on reads it whole. And a transcript moved away and back is
indexed under its path again."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from backscroll import config, direct

PARENT = "019e1625-0000-7000-8000-000000000001"
CHILD = "019e1625-0000-7000-8000-0000000000c1"
SID = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"


def _line(ts: str, kind: str, payload: Mapping[str, object]) -> str:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload}) + "\n"


def _codex_child(home: Path, steps: int) -> Path:
    path = home / ".codex" / "sessions" / "2026" / "05" / "11"
    path.mkdir(parents=True, exist_ok=True)
    path /= f"rollout-2026-05-11T08-00-00-{CHILD}.jsonl"
    source = {"subagent": {"thread_spawn": {"parent_thread_id": PARENT}}}
    text = _line("2026-05-11T08:00:00Z", "session_meta", {"id": CHILD, "cwd": "/home/u/p",
                                                          "source": source})  # fmt: skip
    text += _line("2026-05-11T08:00:00Z", "turn_context", {"cwd": "/home/u/p"})
    for i in range(steps):
        content = [{"type": "output_text", "text": f"sub-agent step {i} " + "x" * 200}]
        text += _line("2026-05-11T08:00:01Z", "response_item",
                      {"type": "message", "role": "assistant", "content": content})  # fmt: skip
    path.write_text(text)
    _age(path)
    return path


def _claude_child(home: Path) -> Path:
    path = home / ".claude" / "projects" / "-home-u-p" / SID / "subagents" / "agent-a1.jsonl"
    path.parent.mkdir(parents=True)
    reply = {"role": "assistant", "content": [{"type": "text", "text": "found it"}]}
    uuid = "00000000-0000-4000-8000-0000000000a1"
    entry = {"type": "assistant", "uuid": uuid, "sessionId": SID, "isSidechain": True,
             "timestamp": "2026-05-11T08:00:01Z", "message": reply}  # fmt: skip
    path.write_text(json.dumps(entry) + "\n")
    _age(path)
    return path


def _age(path: Path) -> None:
    """Quiet for a while: a last line without its newline would be worth a read."""
    old = path.stat().st_mtime - 60
    os.utime(path, (old, old))


def _with_subagents(home: Path) -> config.Config:
    cfg = home / ".config" / "backscroll" / "config.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("hosts:\n  codex:\n    include_subagents: true\n"
                   "  claude-code:\n    include_subagents: true\n")  # fmt: skip
    return config.load()


def test_an_unread_sub_agent_transcript_is_left_alone_until_the_option_is_on(
    isolated_home: Path,
) -> None:
    child = _codex_child(isolated_home, steps=2000)
    _claude_child(isolated_home)
    cfg = config.load()
    first, _ = direct.index(cfg)
    assert first.files_changed == 2 and first.turns_added == 0
    again, _ = direct.index(cfg)
    assert (again.files_changed, again.bytes_read) == (0, 0)
    with open(child, "a", encoding="utf-8") as fh:  # the sub-agent goes on working
        more = [{"type": "output_text", "text": "more"}]
        message = {"type": "message", "role": "assistant", "content": more}
        fh.write(_line("2026-05-11T08:00:02Z", "response_item", message))
    _age(child)
    grown, _ = direct.index(cfg)
    assert (grown.files_changed, grown.bytes_read) == (0, 0)
    on, _ = direct.index(_with_subagents(isolated_home))
    assert on.files_changed == 2 and on.turns_added == 2000 + 1 + 1


def test_a_transcript_moved_away_and_back_is_indexed_under_its_path_again(
    isolated_home: Path,
) -> None:
    sessions = isolated_home / ".codex" / "sessions" / "2026" / "05" / "11"
    archived = isolated_home / ".codex" / "archived_sessions"
    sessions.mkdir(parents=True)
    archived.mkdir(parents=True)
    name = f"rollout-2026-05-11T08-00-00-{PARENT}.jsonl"
    path = sessions / name
    path.write_text(
        _line("2026-05-11T08:00:00Z", "session_meta", {"id": PARENT, "cwd": "/home/u/p"})
        + _line(
            "2026-05-11T08:00:01Z",
            "event_msg",
            {"type": "user_message", "message": "archive me and back"},
        )
    )
    _age(path)
    cfg = config.load()
    direct.index(cfg)
    path.rename(archived / name)  # codex archive
    direct.index(cfg)
    (archived / name).rename(path)  # and unarchive
    direct.index(cfg)
    conn = sqlite3.connect(cfg.db_path())
    try:
        rows = conn.execute(
            "SELECT f.path, f.missing FROM turns t JOIN files f ON f.id = t.file"
        ).fetchall()
        missing = dict(conn.execute("SELECT path, missing FROM files").fetchall())
    finally:
        conn.close()
    assert rows == [(str(path), 0)], "the turn still belongs to the archived copy"
    assert missing[str(path)] == 0 and missing[str(archived / name)] == 1


def _claude_parent_and_child(home: Path, cwd: str) -> None:
    folder = home / ".claude" / "projects" / "-work-secret"
    (folder / SID / "subagents").mkdir(parents=True)

    def entry(uuid: str, kind: str, text: str, sidechain: bool) -> str:
        content = text if kind == "user" else [{"type": "text", "text": text}]
        return json.dumps({"type": kind, "uuid": uuid, "sessionId": SID, "cwd": cwd,
                           "isSidechain": sidechain, "timestamp": "2026-05-11T08:00:01Z",
                           "message": {"role": kind, "content": content}}) + "\n"  # fmt: skip

    (folder / f"{SID}.jsonl").write_text(
        entry("00000000-0000-4000-8000-000000000001", "user", "the secret plan", False)
    )
    (folder / SID / "subagents" / "agent-a1.jsonl").write_text(
        entry("00000000-0000-4000-8000-0000000000a1", "assistant", "sub-agent zebrafound", True)
    )


def test_a_sub_agents_turns_are_kept_out_with_the_excluded_project_it_ran_in(
    isolated_home: Path,
) -> None:
    _claude_parent_and_child(isolated_home, "/work/secret")
    child = _codex_child(isolated_home, steps=1)
    cfg = isolated_home / ".config" / "backscroll" / "config.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("exclude:\n  projects: [/work/secret, /home/u/p]\n"
                   "hosts:\n  codex:\n    include_subagents: true\n"
                   "  claude-code:\n    include_subagents: true\n")  # fmt: skip
    direct.index(config.load())
    for word in ("zebrafound", "sub-agent step"):
        assert direct.query(config.load(), "search", {"query": word})["hits"] == [], word
    assert child.exists()


def test_forget_and_exclude_keeps_a_later_sub_agent_out_of_the_forgotten_project(
    isolated_home: Path, tmp_path: Path
) -> None:
    from tests.daemon.harness import run_cli

    cfg = isolated_home / ".config" / "backscroll" / "config.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("hosts:\n  claude-code:\n    include_subagents: true\n")
    folder = isolated_home / ".claude" / "projects" / "-work-secret"
    folder.mkdir(parents=True)
    (folder / f"{SID}.jsonl").write_text(json.dumps({
        "type": "user", "uuid": "00000000-0000-4000-8000-000000000001", "sessionId": SID,
        "cwd": "/work/secret", "timestamp": "2026-05-11T08:00:00Z",
        "message": {"role": "user", "content": "the secret plan"}}) + "\n")  # fmt: skip
    env = {"HOME": str(isolated_home), "BACKSCROLL_HOME": str(tmp_path / "data"),
           "XDG_CONFIG_HOME": str(isolated_home / ".config")}  # fmt: skip
    assert run_cli(tmp_path, "index", env=env).returncode == 0
    forgot = run_cli(tmp_path, "forget", "--project", "/work/secret", "--and-exclude", env=env)
    assert forgot.returncode == 0, forgot.stderr
    (folder / f"{SID}.jsonl").unlink()
    # A new sub-agent, run in a directory under the forgotten project, then
    _claude_parent_and_child(isolated_home, "/work/secret/pkg")
    (folder / f"{SID}.jsonl").unlink()  # (its parent's transcript is gone)
    assert run_cli(tmp_path, "index", env=env).returncode == 0
    assert run_cli(tmp_path, "search", "zebrafound", env=env).returncode == 1


def test_a_kimi_sub_agents_turns_are_kept_out_with_its_parents_excluded_project(
    isolated_home: Path,
) -> None:
    fixtures = Path(__file__).parent / "fixtures" / "kimi-cli"
    session = isolated_home / ".kimi" / "sessions" / "fcfa19e37c9d6520c81afdca5fc8af94"
    session /= "0c9d7a52-6e1b-4f3a-8d24-51b7e0a9c6f3"
    (session / "subagents" / "coder").mkdir(parents=True)
    shutil.copy(fixtures / "constructed-kimi.json", isolated_home / ".kimi" / "kimi.json")
    shutil.copy(fixtures / "constructed-wire.jsonl", session / "wire.jsonl")
    records = [
        {"type": "metadata", "protocol_version": "1.10"},
        {"timestamp": 1785300100.0, "message": {"type": "TurnBegin",
                                                "payload": {"user_input": "task"}}},
        {"timestamp": 1785300101.0, "message": {"type": "ContentPart", "payload":
                                                {"type": "text", "text": "sub-agent zebrafound"}}},
        {"timestamp": 1785300102.0, "message": {"type": "TurnEnd", "payload": {}}},
    ]  # fmt: skip
    wire = session / "subagents" / "coder" / "wire.jsonl"
    wire.write_text("".join(json.dumps(r) + "\n" for r in records))
    for path in (wire, session / "wire.jsonl"):
        _age(path)
    cfg = isolated_home / ".config" / "backscroll" / "config.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    project = json.loads((fixtures / "constructed-kimi.json").read_text())["work_dirs"][0]["path"]
    cfg.write_text(f"exclude:\n  projects: ['{project}']\n"
                   "hosts:\n  kimi-cli:\n    include_subagents: true\n")  # fmt: skip
    direct.index(config.load())
    assert direct.query(config.load(), "search", {"query": "zebrafound"})["hits"] == []
