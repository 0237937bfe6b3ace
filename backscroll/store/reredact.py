"""Redact what an index stored before its titles, memos and notes were redacted.

Turn text has always been redacted on its way in; session titles, resume
commands, turn notes, the readers' saved memos (``files.state``) and recorded
errors were not. Once per index (``meta.redacted_fields``), with redaction on,
those columns are passed through the redactor and, when anything changed, the
file is scrubbed so the old values leave its bytes too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from backscroll.store.writer import IndexWriter

#: Bump when more stored fields come under redaction.
VERSION = "1"
_KEY = "redacted_fields"

Redact = Callable[[str], str]
RedactState = Callable[[Any], Any]


def needed(writer: IndexWriter) -> bool:
    row = writer.conn.execute("SELECT value FROM meta WHERE key = ?", (_KEY,)).fetchone()
    return not row or row[0] != VERSION


def run(writer: IndexWriter, redact: Redact, redact_state: RedactState) -> int:
    """Redact the stored fields once; the number of rows changed."""
    conn = writer.conn
    changed = 0
    with writer.transaction():
        for rowid, title, resume in conn.execute(
            "SELECT id, title, resume_command FROM sessions"
        ).fetchall():
            new = (_r(redact, title), _r(redact, resume))
            if new != (title, resume):
                conn.execute(
                    "UPDATE sessions SET title = ?, resume_command = ? WHERE id = ?", (*new, rowid)
                )
                changed += 1
        for rowid, note in conn.execute(
            "SELECT id, note FROM turns WHERE note IS NOT NULL AND note != ''"
        ).fetchall():
            if redact(note) != note:
                conn.execute("UPDATE turns SET note = ? WHERE id = ?", (redact(note), rowid))
                changed += 1
        for rowid, state, error in conn.execute("SELECT id, state, error FROM files").fetchall():
            new_state, new_error = state, _r(redact, error)
            try:
                parsed = json.loads(state) if state else None
            except ValueError:
                parsed = None
            if parsed is not None:
                cleaned = redact_state(parsed)
                if cleaned != parsed:
                    new_state = json.dumps(cleaned, separators=(",", ":"))
            if (new_state, new_error) != (state, error):
                conn.execute(
                    "UPDATE files SET state = ?, error = ? WHERE id = ?",
                    (new_state, new_error, rowid),
                )
                changed += 1
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (_KEY, VERSION))
    if changed:
        # (imported here: a first index, which has nothing stored yet, runs this
        # before its reader processes get their first files)
        from backscroll.store import forget

        forget.scrub(writer)
    return changed


def _r(redact: Redact, value: Any) -> Any:
    return redact(value) if isinstance(value, str) and value else value


_UNREDACTED = "unredacted_text"


def note_unredacted(writer: IndexWriter) -> None:
    """This index is about to hold text read with redaction off (until a rebuild
    reads it again): it is never published to a team database."""
    with writer.transaction():
        writer.conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES (?, '1')", (_UNREDACTED,)
        )


def holds_unredacted(writer: IndexWriter) -> bool:
    row = writer.conn.execute("SELECT 1 FROM meta WHERE key = ?", (_UNREDACTED,)).fetchone()
    return row is not None
