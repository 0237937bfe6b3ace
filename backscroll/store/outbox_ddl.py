"""The team outbox's table and triggers (store/outbox.py says what they do).

Apart from the outbox itself: every new index creates them (schema 6), and a
first index should not import the publisher's side to do so.
"""

from __future__ import annotations

_ON = "(SELECT value FROM meta WHERE key = 'team_outbox') = '1'"
_NOW = "(julianday('now') - 2440587.5) * 86400.0"

OUTBOX_DDL: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS team_outbox ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, host TEXT NOT NULL, session_id TEXT NOT NULL,"
    " turn_key TEXT NOT NULL, created_at REAL NOT NULL)",
    f"""CREATE TRIGGER IF NOT EXISTS team_outbox_turn_ai AFTER INSERT ON turns WHEN {_ON}
    BEGIN
        INSERT INTO team_outbox (host, session_id, turn_key, created_at)
        SELECT s.host, s.session_id, new.key, {_NOW} FROM sessions s WHERE s.id = new.session;
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS team_outbox_turn_au AFTER UPDATE ON turns WHEN {_ON}
    BEGIN
        INSERT INTO team_outbox (host, session_id, turn_key, created_at)
        SELECT s.host, s.session_id, new.key, {_NOW} FROM sessions s WHERE s.id = new.session;
        INSERT INTO team_outbox (host, session_id, turn_key, created_at)
        SELECT s.host, s.session_id, old.key, {_NOW} FROM sessions s
        WHERE s.id = old.session AND (old.key IS NOT new.key OR old.session IS NOT new.session);
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS team_outbox_turn_ad AFTER DELETE ON turns WHEN {_ON}
    BEGIN
        INSERT INTO team_outbox (host, session_id, turn_key, created_at)
        SELECT s.host, s.session_id, old.key, {_NOW} FROM sessions s WHERE s.id = old.session;
    END""",
    # A session deleted with its turns (a cascade) is gone before the turns'
    # AFTER DELETE trigger could name it, so its turns are recorded first.
    f"""CREATE TRIGGER IF NOT EXISTS team_outbox_session_bd BEFORE DELETE ON sessions
    WHEN {_ON}
    BEGIN
        INSERT INTO team_outbox (host, session_id, turn_key, created_at)
        SELECT old.host, old.session_id, t.key, {_NOW} FROM turns t WHERE t.session = old.id;
    END""",
    # Project, title and resume command travel with each remote turn.
    f"""CREATE TRIGGER IF NOT EXISTS team_outbox_session_au AFTER UPDATE ON sessions
    WHEN {_ON} AND (old.project IS NOT new.project OR old.title IS NOT new.title
        OR old.resume_command IS NOT new.resume_command)
    BEGIN
        INSERT INTO team_outbox (host, session_id, turn_key, created_at)
        SELECT new.host, new.session_id, t.key, {_NOW} FROM turns t WHERE t.session = new.id;
    END""",
)
