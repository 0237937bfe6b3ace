"""The reader/store contract's types: ``Turn`` writes its constructor out (for
speed), so it must stay the one its fields describe, immutable and picklable."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest

from backscroll.model import TURN_FIELD_NAMES, Turn


def test_turns_constructor_takes_its_fields_in_order_with_their_defaults() -> None:
    params = list(inspect.signature(Turn.__init__).parameters.values())[1:]
    assert [p.name for p in params] == list(TURN_FIELD_NAMES)
    for param, f in zip(params, dataclasses.fields(Turn), strict=True):
        expected = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        assert param.default == expected, f.name


def test_a_turn_built_by_keyword_or_position_holds_every_value() -> None:
    values = {
        "session_id": "s1",
        "key": "k1",
        "role": "assistant",
        "text": "hello",
        "timestamp": 12.5,
        "seq": 7,
        "tainted": True,
        "subagent": True,
        "note": "a note",
    }
    assert list(values) == list(TURN_FIELD_NAMES)
    for turn in (Turn(**values), Turn(*values.values())):  # type: ignore[arg-type]
        assert dataclasses.asdict(turn) == values
    assert Turn(**values) == Turn(*values.values())  # type: ignore[arg-type]
    assert hash(Turn(**values)) == hash(Turn(*values.values()))  # type: ignore[arg-type]


def test_a_turn_is_immutable_and_survives_pickling_and_replace() -> None:
    turn = Turn("s1", "k1", "user", "text", seq=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        turn.text = "other"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(turn, pickle.HIGHEST_PROTOCOL)) == turn
    changed = dataclasses.replace(turn, text="new")
    assert (changed.text, changed.seq, turn.text) == ("new", 2, "text")
    with pytest.raises(TypeError):
        Turn("s1", "k1")  # type: ignore[call-arg]
