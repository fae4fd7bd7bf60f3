"""Markdown and HTML views of a results document.

Both views show, per paper (with its citation from the paper registry): every claim with
its verdict, source, statement and provenance, the decisions behind the verdict (role,
measured value, reference, tolerance), its measurements, its plots and its negative
controls (kind, the conclusions each declares to break and those it broke).
Discrepancies -- paper statements refuted as written -- and claims whose hypotheses did not
hold on their instance are listed in sections of their own.
"""
from __future__ import annotations

import html
import json
from itertools import groupby

from .results import summarize

VERDICT_MARK = {"passed": "PASS", "failed": "FAIL", "hypotheses_not_met": "HYPOTHESES NOT MET",
                "error": "ERROR", "skipped": "SKIP", "not_run": "NOT RUN",
                "failed_as_expected": "failed as expected",
                "passed_unexpectedly": "PASSED UNEXPECTEDLY", "misfired": "MISFIRED"}
DECISION_HEADER = ["", "role", "check", "kind", "measured", "reference", "tolerance"]


def _short(value, limit: int = 120) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list) and len(value) > 6:
        head = ", ".join(_short(v, 20) for v in value[:6])
        return f"[{head}, ... ({len(value)} values)]"
    if isinstance(value, list):
        return "[" + ", ".join(_short(v, 20) for v in value) + "]"
    text = json.dumps(value) if isinstance(value, dict) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _by_paper(results: dict):
    claims = sorted(results["claims"], key=lambda c: (c["paper"], c["id"]))
    return groupby(claims, key=lambda c: c["paper"])


def _decision_row(d: dict) -> list[str]:
    tol = ", ".join(f"{k}={_short(v, 30)}" for k, v in d.get("tolerance", {}).items())
    reference = d.get("reference")
    if d["kind"] == "binomial":
        power = d.get("detail", {}).get("power_80_at")
        tol += (", too few trials: cannot reject" if power is None
                else f", 80% power at p1={_short(power)}")
    return ["ok" if d["passed"] else "FAILED", d.get("role") or "", d["name"], d["kind"],
            _short(d["measured"]), "" if reference is None else _short(reference), tol]


def _why(control: dict) -> str:
    """The failed checks that made a control fail, as 'name: measured vs reference'."""
    failed = [d for d in control.get("decisions", []) if not d["passed"]]
    return "; ".join(f"{d['name']}: {_short(d['measured'], 60)} vs {_short(d.get('reference'), 40)}"
                     for d in failed[:3])


def _control_line(k: dict) -> str:
    """Kind, declared and actually broken conclusions and verdict of a control."""
    broke = [b for b in k["breaks"] if b in k.get("failed_conclusions", [])]
    text = (f"{k['name']} [{k['kind']}] ({k['description']}): {VERDICT_MARK[k['outcome']]}; "
            f"declares it breaks {k['breaks']}; broke {broke}")
    if k.get("failed_preconditions"):
        text += f"; failed preconditions {k['failed_preconditions']}"
    return text


def _paper_heading(results: dict, paper: str) -> str:
    """The paper's citation, and the claim ids it has not encoded yet."""
    info = results.get("papers", {}).get(paper)
    if not info:
        return "(paper not registered: declare it with theorycheck.paper)"
    pending = info.get("pending") or []
    return info["citation"] + (f" Not encoded yet ({len(pending)} of {len(info['expected_ids'])}): "
                               + ", ".join(pending) + "." if pending else "")


def _not_met(claims: list[dict]) -> list[dict]:
    return [c for c in claims if c["outcome"] == "hypotheses_not_met"]


def _refuted(claims: list[dict]) -> list[tuple[dict, str]]:
    """(discrepancy, corrected claim id) pairs: statements refuted as written."""
    return [(c, c.get("corrected_by") or "") for c in claims if c["kind"] == "discrepancy"]


