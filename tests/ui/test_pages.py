"""What each page shows, read over HTTP from a real daemon on real transcripts,
and the two browse queries behind them (also methods of the Unix socket)."""

from __future__ import annotations

import re
import time

import pytest

from backscroll.client import RemoteError
from backscroll.wording import worded
from tests.ui.conftest import HIT_TURN, PROJECT, SESSION, TURNS, WORD, Viewer


def test_search_page_with_a_query_is_sent_before_the_search_with_its_form_filled(
    viewer: Viewer,
) -> None:
    status, _, body = viewer.get(f"/?q={WORD}&role=user&project={PROJECT}")
    assert status == 200
    assert f'id="q" name="q" type="search" value="{WORD}"' in body
    assert '<option value="user" selected>' in body and f'value="{PROJECT}"' in body
    pending = re.search(r'<div id="results"><div class="pending" data-pending="1"[^>]*>', body)
    assert pending and f'data-q="{WORD}"' in pending.group(0)
    assert "searching…" in body
    assert "<mark>" not in body and 'class="hit"' not in body  # the search has not run yet
    # Without a script: a <noscript> link (and refresh) to the page with the results in it.
    link = f"/?q={WORD}&amp;project={PROJECT.replace('/', '%2F')}&amp;role=user&amp;render=1"
    assert f'<noscript><a href="{link}">show the results</a></noscript>' in body
    assert f'<meta http-equiv="refresh" content="0; url={link}">' in body
    assert '<noscript><input type="hidden" name="render" value="1"></noscript>' in body
    fragment = f"/results?q={WORD}&amp;project={PROJECT.replace('/', '%2F')}&amp;role=user"
    assert f'<link rel="preload" id="preload-results" href="{fragment}" as="fetch"' in body


def test_the_no_script_link_of_the_search_page_renders_the_results(viewer: Viewer) -> None:
    _, _, shell = viewer.get(f"/?q={WORD}")
    link = re.search(r'<noscript><a href="([^"]+)">show the results', shell)
    assert link
    status, _, body = viewer.get(link.group(1).replace("&amp;", "&"))
    assert status == 200
    assert "data-pending" not in body and "<noscript><meta" not in body
    assert f'<div id="results"><div class="results" data-q="{WORD}" data-hits="1">' in body


def test_search_page_marks_the_matched_words_and_links_to_the_hit(viewer: Viewer) -> None:
    status, _, body = viewer.get(f"/?q={WORD}&render=1")
    assert status == 200
    assert f"<mark>{WORD}</mark>" in body
    assert f"/session?id={SESSION}&amp;host=claude-code&amp;key=u-{HIT_TURN:04d}#hit" in body
    assert f'data-copy="cd {PROJECT} &amp;&amp; claude --resume {SESSION}"' in body


def test_results_fragment_is_the_block_search_as_you_type_swaps_in(viewer: Viewer) -> None:
    status, _, body = viewer.get("/results?q=parser&role=user")
    assert status == 200
    assert body.startswith('<div class="results" data-q="parser"')
    assert "<html" not in body
    assert "<mark>parser</mark>" in body


def test_search_filters_narrow_by_host_role_project_and_since(viewer: Viewer) -> None:
    _, _, everywhere = viewer.get("/api/search?q=the+of")
    _, _, codex = viewer.get("/api/search?q=parser&host=codex")
    assert '"hits":[]' in codex.replace(" ", "")
    _, _, mine = viewer.get(f"/api/search?q=parser&project={PROJECT}&role=user")
    assert SESSION in mine
    _, _, recent = viewer.get("/api/search?q=parser&since=1")
    assert "no match" in recent and "older" in recent
    assert "only of common words" in everywhere  # a sentence, not an error


def test_a_bad_filter_value_is_a_sentence_on_the_page(viewer: Viewer) -> None:
    status, _, body = viewer.get("/results?q=parser&role=robot")
    assert status == 200
    assert "role must be one of user, assistant, summary" in body


