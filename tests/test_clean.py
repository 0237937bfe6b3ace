"""What a read goes through before it is stored (indexing/clean.py): every turn's
text and note redacted, lone surrogates replaced wherever they are, and a turn
with nothing to change passed on as it is."""

from __future__ import annotations

from backscroll.indexing.clean import clean
from backscroll.model import ReadResult, Session, Turn
from backscroll.redact import Redactor, planted_secrets

SECRET = planted_secrets()["github-token"]


def _one(turn: Turn, redactor: Redactor | None = None) -> Turn:
    result = clean(ReadResult(turns=(turn,), sessions=(Session("s1"),)), redactor, ())
    (out,) = result.turns
    return out


def test_a_secret_in_a_turns_text_or_note_is_redacted() -> None:
    turn = Turn("s1", "k1", "user", f"deploy with {SECRET} now", note=f"copied {SECRET}")
    out = _one(turn, Redactor())
    assert SECRET not in out.text and "[REDACTED:github-token]" in out.text
    assert out.note is not None and SECRET not in out.note
    assert (out.session_id, out.key, out.role) == ("s1", "k1", "user")


def test_a_secret_in_non_ascii_text_is_redacted_and_the_rest_kept() -> None:
    out = _one(Turn("s1", "k1", "user", f"clé: {SECRET} — merci"), Redactor())
    assert out.text == "clé: [REDACTED:github-token] — merci"


def test_lone_surrogates_are_replaced_in_ids_text_and_note() -> None:
    turn = Turn("s\udc80", "k\ud800", "user", "bad \udcff byte", note="n\udc81")
    for redactor in (None, Redactor()):
        out = _one(turn, redactor)
        values = (out.session_id, out.key, out.text, out.note)
        for value in values:
            assert value is not None
            value.encode("utf-8")  # (raises on a lone surrogate)
            assert "\ufffd" in value
        assert [v.replace("\ufffd", "") for v in values if v] == ["s", "k", "bad  byte", "n"]


def test_a_turn_with_nothing_to_change_is_passed_on_unchanged() -> None:
    turn = Turn("s1", "k1", "assistant", "plain prose, no secret", timestamp=1.5, seq=3)
    assert _one(turn, Redactor()) is turn
    non_ascii = Turn("s1", "k2", "user", "naïve café prose")
    assert _one(non_ascii, Redactor()) is non_ascii
