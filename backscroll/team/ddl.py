"""The PostgreSQL schema of the team database, printed by ``backscroll team init``.

One table of turns keyed by (machine id, host, session id, turn key), a
generated ``tsvector`` with a GIN index for full-text search, and row-level
security: members (roles granted ``backscroll_member``) read the team's rows
except other members' private ones, and insert, change or delete only rows
they own (``owner`` is the database role that wrote the row).
"""

from __future__ import annotations

import re

#: The schema version this backscroll writes and reads.
SCHEMA_VERSION = 1
MEMBER_ROLE = "backscroll_member"

SCHEMA_SQL = f"""\
-- backscroll team schema, version {SCHEMA_VERSION}. Run once, as the database owner:
--   backscroll team init | psql postgresql://OWNER@HOST/DB
-- Safe to run again: it changes nothing that is already there.
BEGIN;
CREATE SCHEMA IF NOT EXISTS backscroll;
CREATE TABLE IF NOT EXISTS backscroll.meta (key text PRIMARY KEY, value text NOT NULL);
INSERT INTO backscroll.meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}')
    ON CONFLICT (key) DO NOTHING;
CREATE TABLE IF NOT EXISTS backscroll.turns (
    machine_id text NOT NULL,
    host text NOT NULL,
    session_id text NOT NULL,
    turn_key text NOT NULL,
    owner text NOT NULL DEFAULT current_user,
    private boolean NOT NULL DEFAULT false,
    project text,
    title text,
    resume_command text,
    role text NOT NULL,
    ts double precision,
    text text NOT NULL,
    tainted boolean NOT NULL DEFAULT false,
    subagent boolean NOT NULL DEFAULT false,
    published_at timestamptz NOT NULL DEFAULT now(),
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    PRIMARY KEY (machine_id, host, session_id, turn_key)
);
CREATE INDEX IF NOT EXISTS turns_tsv ON backscroll.turns USING gin (tsv);
CREATE INDEX IF NOT EXISTS turns_ts ON backscroll.turns (ts);
DO $$ BEGIN
    CREATE ROLE {MEMBER_ROLE} NOLOGIN;
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;
GRANT USAGE ON SCHEMA backscroll TO {MEMBER_ROLE};
GRANT SELECT ON backscroll.meta TO {MEMBER_ROLE};
GRANT SELECT, INSERT, UPDATE, DELETE ON backscroll.turns TO {MEMBER_ROLE};
ALTER TABLE backscroll.turns ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS team_read ON backscroll.turns;
CREATE POLICY team_read ON backscroll.turns FOR SELECT TO {MEMBER_ROLE}
    USING (NOT private OR owner = current_user);
DROP POLICY IF EXISTS own_insert ON backscroll.turns;
CREATE POLICY own_insert ON backscroll.turns FOR INSERT TO {MEMBER_ROLE}
    WITH CHECK (owner = current_user);
DROP POLICY IF EXISTS own_update ON backscroll.turns;
CREATE POLICY own_update ON backscroll.turns FOR UPDATE TO {MEMBER_ROLE}
    USING (owner = current_user) WITH CHECK (owner = current_user);
DROP POLICY IF EXISTS own_delete ON backscroll.turns;
CREATE POLICY own_delete ON backscroll.turns FOR DELETE TO {MEMBER_ROLE}
    USING (owner = current_user);
COMMIT;
"""

_ROLE_NAME = re.compile(r"[a-z_][a-z0-9_$]{0,62}")


def member_sql(name: str) -> str:
    """SQL that makes ``name`` a login role and a member (no password: set one
    with psql's ``\\password NAME``, or use certificate/peer authentication)."""
    if not _ROLE_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a plain role name; use lower-case letters, digits and _")
    return (
        f"DO $$ BEGIN\n    CREATE ROLE {name} LOGIN;\n"
        f"EXCEPTION WHEN duplicate_object THEN NULL;\nEND $$;\n"
        f"GRANT {MEMBER_ROLE} TO {name};\n"
    )


def init_sql(members: list[str]) -> str:
    return SCHEMA_SQL + "".join(member_sql(m) for m in members)