def test_sessions_are_grouped_by_project_then_host_with_turn_counts(viewer: Viewer) -> None:
    status, _, body = viewer.get("/sessions")
    assert status == 200
    groups = re.findall(r'<section class="group"><h2><a href="[^"]*">([^<]*)</a>', body)
    assert PROJECT in groups and len(groups) == len(set(groups))
    section = body.split(f">{PROJECT}</a>", 1)[1].split("</section>", 1)[0]
    assert '<h3 class="host">claude-code</h3>' in section
    assert f"{TURNS} turns" in section
    _, _, codex = viewer.get("/sessions?host=codex")
    assert "claude-code" not in codex.split("</form>", 1)[1]


def test_the_reader_opens_at_the_hit_with_its_neighbours(viewer: Viewer) -> None:
    status, _, body = viewer.get(f"/session?id={SESSION}&host=claude-code&key=u-{HIT_TURN:04d}")
    assert status == 200
    hit = re.search(r'<article class="turn role-user hit" id="hit">.*?</article>', body)
    assert hit and f"#{HIT_TURN}<" in hit.group(0) and WORD in hit.group(0)
    shown = [int(n) for n in re.findall(r"<span>#(\d+)</span>", body)]
    assert shown[0] < HIT_TURN < shown[-1] and len(shown) == 21
    assert "earlier turns" in body and f"turns {shown[0]}-{shown[-1]} of {TURNS}" in body
    assert f'data-copy="cd {PROJECT} &amp;&amp; claude --resume {SESSION}"' in body


def test_an_unknown_session_is_a_404_page_that_says_so(viewer: Viewer) -> None:
    status, _, body = viewer.get("/session?id=nope-nope")
    assert status == 404
    assert "no session id starts with" in body


def test_activity_draws_turns_per_day_per_host_and_the_busiest_projects(viewer: Viewer) -> None:
    status, _, body = viewer.get("/activity?until=2026-02-20")
    assert status == 200
    day = re.search(r"<title>2026-02-10 claude-code: (\d+) turns</title>", body)
    assert day and int(day.group(1)) >= TURNS
    projects = body.split('id="projects"', 1)[1]
    assert PROJECT in projects and "sessions</text>" in projects


@pytest.mark.parametrize("until", ["0001-01-01", "9999-12-31", "1969-12-31", "2026-13-40"])
def test_activity_ending_on_an_impossible_day_shows_the_latest_days(
    viewer: Viewer, until: str
) -> None:
    status, _, body = viewer.get(f"/activity?until={until}")
    assert status == 200 and "turns per day" in body


def test_activity_of_an_empty_window_points_at_the_newest_turn(viewer: Viewer) -> None:
    _, _, body = viewer.get("/activity?until=2020-01-01")
    assert "no turns in the 90 days up to 2020-01-01" in body
    assert re.search(r'href="/activity\?until=\d{4}-\d\d-\d\d">show the 90 days', body)


def test_health_shows_status_and_doctor_findings(viewer: Viewer) -> None:
    status, _, body = viewer.get("/health")
    assert status == 200
    assert "writer</th><td>alive" in body
    deadline = time.monotonic() + 60
    while "The doctor is still checking" in body and time.monotonic() < deadline:
        time.sleep(0.2)  # polling a condition: the doctor runs in the background
        body = viewer.get("/health")[2]
    assert '<td class="status">ok</td><td>python</td>' in body
    assert '<td class="status">ok</td><td>daemon</td>' in body


