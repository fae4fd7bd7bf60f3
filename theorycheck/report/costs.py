"""The cost table of a run (``theorycheck schedule --markdown``, BENCHMARKS.md): per paper the
totals, the costliest claims, the longest-first plan on N workers and the warm plan, in
Markdown, from the costs the run recorded and the plans :mod:`theorycheck.shards` makes of
them."""
from __future__ import annotations

from ..shards import cost_rows, schedule, unit_durations, warm_plan

__all__ = ["cost_markdown"]


def _number(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _paper_totals(rows: list[dict]) -> list[str]:
    """Per paper: its claims, wall and CPU seconds, the highest resident peak."""
    lines = ["| paper | claims | wall s | CPU s | highest peak MiB |", "|---|---|---|---|---|"]
    for paper in sorted({r["paper"] for r in rows}):
        mine = [r for r in rows if r["paper"] == paper]
        cpu = [r["cpu_s"] for r in mine if r["cpu_s"] is not None]
        peaks = [r["peak_rss_mb"] for r in mine if r["peak_rss_mb"] is not None]
        lines.append(f"| {paper} | {len(mine)} | {sum(r['wall_s'] for r in mine):.0f} | "
                     f"{_number(sum(cpu) if cpu else None)} | {_number(max(peaks, default=None))} |")
    return lines


def _costliest_claims(rows: list[dict], top: int | None) -> list[str]:
    """The ``top`` costliest claims (all when None), one row each."""
    shown = rows if top is None else rows[:top]
    lines = [f"{'Every claim' if top is None else f'The {len(shown)} costliest claims'} "
             "(its case and controls; a shared run counts toward the first claim that uses it, "
             "also when an earlier, interrupted run computed it; 'from disk': a shared run it read "
             "from the cache has no recorded cost, so its CPU seconds leave it out):",
             "", "| claim | outcome | wall s | CPU s | peak MiB | from disk |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['claim']} | {r['outcome']} | {r['wall_s']:.1f} | {_number(r['cpu_s'], 1)} | "
              f"{_number(r['peak_rss_mb'])} | {'yes' if r['from_disk'] else ''} |" for r in shown]
    return lines


def _longest_first(durations: dict[str, float], workers: int) -> list[str]:
    """The longest-first plan of the claims on ``workers`` workers and its makespan."""
    plan = schedule(list(durations), durations, workers)
    total = sum(durations.values())
    lines = [f"Longest first on {workers} workers (by CPU seconds): makespan "
             f"{max(b['seconds'] for b in plan):.0f} s (ideal {total / workers:.0f} s; the longest "
             f"claim {max(durations.values(), default=0.0):.0f} s).", "",
             "| worker | seconds | claims |", "|---|---|---|"]
    lines += [f"| {i} | {b['seconds']:.0f} | {len(b['units'])}: "
              f"{', '.join(u.split('::')[-1] for u in b['units'][:3])}"
              f"{' ...' if len(b['units']) > 3 else ''} |" for i, b in enumerate(plan, 1) if b["units"]]
    return lines


def _warm(results: dict, workers: int, top: int | None) -> list[str]:
    """The two-phase warm plan (:func:`theorycheck.shards.warm_plan`) and its shared runs;
    nothing when the run computed no shared run."""
    warm = warm_plan(results, workers)
    runs = warm["runs"]
    if not runs:
        return []
    first = max(b["seconds"] for b in warm["phase1"])
    lines = [f"Warm plan on {workers} workers (`theorycheck schedule --warm`): phase 1 "
             f"computes the {len(runs)} shared runs as independent jobs (makespan {first:.0f} s; "
             f"the longest {runs[0]['name'].rsplit('.', 1)[-1]} {runs[0]['cpu_s']:.0f} s), "
             f"phase 2 the claims from the cache (makespan "
             f"{max(b['seconds'] for b in warm['phase2']):.0f} s): {warm['makespan']:.0f} s in all.",
             "", "| shared run | config | CPU s | first used by |", "|---|---|---|---|"]
    lines += [f"| {r['name'].rsplit('.', 1)[-1]} | {_short(r['config'])} | {r['cpu_s']:.1f} | "
              f"{r['claim']} |" for r in runs[:top or len(runs)]]
    return lines


def _short(config: dict, width: int = 60) -> str:
    """A shared run's configuration in one table cell."""
    text = ", ".join(f"{k}={v}" for k, v in sorted(config.items()))
    return text if len(text) <= width else text[:width - 3] + "..."


def cost_markdown(results: dict, workers: int, top: int | None = None) -> str:
    """Markdown: per paper the totals, the ``top`` costliest claims (all when None), the
    longest-first plan on ``workers`` workers and the warm plan, from one run's results."""
    rows = cost_rows(results)
    durations = unit_durations(results)
    head = (f"Run of commit {str(results.get('commit'))[:10]}, tier {results.get('tier')}, seed "
            f"{results.get('seed')}, device {results.get('device')}: {len(rows)} claims, "
            f"{sum(durations.values()):.0f} s in all (CPU seconds where recorded, else wall).")
    lines = [head, "", *_paper_totals(rows), "", *_costliest_claims(rows, top), "",
             *_longest_first(durations, workers)]
    warm = _warm(results, workers, top)
    return "\n".join(lines + ([""] + warm if warm else [])) + "\n"
