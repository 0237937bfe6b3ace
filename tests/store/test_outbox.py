"""The team outbox: triggers record each committed change to a turn in the
same transaction, only while the team is on; a batch resolves to the turns as
they are now; an ack drops only what was sent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backscroll.store import forget, open_writer, outbox
from backscroll.store.writer import IndexWriter
from tests.store.test_writer import _turn, _update


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[IndexWriter]:
    w = open_writer(tmp_path / "index.db")
    yield w
    w.close()


def keys(batch: outbox.OutboxBatch) -> list[tuple[str, str, bool]]:
    return [(t.session_id, t.turn_key, t.gone) for t in batch.turns]


def test_nothing_is_recorded_while_the_team_is_off(writer: IndexWriter) -> None:
    writer.apply(_update(writer, [_turn(1), _turn(2)]))
    assert not outbox.is_enabled(writer)
    assert outbox.stats(writer).pending == 0


def test_turning_the_team_on_queues_what_is_already_indexed_once(writer: IndexWriter) -> None:
    writer.apply(_update(writer, [_turn(1), _turn(2)]))
    assert outbox.enable(writer) == 2
    assert outbox.enable(writer) == 0  # already on: nothing queued twice
    batch = outbox.read_batch(writer, 10)
    assert keys(batch) == [("s1", "k1", False), ("s1", "k2", False)]
    assert batch.turns[0].text == "turn number 1" and batch.oldest is not None


def test_inserts_changes_and_deletes_are_recorded_and_resolve_to_the_current_turn(
    writer: IndexWriter,
) -> None:
    outbox.enable(writer)
    writer.apply(_update(writer, [_turn(1), _turn(2)], size=100))
    writer.apply(_update(writer, [_turn(1, "changed text")], size=200, replace=True))
    batch = outbox.read_batch(writer, 100)
    # k1 inserted then changed: one entry, with the new text; k2 inserted then deleted: gone.
    assert sorted(keys(batch)) == [("s1", "k1", False), ("s1", "k2", True)]
    assert next(t for t in batch.turns if t.turn_key == "k1").text == "changed text"
    assert outbox.stats(writer).pending == 4


def test_a_rolled_back_write_leaves_no_outbox_row(writer: IndexWriter) -> None:
    outbox.enable(writer)
    with pytest.raises(RuntimeError), writer.transaction():
        writer.apply(_update(writer, [_turn(1)]))
        raise RuntimeError("crash before commit")
    assert outbox.stats(writer).pending == 0


def test_forgetting_a_session_records_a_delete_for_each_of_its_turns(
    writer: IndexWriter,
) -> None:
    writer.apply(_update(writer, [_turn(1), _turn(2), _turn(3, session="s2")]))
    outbox.enable(writer)
    outbox.ack(writer, outbox.read_batch(writer, 100).last_id)
    forget.forget(writer, forget.Selection(session="s1"))
    batch = outbox.read_batch(writer, 100)
    assert sorted(keys(batch)) == [("s1", "k1", True), ("s1", "k2", True)]


def test_an_ack_drops_only_the_rows_the_batch_covered(writer: IndexWriter) -> None:
    outbox.enable(writer)
    writer.apply(_update(writer, [_turn(1), _turn(2), _turn(3)]))
    first = outbox.read_batch(writer, 2)
    assert len(first.turns) == 2
    writer.apply(_update(writer, [_turn(4)], size=200))
    assert outbox.ack(writer, first.last_id) == 2
    assert [t.turn_key for t in outbox.read_batch(writer, 10).turns] == ["k3", "k4"]


def test_turning_the_team_off_stops_recording_and_drops_the_queue(writer: IndexWriter) -> None:
    outbox.enable(writer)
    writer.apply(_update(writer, [_turn(1)]))
    outbox.disable(writer)
    writer.apply(_update(writer, [_turn(2)], size=200))
    assert outbox.stats(writer).pending == 0 and not outbox.is_enabled(writer)


def test_changed_team_settings_queue_every_turn_again(writer: IndexWriter) -> None:
    writer.apply(_update(writer, [_turn(1), _turn(2)]))
    assert outbox.enable(writer, "exclude:none") == 2
    outbox.ack(writer, outbox.read_batch(writer, 10).last_id)
    assert outbox.enable(writer, "exclude:none") == 0
    assert outbox.enable(writer, "exclude:/p") == 2