def test_activity_and_locate_answer_on_the_socket_too(viewer: Viewer) -> None:
    d = viewer.daemon
    act = d.call("activity", {"days": 30, "until": 1770768000.0})  # 2026-02-11
    assert act["days"][-1]["day"] == "2026-02-11" and len(act["days"]) == 30
    assert act["projects"][0]["project"] == PROJECT
    assert sum(sum(x["hosts"].values()) for x in act["days"]) == act["turns"]
    where = d.call("locate", {"session": SESSION, "key": f"u-{HIT_TURN:04d}"})
    assert where["turn"] == HIT_TURN
    missing = d.call("locate", {"session": SESSION, "key": "u-9999"})
    assert missing["turn"] is None and missing["reason"]["code"] == "no_turn_with_key"
    assert "no turn with key" in worded(missing, "viewer")["message"]
    with pytest.raises(RemoteError, match="days must be a whole number"):
        d.call("activity", {"days": 0})
    for until in (1e300, float("inf"), -1.0):  # past any calendar day: a clear refusal
        with pytest.raises(RemoteError, match="until must be unix seconds from 0 to"):
            d.call("activity", {"until": until})
    last = d.call("activity", {"days": 30, "until": 221876927999.0})
    assert last["days"][-1]["day"] == "9000-12-31"


def test_a_long_session_list_ends_in_a_link_to_more(viewer: Viewer) -> None:
    _, _, body = viewer.get("/sessions?limit=2&host=claude-code")
    assert len(re.findall(r"<tr><td class=when>", body)) == 2
    assert 'href="/sessions?host=claude-code&amp;limit=4">show more sessions' in body


def test_a_query_with_more_hits_than_shown_says_it_shows_the_best(viewer: Viewer) -> None:
    _, _, body = viewer.get("/results?q=the+parser")
    assert 'data-hits="20"' in body
    assert "the 20 best matches" in body


def test_the_viewer_matches_a_half_typed_last_word(viewer: Viewer) -> None:
    _, _, body = viewer.get(f"/results?q=parser+{WORD[:6]}")
    assert f"<mark>{WORD}</mark>" in body
    _, _, spaced = viewer.get(f"/results?q={WORD[:6]}+")  # a space: the word is finished
    assert 'data-hits="0"' in spaced


def test_prefix_applies_only_when_asked_and_to_an_unfinished_last_word(viewer: Viewer) -> None:
    d = viewer.daemon
    assert d.call("search", {"query": WORD[:6], "fallback": False})["hits"] == []
    hits = d.call("search", {"query": WORD[:6], "prefix": True})["hits"]
    assert [h["session_id"] for h in hits] == [SESSION]
    assert d.call("search", {"query": f'"{WORD[:6]}"', "prefix": True})["hits"] == []
    assert d.call("search", {"query": WORD[:2], "prefix": True})["hits"] == []
    with pytest.raises(RemoteError, match="prefix must be true or false"):
        d.call("search", {"query": "x", "prefix": "yes"})


def test_a_number_in_other_digits_is_read_as_no_number_not_a_server_error(
    viewer: Viewer,
) -> None:
    # ("²".isdigit() is true, but int("²") fails.)
    for path in ("/sessions?limit=%C2%B2", f"/session?id={SESSION}&around=%C2%B2"):
        status, _, _ = viewer.get(path)
        assert status == 200, path


def test_a_query_over_the_daemons_length_limit_is_a_sentence_not_an_error(
    viewer: Viewer,
) -> None:
    """A thousand words joined by OR made SQLite's expression tree too deep: an
    HTTP 500. The viewer takes the same limit as the socket (server.max_query_chars)."""
    long_query = " OR ".join(f"w{i}" for i in range(1000))
    status, _, body = viewer.get(f"/results?q={long_query.replace(' ', '+')}")
    assert status == 200
    assert "more than the 4096 allowed (server.max_query_chars)" in body
    status, _, api = viewer.get(f"/api/search?q={long_query.replace(' ', '+')}")
    assert status == 400 and "server.max_query_chars" in api


def test_the_group_of_sessions_without_a_project_has_no_link_that_would_find_none() -> None:
    from backscroll.ui import pages

    rows = [{"session_id": "s1", "host": "codex", "project": None, "title": "t", "turns": 1,
             "started_at": None, "updated_at": None, "resume_command": None}]  # fmt: skip
    body = pages.sessions_page({"sessions": rows}, {}, 50, ["codex"], "csrf")
    assert "(no project)" in body
    assert "project=%28no+project%29" not in body and "project=(no" not in body