# -- markdown --------------------------------------------------------------------------------
def _md_table(header: list[str], rows: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(results: dict) -> str:
    out = ["# theorycheck report", "", summarize(results), "",
           f"- started: {results['started']}, wall time {results.get('wall_time_s', 0):.1f} s",
           f"- tier `{results['tier']}`, device `{results['device']}`, dtype "
           f"`{results.get('dtype', 'float64')}`, base seed {results['seed']}, theorycheck "
           f"{results['theorycheck_version']}", ""]
    for paper, group in _by_paper(results):
        claims = list(group)
        out += [f"## Paper `{paper}`", "", _paper_heading(results, paper), ""]
        rows = [[f"`{c['id']}`", c["source"], c["kind"], c["provenance"], VERDICT_MARK[c["outcome"]],
                 ", ".join(f"{k['name']} [{k['kind']}]: {VERDICT_MARK[k['outcome']]}"
                           for k in c["controls"]),
                 f"{c['duration_s']:.2f}"] for c in claims]
        out += [_md_table(["claim", "source", "kind", "provenance", "verdict", "controls",
                           "time (s)"], rows), ""]
        not_met = _not_met(claims)
        if not_met:
            out += ["### Hypotheses not met on the instance", ""]
            out += [f"- `{c['id']}` ({c['source']}): failed preconditions "
                    f"{c['failed_preconditions']}" for c in not_met]
            out.append("")
        refuted = _refuted(claims)
        if refuted:
            out += ["### Refuted as written", ""]
            out += [f"- `{d['id']}` ({d['source']}): {VERDICT_MARK[d['outcome']]} -- corrected "
                    f"statement: `{fix}`" for d, fix in refuted]
            out.append("")
        for c in claims:
            out += _md_claim(c)
    return "\n".join(out) + "\n"


def _md_claim(c: dict) -> list[str]:
    out = [f"### `{c['id']}` -- {VERDICT_MARK[c['outcome']]}", "",
           f"*{c['source']}* ({c['kind']}, provenance: {c['provenance']}). {c['statement']}", ""]
    if c.get("corrected_by"):
        out += [f"Refuted as written; corrected statement: `{c['corrected_by']}`.", ""]
    if c["decisions"]:
        out += [_md_table(DECISION_HEADER, [_decision_row(d) for d in c["decisions"]]), ""]
    if c["measurements"]:
        out += [f"- {k}: {_short(v)}" for k, v in c["measurements"].items()] + [""]
    out += [f"![{path}]({path})" for path in c.get("images", [])]
    out += ["", "Negative controls:", ""]
    out += [f"- {_control_line(k)}" + (f" -- {_why(k)}" if _why(k) else "") for k in c["controls"]]
    if c.get("message") and c["outcome"] != "passed":
        out += ["", "```", c["message"], "```"]
    return out + [""]


# -- html ------------------------------------------------------------------------------------
_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
.passed,.failed_as_expected{color:#176317;font-weight:600}
.failed,.error,.passed_unexpectedly,.misfired{color:#b00020;font-weight:600}
.hypotheses_not_met{color:#a04000;font-weight:600}
.skipped,.not_run{color:#8a6d00;font-weight:600}
.claim{border-top:1px solid #ddd;margin-top:1.5em;padding-top:.5em}
.discrepancy{background:#fff8e6}
img{max-width:100%;border:1px solid #eee}
pre{background:#f6f6f6;padding:.5em;overflow-x:auto;font-size:.8em}
code{font-size:.95em}
"""


def _e(text) -> str:
    return html.escape(str(text))


def _verdict(outcome: str) -> str:
    return f'<span class="{outcome}">{_e(VERDICT_MARK[outcome])}</span>'


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(results: dict) -> str:
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>theorycheck report</title>"
             f"<style>{_CSS}</style></head><body><h1>theorycheck report</h1>",
             f"<p>{_e(summarize(results))}</p>",
             f"<p>started {_e(results['started'])}; wall time {results.get('wall_time_s', 0):.1f} s; "
             f"tier <code>{_e(results['tier'])}</code>, device <code>{_e(results['device'])}</code>, "
             f"dtype <code>{_e(results.get('dtype', 'float64'))}</code>, base seed {results['seed']}; "
             f"theorycheck {_e(results['theorycheck_version'])}</p>"]
    for paper, group in _by_paper(results):
        claims = list(group)
        parts.append(f"<h2>Paper <code>{_e(paper)}</code></h2><p>{_e(_paper_heading(results, paper))}</p>")
        rows = [[f"<a href='#{_e(c['id'])}'><code>{_e(c['id'])}</code></a>", _e(c["source"]),
                 _e(c["kind"]), _e(c["provenance"]), _verdict(c["outcome"]),
                 "<br>".join(f"{_e(k['name'])} [{_e(k['kind'])}]: {_verdict(k['outcome'])}"
                             for k in c["controls"]),
                 f"{c['duration_s']:.2f}"] for c in claims]
        parts.append(_html_table(["claim", "source", "kind", "provenance", "verdict", "controls",
                                  "time (s)"], rows))
        not_met = _not_met(claims)
        if not_met:
            parts.append("<h3>Hypotheses not met on the instance</h3><ul>")
            parts += [f"<li><a href='#{_e(c['id'])}'><code>{_e(c['id'])}</code></a> "
                      f"({_e(c['source'])}): failed preconditions "
                      f"{_e(c['failed_preconditions'])}</li>" for c in not_met]
            parts.append("</ul>")
        refuted = _refuted(claims)
        if refuted:
            parts.append("<h3>Refuted as written</h3><ul>")
            parts += [f"<li class='discrepancy'><a href='#{_e(d['id'])}'><code>{_e(d['id'])}</code></a> "
                      f"({_e(d['source'])}): {_verdict(d['outcome'])}; corrected statement: "
                      f"<a href='#{_e(fix)}'><code>{_e(fix)}</code></a></li>" for d, fix in refuted]
            parts.append("</ul>")
        parts += [_html_claim(c) for c in claims]
    parts.append("</body></html>")
    return "\n".join(parts)


def _html_claim(c: dict) -> str:
    cls = "claim discrepancy" if c["kind"] == "discrepancy" else "claim"
    out = [f"<div class='{cls}' id='{_e(c['id'])}'><h3><code>{_e(c['id'])}</code> "
           f"{_verdict(c['outcome'])}</h3>",
           f"<p><em>{_e(c['source'])}</em> ({_e(c['kind'])}, provenance: "
           f"{_e(c['provenance'])}). {_e(c['statement'])}</p>"]
    if c.get("corrected_by"):
        out.append(f"<p>Refuted as written; corrected statement: "
                   f"<a href='#{_e(c['corrected_by'])}'><code>{_e(c['corrected_by'])}</code></a></p>")
    if c["decisions"]:
        rows = [[_e(cell) for cell in _decision_row(d)] for d in c["decisions"]]
        out.append(_html_table(DECISION_HEADER, rows))
    if c["measurements"]:
        out.append("<ul>" + "".join(f"<li>{_e(k)}: {_e(_short(v))}</li>"
                                    for k, v in c["measurements"].items()) + "</ul>")
    out += [f"<img src='{_e(path)}' alt='{_e(path)}'>" for path in c.get("images", [])]
    out.append("<p>Negative controls:</p><ul>" + "".join(
        f"<li>{_e(_control_line(k))}"
        + (f"<br><small>{_e(_why(k))}</small>" if _why(k) else "") + "</li>"
        for k in c["controls"]) + "</ul>")
    if c.get("message") and c["outcome"] != "passed":
        out.append(f"<pre>{_e(c['message'])}</pre>")
    out.append("</div>")
    return "\n".join(out)
