"""A reader's saved memo (``files.state``) keeps its ids and paths and loses its
prose: redaction touches only the prose, a kept-out or forgotten session leaves
none there, and ``exclude.projects`` reaches everything under a project, with
``~`` expanded."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.daemon.harness import run_cli, session_uuid
from tests.test_privacy_copies import data_bytes, write_session

OLD = "zebracornflakes"
NEW = "walrusplatypus"
CODEX_ID = "019e0000-0000-7000-8000-000000000001"


def write_config(home: Path, text: str) -> None:
    path = home / ".config" / "backscroll" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def nowhere_in_the_data(tmp_path: Path, *words: str) -> None:
    for name, data in data_bytes(tmp_path / "data").items():
        for word in words:
            assert word.encode() not in data, f"{word!r} found in {name}"


def codex_rollout(home: Path, cwd: str, *prompts: str, meta: bool = True) -> Path:
    path = home / ".codex" / "sessions" / "2026" / "03" / "02"
    path.mkdir(parents=True, exist_ok=True)
    path /= f"rollout-2026-03-02T10-00-00-{CODEX_ID}.jsonl"
    lines = []
    if meta:
        lines.append({"timestamp": "2026-03-02T10:00:00Z", "type": "session_meta",
                      "payload": {"id": CODEX_ID, "timestamp": "2026-03-02T10:00:00Z",
                                  "cwd": cwd}})  # fmt: skip
    for n, text in enumerate(prompts):
        lines.append({"timestamp": f"2026-03-02T10:00:{n + 1:02d}Z", "type": "event_msg",
                      "payload": {"type": "user_message", "message": text}})  # fmt: skip
    with open(path, "a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(line) + "\n" for line in lines)
    return path


def claude_prompt(sid: str, n: int, cwd: str, text: str, when: str) -> str:
    uuid = f"{n:08x}-0000-4000-8000-000000000001"
    entry = {"type": "user", "uuid": uuid, "sessionId": sid, "cwd": cwd, "timestamp": when,
             "message": {"role": "user", "content": text}}  # fmt: skip
    return json.dumps(entry) + "\n"


def memos(tmp_path: Path) -> list[dict[str, object]]:
    conn = sqlite3.connect(tmp_path / "data" / "index.db")
    try:
        return [json.loads(r[0]) for r in conn.execute("SELECT state FROM files")]
    finally:
        conn.close()


def test_a_session_kept_out_leaves_no_prompt_in_the_memo_as_it_grows_or_is_rebuilt(
    tmp_path: Path, isolated_home: Path
) -> None:
    first = [("user", f"plan the {OLD} migration", "2026-03-01T10:00:00Z")]
    path = write_session(isolated_home, 7, first)
    assert run_cli(tmp_path, "index").returncode == 0
    forgot = run_cli(tmp_path, "forget", "--session", session_uuid(7), "--and-exclude")
    assert forgot.returncode == 0, forgot.stderr
    nowhere_in_the_data(tmp_path, OLD)
    write_session(isolated_home, 7, [("user", f"now the {NEW} plan", "2026-03-01T11:00:00Z")])
    assert run_cli(tmp_path, "index").returncode == 0
    nowhere_in_the_data(tmp_path, OLD, NEW)
    assert run_cli(tmp_path, "index", "--rebuild").returncode == 0
    nowhere_in_the_data(tmp_path, OLD, NEW)
    assert path.exists()


def test_a_forgotten_codex_project_stays_out_when_its_rollout_grows(
    tmp_path: Path, isolated_home: Path
) -> None:
    # Codex names the working directory once, in the rollout's first line: the
    # memo must keep it, or the next prompt would belong to no project.
    path = codex_rollout(isolated_home, "/home/u/other", f"first {OLD} prompt")
    assert run_cli(tmp_path, "index").returncode == 0
    forgot = run_cli(tmp_path, "forget", "--project", "/home/u/other", "--and-exclude")
    assert forgot.returncode == 0, forgot.stderr
    codex_rollout(isolated_home, "", f"second {NEW} prompt", meta=False)
    assert run_cli(tmp_path, "index").returncode == 0
    assert run_cli(tmp_path, "search", NEW).returncode == 1
    nowhere_in_the_data(tmp_path, OLD, NEW)
    assert path.exists()


def test_redaction_leaves_the_memos_ids_and_paths_alone(
    tmp_path: Path, isolated_home: Path
) -> None:
    # A user's pattern that happens to match part of a session id and of the
    # working directory: the memo keeps both, so the next prompt joins the same
    # session and project, and only prose is redacted.
    write_config(isolated_home, 'redaction:\n  patterns:\n    customer: "acme"\n')
    sid = "4f2a9c1e-8b3d-4e5f-9a7b-acme17365d2c"
    path = isolated_home / ".claude" / "projects" / "-work-acme-app" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)

    cwd = "/work/acme/app"
    path.write_text(claude_prompt(sid, 1, cwd, "ship the acme build", "2026-03-01T10:00:00Z"))
    assert run_cli(tmp_path, "index").returncode == 0
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(claude_prompt(sid, 2, cwd, "and the follow-up", "2026-03-01T11:00:00Z"))
    assert run_cli(tmp_path, "index").returncode == 0
    listed = json.loads(run_cli(tmp_path, "sessions", "--json").stdout)["sessions"]
    assert [(s["session_id"], s["project"]) for s in listed] == [(sid, "/work/acme/app")]
    assert listed[0]["title"] == "ship the [REDACTED:customer] build"
    (memo,) = memos(tmp_path)
    assert memo["sid"] == sid and memo["cwd"] == "/work/acme/app"
    assert memo["title"] == "ship the [REDACTED:customer] build"


def test_excluded_projects_reach_their_subdirectories_and_expand_the_home_tilde(
    tmp_path: Path, isolated_home: Path
) -> None:
    write_config(
        isolated_home,
        "exclude:\n  projects: ['~/secretproj']\n  paths: ['~/.claude/projects/-p3/*']\n",
    )
    secret = str(isolated_home / "secretproj" / "backend")
    other = str(isolated_home / "secretproj-other")
    for n, cwd in ((1, secret), (2, other), (3, other)):
        sid = session_uuid(n)
        path = isolated_home / ".claude" / "projects" / f"-p{n}" / f"{sid}.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(claude_prompt(sid, n, cwd, f"{OLD} {n}", "2026-03-01T10:00:00Z"))
    assert run_cli(tmp_path, "index").returncode == 0
    found = json.loads(run_cli(tmp_path, "search", OLD, "--json").stdout)
    assert [h["project"] for h in found["hits"]] == [str(isolated_home / "secretproj-other")]
    stored = b"".join(data_bytes(tmp_path / "data").values())
    assert f"{OLD} 1".encode() not in stored and f"{OLD} 3".encode() not in stored


def test_a_rebuild_redacts_the_memos_of_the_files_it_keeps(
    tmp_path: Path, isolated_home: Path
) -> None:
    first = [("user", "deploy with ACMEKEY-778899-QQQ now", "2026-03-01T10:00:00Z")]
    path = write_session(isolated_home, 9, first)
    assert run_cli(tmp_path, "index").returncode == 0
    path.unlink()  # the host pruned it: the rebuild keeps its history from the old index
    write_config(isolated_home, 'redaction:\n  patterns:\n    acme: "ACMEKEY-[0-9]+-[A-Z]+"\n')
    assert run_cli(tmp_path, "index", "--rebuild").returncode == 0
    (tmp_path / "data" / "index.db.old").unlink()
    nowhere_in_the_data(tmp_path, "ACMEKEY-778899")
    (memo,) = memos(tmp_path)
    assert memo["title"] == "deploy with [REDACTED:acme] now"


def test_a_session_that_goes_on_after_forget_gets_its_next_prompt_as_title(
    tmp_path: Path, isolated_home: Path
) -> None:
    # The memo's title goes with the forgotten turns, and so does its rank: a
    # later prompt titles the session again.
    write_session(
        isolated_home, 11, [("user", f"plan the {OLD} migration", "2026-03-01T10:00:00Z")]
    )
    assert run_cli(tmp_path, "index").returncode == 0
    assert run_cli(tmp_path, "forget", "--session", session_uuid(11)).returncode == 0
    write_session(
        isolated_home, 11, [("user", "a new topic after forgetting", "2026-03-01T11:00:00Z")], 1
    )
    assert run_cli(tmp_path, "index").returncode == 0
    listed = json.loads(run_cli(tmp_path, "sessions", "--json").stdout)["sessions"]
    assert [s["title"] for s in listed] == ["a new topic after forgetting"]
    nowhere_in_the_data(tmp_path, OLD)
