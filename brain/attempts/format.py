"""An attempt record as a few plain lines: what `brain attempts` prints and the `attempts` MCP tool answers."""
from __future__ import annotations


def figures_line(r: dict) -> str:
    return "; ".join(f"{f['label'] + ': ' if f['label'] else ''}{f['before']:g} → {f['after']:g} {f['unit']}".strip()
                     for f in r["figures"][:4])


def format_record(r: dict, n: int | None = None) -> str:
    head = f"{n}. " if n else ""
    status = f"  superseded by {r['superseded_by']}" if r["status"] == "superseded" else ""
    out = [f"{head}[{r['verdict']}] {r['title']}  ({r['problem']}; {', '.join(r['techniques']) or '-'}){status}",
           f"   {r['corpus']}/{r['source']}:{r['start_line']}-{r['end_line']}  id {r['id']}"]
    for key in ("hypothesis", "change", "lesson"):
        if r[key]:
            out.append(f"   {key}: {r[key][:200]}")
    fig = r.get("figure")
    if fig:
        why = f" ({fig['metric']}, {fig['better']} is better)" if fig.get("metric") and fig.get("better") else ""
        out.append(f"   figure: {figures_line({'figures': [fig]})}{why}")
    if r["figures"]:
        out.append(f"   figures: {figures_line(r)}")
    if r["conflicts_with"]:
        out.append(f"   conflicts with: {', '.join(r['conflicts_with'])}")
    return "\n".join(out)
