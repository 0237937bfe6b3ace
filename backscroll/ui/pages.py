"""HTML of the viewer's pages, rendered on the server from the query results.

Every value is escaped here; the pages work without JavaScript (app.js adds
search-as-you-type and copy buttons on top).
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import urlencode

from backscroll.protocol import ROLES

NAV = (("/", "Search"), ("/sessions", "Sessions"), ("/activity", "Activity"), ("/health", "Health"))
#: The query parameter asking the search page to run its search before answering
#: (the no-script path); without it the page is sent at once and app.js fills it.
RENDER = "render"
SINCE_CHOICES = (("", "any time"), ("1", "last day"), ("7", "last week"), ("30", "last 30 days"),
                 ("90", "last 90 days"), ("365", "last year"))  # fmt: skip


def e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def when(stamp: str | None) -> str:
    """An ISO UTC timestamp as ``YYYY-MM-DD HH:MM``, in a <time> the script localises."""
    if not stamp:
        return '<span class="muted">—</span>'
    text = stamp[:16].replace("T", " ")
    return f'<time datetime="{e(stamp)}">{e(text)}</time>'


def layout(title: str, active: str, body: str, csrf: str, head: str = "") -> str:
    links = "".join(
        f'<a href="{href}"{" aria-current=page" if href == active else ""}>{name}</a>'
        for href, name in NAV
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="csrf-token" content="{e(csrf)}">'
        f"<title>{e(title)} · backscroll</title>"
        '<link rel="icon" href="/static/icon.svg" type="image/svg+xml">'
        '<link rel="stylesheet" href="/static/style.css">'
        f'<script src="/static/app.js" defer></script>{head}</head><body>'
        f'<header><a class="brand" href="/">backscroll</a><nav>{links}</nav></header>'
        f"<main>{body}</main></body></html>"
    )


def copy_button(command: str | None) -> str:
    if not command:
        return ""
    return (
        f'<span class="resume"><code>{e(command)}</code>'
        f'<button type="button" class="copy" data-copy="{e(command)}">Copy</button></span>'
    )


def _options(choices: list[tuple[str, str]] | tuple[tuple[str, str], ...], current: str) -> str:
    return "".join(
        f'<option value="{e(v)}"{" selected" if v == current else ""}>{e(label)}</option>'
        for v, label in choices
    )


def search_form(f: dict[str, str], hosts: list[str]) -> str:
    host_choices = [("", "every host"), *((h, h) for h in hosts)]
    role_choices = [("", "every role"), *((r, r) for r in ROLES)]
    return (
        '<form id="search" class="filters" action="/" method="get" role="search">'
        f'<input id="q" name="q" type="search" value="{e(f.get("q"))}" autofocus '
        'placeholder="Search every conversation…" autocomplete="off" aria-label="words to find">'
        f'<select name="host" aria-label="host">{_options(host_choices, f.get("host", ""))}'
        "</select>"
        f'<input name="project" value="{e(f.get("project"))}" placeholder="project path" '
        'aria-label="project">'
        f'<select name="role" aria-label="role">{_options(role_choices, f.get("role", ""))}'
        "</select>"
        f'<select name="since" aria-label="since">{_options(SINCE_CHOICES, f.get("since", ""))}'
        # Without a script the form asks the server for the results at once (with
        # one, FormData skips <noscript> and the script fetches them).
        f'</select><noscript><input type="hidden" name="{RENDER}" value="1"></noscript>'
        '<button type="submit">Search</button></form>'
    )


def marked(text: str, spans: list[list[int]]) -> str:
    out: list[str] = []
    pos = 0
    for start, end in sorted(spans):
        if start < pos:
            continue
        out.append(e(text[pos:start]))
        out.append(f"<mark>{e(text[start:end])}</mark>")
        pos = end
    out.append(e(text[pos:]))
    return "".join(out)


def reader_link(session_id: str, host: str | None, key: str | None = None) -> str:
    params = {"id": session_id, **({"host": host} if host else {}), **({"key": key} if key else {})}
    return "/session?" + urlencode(params) + ("#hit" if key else "")


def results(result: dict[str, Any], query: str, limit: int) -> str:
    """The results block (the fragment search-as-you-type swaps in)."""
    hits = result.get("hits") or []
    parts = [f'<div class="results" data-q="{e(query)}" data-hits="{len(hits)}">']
    message = result.get("message")
    if len(hits) >= limit:
        message = message or f"the {len(hits)} best matches; narrow with the filters to see others"
    elif hits:
        parts.append(
            f'<p class="count">{len(hits)} matching turn{"s" if len(hits) > 1 else ""}</p>'
        )
    if message:
        parts.append(f'<p class="message">{e(message)}</p>')
    for hit in hits:
        link = reader_link(hit["session_id"], hit.get("host"), hit.get("turn_key"))
        parts.append(
            '<article class="hit">'
            f'<div class="meta"><span class="host">{e(hit.get("host"))}</span>'
            f'<span class="role role-{e(hit.get("role"))}">{e(hit.get("role"))}</span>'
            f"{when(hit.get('timestamp'))}"
            f'<span class="project">{e(hit.get("project"))}</span></div>'
            f'<h3><a class="open" href="{e(link)}">{e(hit.get("title") or hit["session_id"])}</a>'
            "</h3>"
            f'<p class="excerpt">{marked(hit.get("excerpt", ""), hit.get("matches") or [])}</p>'
            f"{copy_button(hit.get('resume_command'))}</article>"
        )
    parts.append("</div>")
    return "".join(parts)


def rendered_url(f: dict[str, str]) -> str:
    """The search page asked with ``render=1``: the results in the page itself."""
    keys = ("q", "host", "project", "role", "since")
    return "/?" + urlencode({**{k: f[k] for k in keys if f.get(k)}, RENDER: "1"})


def pending(f: dict[str, str]) -> str:
    """The results placeholder of a page sent before its search ran: app.js fetches
    the block at once; without a script, the <noscript> parts ask the server to
    render the page with the results (``render=1``)."""
    return (
        f'<div class="pending" data-pending="1" data-q="{e(f.get("q"))}" aria-busy="true">'
        '<p class="muted">searching…</p>'
        f'<noscript><a href="{e(rendered_url(f))}">show the results</a></noscript></div>'
    )


def pending_head(f: dict[str, str]) -> str:
    """In <head>: the results fetch starts while the page is parsed (app.js then asks
    for this very URL, and gets the preloaded answer); a browser without scripts
    reloads the page with the results rendered."""
    keys = ("q", "host", "project", "role", "since")
    fragment = "/results?" + urlencode({k: f[k] for k in keys if f.get(k)})
    return (
        f'<link rel="preload" id="preload-results" href="{e(fragment)}" as="fetch" crossorigin>'
        f'<noscript><meta http-equiv="refresh" content="0; url={e(rendered_url(f))}"></noscript>'
    )


def search_page(f: dict[str, str], hosts: list[str], block: str, csrf: str, head: str = "") -> str:
    intro = (
        ""
        if f.get("q")
        else '<p class="hint">Type to search every indexed prompt, answer and summary; '
        'results follow as you type. <code>"quoted phrases"</code> match exactly.</p>'
    )
    body = f'{search_form(f, hosts)}{intro}<div id="results">{block}</div>'
    return layout(f"Search {f.get('q', '')}".strip(), "/", body, csrf, head)


def sessions_page(
    result: dict[str, Any], f: dict[str, str], limit: int, hosts: list[str], csrf: str
) -> str:
    items = result.get("sessions") or []
    groups: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for s in items:
        project = s.get("project") or ""  # (shown as "(no project)", with no link)
        groups.setdefault(project, {}).setdefault(s["host"], []).append(s)
    host_choices = [("", "every host"), *((h, h) for h in hosts)]
    parts = [
        '<form class="filters" action="/sessions" method="get">'
        f'<select name="host" aria-label="host">{_options(host_choices, f.get("host", ""))}'
        f'</select><input name="project" value="{e(f.get("project"))}" placeholder="project path"'
        ' aria-label="project">'
        f'<select name="since" aria-label="since">{_options(SINCE_CHOICES, f.get("since", ""))}'
        '</select><button type="submit">Filter</button></form>',
        f'<p class="count">{len(items)} sessions in {len(groups)} projects, newest first</p>',
    ]
    if result.get("message"):
        parts.append(f'<p class="message">{e(result["message"])}</p>')
    for project, by_host in groups.items():
        count = sum(len(v) for v in by_host.values())
        heading = (
            f'<a href="/sessions?{e(urlencode({"project": project}))}">{e(project)}</a>'
            if project
            else "(no project)"  # (a filter cannot ask for sessions without one)
        )
        parts.append(
            f'<section class="group"><h2>{heading} <span class="muted">{count} sessions</span></h2>'
        )
        for host, rows in by_host.items():
            parts.append(f'<h3 class="host">{e(host)}</h3><table class="sessions"><tbody>')
            for s in rows:
                parts.append(
                    f"<tr><td class=when>{when(s.get('last_activity') or s.get('started'))}</td>"
                    f'<td class="title"><a href="{e(reader_link(s["session_id"], host))}">'
                    f"{e(s.get('title') or s['session_id'])}</a></td>"
                    f'<td class="num">{e(s.get("turns"))} turns</td>'
                    f"<td class=cmd>{copy_button(s.get('resume_command'))}</td></tr>"
                )
            parts.append("</tbody></table>")
        parts.append("</section>")
    if len(items) >= limit:
        more = urlencode({**{k: v for k, v in f.items() if v and k != "q"}, "limit": limit * 2})
        parts.append(f'<p class="pager"><a href="/sessions?{e(more)}">show more sessions</a></p>')
    return layout("Sessions", "/sessions", "".join(parts), csrf)


def session_page(result: dict[str, Any], hit: int | None, csrf: str) -> str:
    s = result.get("session")
    if not s:
        body = f'<p class="message">{e(result.get("message"))}</p>'
        return layout("Session", "/sessions", body, csrf)
    window = result.get("window") or {}
    first, last, total = window.get("first", 1), window.get("last", 0), window.get("total", 0)
    nav = []
    base = {"id": s["session_id"], "host": s["host"]}
    if first > 1:
        earlier = urlencode({**base, "around": max(first - 11, 1)})
        nav.append(f'<a href="/session?{e(earlier)}">← earlier turns</a>')
    nav.append(f'<span class="muted">turns {first}-{last} of {total}</span>')
    if last < total:
        later = urlencode({**base, "around": min(last + 11, total)})
        nav.append(f'<a href="/session?{e(later)}">later turns →</a>')
    pager = f'<p class="pager">{" ".join(nav)}</p>'
    parts = [
        f"<h1>{e(s.get('title') or s['session_id'])}</h1>"
        f'<p class="meta"><span class="host">{e(s["host"])}</span>'
        f'<span class="project">{e(s.get("project"))}</span> started {when(s.get("started"))}'
        f" · last {when(s.get('last_activity'))} · {e(s.get('turns'))} turns"
        f' · <code class="muted">{e(s["session_id"])}</code></p>',
        copy_button(s.get("resume_command")),
        pager,
    ]
    for t in result.get("turns") or []:
        is_hit = hit is not None and t["n"] == hit
        ident = ' id="hit"' if is_hit else f' id="t{t["n"]}"'
        parts.append(
            f'<article class="turn role-{e(t["role"])}{" hit" if is_hit else ""}"{ident}>'
            f'<div class="meta"><span class="role">{e(t["role"])}</span>'
            f"<span>#{t['n']}</span>{when(t.get('timestamp'))}</div>"
            f'<div class="text">{e(t.get("text"))}</div></article>'
        )
    parts.append(pager)
    return layout(s.get("title") or "Session", "/sessions", "".join(parts), csrf)


def health_page(
    status: dict[str, Any],
    checked: tuple[float, list[dict[str, Any]]] | None,
    synced: str | None,
    csrf: str,
) -> str:
    d = status.get("daemon", {})
    rows = "".join(
        f"<tr><td>{e(h)}</td><td class=num>{e(v.get('files'))}</td>"
        f"<td class=num>{e(v.get('sessions'))}</td><td class=num>{e(v.get('turns'))}</td>"
        f"<td class=num>{e(v.get('unreadable_files'))}</td><td>{when(v.get('last_indexed'))}</td>"
        "</tr>"
        for h, v in sorted((status.get("hosts") or {}).items())
    )
    facts = (
        ("daemon", f"pid {d.get('pid')} · version {d.get('version')} · up {d.get('uptime_s')} s"),
        ("writer", "alive" if d.get("writer_alive") else "STOPPED"),
        ("queue", d.get("queue_depth")),
        ("indexing", d.get("indexing") or "idle"),
        ("last error", d.get("last_error") or "none"),
        ("full-text", "FTS5, ranked" if d.get("fts") else "LIKE, unranked"),
    )
    fact_rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in facts)
    doctor = "".join(
        f'<tr class="{e(f.get("status"))}"><td class="status">{e(f.get("status"))}</td>'
        f"<td>{e(f.get('check'))}</td><td>{e(f.get('detail'))}"
        + (f'<div class="fix">fix: {e(f.get("fix"))}</div>' if f.get("fix") else "")
        + "</td></tr>"
        for f in (checked[1] if checked else [])
    )
    if checked:
        stamp = datetime.fromtimestamp(checked[0], tz=UTC).isoformat()
        doctor_note = f'<p class="muted">checked {when(stamp)}; checked again when a minute old</p>'
    else:
        doctor_note = '<p class="message">The doctor is still checking; reload in a moment.</p>'

    done = f'<p class="message">Indexed now: {e(synced)}</p>' if synced else ""
    body = (
        f"<h1>Status</h1>{done}<table class=facts>{fact_rows}</table>"
        '<form method="post" action="/sync" class="inline">'
        f'<input type="hidden" name="csrf" value="{e(csrf)}">'
        '<button type="submit" id="sync">Index pending changes now</button></form>'
        "<table class=hosts><thead><tr><th>host</th><th>files</th><th>sessions</th>"
        f"<th>turns</th><th>unreadable</th><th>last indexed</th></tr></thead><tbody>{rows}"
        "</tbody></table>"
        f"<h1>Doctor</h1>{doctor_note}<table class=doctor><tbody>{doctor}</tbody></table>"
    )
    return layout("Health", "/health", body, csrf)
