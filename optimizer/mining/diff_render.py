"""Human-readable pair diffs: a Markdown summary and a side-by-side HTML diff of the two contexts."""

from __future__ import annotations

import difflib
import html

from optimizer.mining.pair_diff import PairDiff


def diff_markdown(diff: PairDiff) -> str:
    lines = [
        f"### {diff.task_id} — {diff.strategy}",
        "",
        f"- first divergence: step {diff.divergence_step}",
        f"- compressed run failed because: {'; '.join(diff.compressed_reasons) or '(no reason given)'}",
    ]
    if diff.cause:
        lines.append(f"- behavioural cause (tier 1): {diff.cause}")
    if diff.blocking:
        lines.append(f"- blocking: {', '.join(diff.blocking)}")
    if not diff.missing:
        lines.append("- no needed fact was missing from the compressed context (a behaviour difference)")
    else:
        lines += [
            "",
            "| missing literal | kind | class | lost at checkpoint | step | removed by | agent did |",
            "|---|---|---|---|---|---|---|",
        ]
        for fact in diff.missing:
            record = fact.record
            by = f"{record['strategy']} {record['stage']}/{record['action']} (step {record['step']})" if record else "-"
            checkpoint = f"{fact.checkpoint} ({fact.checkpoint_name})" if fact.checkpoint else fact.checkpoint_name
            lines.append(
                f"| `{fact.literal}` | {fact.kind} | {fact.retention or '?'} | {checkpoint} | {fact.step} | {by} "
                f"| {fact.behaviour} |"
            )
    return "\n".join(lines) + "\n"


def diff_html(diff: PairDiff) -> str:
    table = difflib.HtmlDiff(wrapcolumn=90).make_table(
        diff.full_context.splitlines(),
        diff.compressed_context.splitlines(),
        fromdesc="full context (succeeded)",
        todesc=f"compressed: {html.escape(diff.strategy)} (failed)",
        context=True,
        numlines=3,
    )
    rows = "".join(
        f"<tr><td><code>{html.escape(f.literal)}</code></td><td>{f.kind}</td><td>{f.retention or '?'}</td>"
        f"<td>{f.checkpoint or '-'} {html.escape(f.checkpoint_name)}</td><td>{f.step}</td>"
        f"<td>{html.escape(str((f.record or {}).get('action', '-')))}</td><td>{f.behaviour}</td></tr>"
        for f in diff.missing
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(diff.task_id)}</title>
<style>body{{font-family:sans-serif;margin:1em}} table.diff{{font-family:monospace;font-size:12px}}
.diff_add{{background:#cfc}} .diff_chg{{background:#ffa}} .diff_sub{{background:#fcc}}
table.facts td,table.facts th{{border:1px solid #ccc;padding:3px 6px}}</style></head><body>
<h2>{html.escape(diff.task_id)}: full context succeeded, {html.escape(diff.strategy)} failed</h2>
<p>First divergence at step {diff.divergence_step}. Failure: {html.escape("; ".join(diff.compressed_reasons))}</p>
{f"<p>Behavioural cause (tier 1): {html.escape(diff.cause)}</p>" if diff.cause else ""}
<table class="facts"><tr><th>missing literal</th><th>kind</th><th>class</th><th>lost at checkpoint</th>
<th>step</th><th>removed by</th><th>agent did</th></tr>{rows}</table>
<h3>Request at the divergence step</h3>{table}</body></html>"""
