"""The activity page's charts as server-side SVG: no chart library, no script."""

from __future__ import annotations

from typing import Any

from backscroll.ui.pages import e, layout

PALETTE = ("#3b6fd8", "#e0803a", "#3aa876", "#c4485a", "#8a5cc8", "#8c6d46", "#d46fb3",
           "#6f7f8f", "#b8b23a", "#2fb3c2")  # fmt: skip


def colours(hosts: list[str]) -> dict[str, str]:
    return {h: PALETTE[i % len(PALETTE)] for i, h in enumerate(hosts)}


def per_day(days: list[dict[str, Any]], hosts: list[str], width: int = 960,
            height: int = 240) -> str:  # fmt: skip
    """Stacked bars: turns per day, one colour per host."""
    left, bottom, top = 44, 22, 10
    plot_w, plot_h = width - left - 6, height - bottom - top
    peak = max((sum(d["hosts"].values()) for d in days), default=0) or 1
    step = plot_w / max(len(days), 1)
    col = colours(hosts)
    out = [
        f'<svg class="chart" id="per-day" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="turns per day per host" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="{left - 6}" y="{top + 9}" text-anchor="end" class="axis">{peak}</text>',
        f'<text x="{left - 6}" y="{top + plot_h}" text-anchor="end" class="axis">0</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 6}" y2="{top + plot_h}" '
        'stroke="#999" stroke-width="1"/>',
    ]
    for i, day in enumerate(days):
        x = left + i * step
        y = top + plot_h
        for host in hosts:
            n = day["hosts"].get(host, 0)
            if not n:
                continue
            h = n / peak * plot_h
            y -= h
            out.append(
                f'<rect x="{x + 0.5:.1f}" y="{y:.1f}" width="{max(step - 1, 1):.1f}" '
                f'height="{h:.1f}" fill="{col[host]}"><title>{e(day["day"])} {e(host)}: {n} '
                "turns</title></rect>"
            )
        last = i == len(days) - 1
        if i % 15 == 0 or last:  # the last label ends at the right edge
            where = f'x="{x + step:.1f}" text-anchor="end"' if last else f'x="{x:.1f}"'
            label = e(day["day"][5:])
            out.append(f'<text {where} y="{height - 6}" class="axis">{label}</text>')
    out.append("</svg>")
    return "".join(out)


def projects(rows: list[dict[str, Any]], width: int = 960) -> str:
    """Horizontal bars: the busiest projects by turns."""
    if not rows:
        return ""
    bar_h, gap, label_w = 18, 6, 380
    height = len(rows) * (bar_h + gap) + gap
    peak = max(r["turns"] for r in rows) or 1
    room = width - label_w - 170
    out = [
        f'<svg class="chart" id="projects" viewBox="0 0 {width} {height}" role="img" '
        'aria-label="busiest projects" xmlns="http://www.w3.org/2000/svg">'
    ]
    for i, r in enumerate(rows):
        y = gap + i * (bar_h + gap)
        name = str(r["project"] or "(no project)")
        short = name if len(name) <= 52 else "…" + name[-51:]
        w = max(r["turns"] / peak * room, 1)
        out.append(
            f'<text x="{label_w - 8}" y="{y + 13}" text-anchor="end" class="label">'
            f"{e(short)}<title>{e(name)}</title></text>"
            f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="#3b6fd8"/>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + 13}" class="axis">{r["turns"]} turns, '
            f"{r['sessions']} sessions</text>"
        )
    out.append("</svg>")
    return "".join(out)


def activity_page(result: dict[str, Any], csrf: str) -> str:
    hosts = list((result.get("hosts") or {}).keys())
    col = colours(hosts)
    legend = "".join(
        f'<span class="swatch"><svg width="12" height="12" aria-hidden="true">'
        f'<rect width="12" height="12" fill="{col[h]}"/></svg>{e(h)} '
        f'<span class="muted">{n}</span></span>'
        for h, n in (result.get("hosts") or {}).items()
    )
    days = result.get("days") or []
    span = f"{days[0]['day']} to {days[-1]['day']}" if days else ""
    parts = [
        f"<h1>Activity</h1><p class=muted>{e(result.get('turns', 0))} turns, {e(span)} "
        "(UTC days)</p>"
    ]
    if result.get("message"):
        msg = e(result["message"])
        newest = result.get("newest_turn")
        if newest:
            msg += f'; the newest turn is from {e(newest[:10])} — <a href="/activity?until=' \
                   f'{e(newest[:10])}">show the 90 days up to it</a>'  # fmt: skip
        parts.append(f'<p class="message">{msg}</p>')
    parts += [
        f"<h2>Turns per day, per host</h2><div class=legend>{legend}</div>",
        per_day(days, hosts),
        "<h2>Busiest projects</h2>",
        projects(result.get("projects") or []),
    ]
    return layout("Activity", "/activity", "".join(parts), csrf)
