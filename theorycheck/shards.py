"""Splitting a run across machines, and putting it back together.

A *unit* is one claim function with all its cases (the claim and its controls run together,
so that the controls reuse the claim's cached runs); other tests are units of one function
too.  :func:`schedule` assigns units to N bins longest-first (LPT: each unit, in decreasing
recorded duration, to the least loaded bin), the classical 4/3-approximation of the shortest
makespan; the durations come from an earlier run's results.json (:func:`unit_durations`), and a
unit without one counts :data:`UNKNOWN_S`.  ``pytest --tc-shard I/N --tc-durations RESULTS``
runs bin I; the shards write their own run folders into a shared cache directory
(``--tc-cache-dir``: atomic writes, checksummed entries), and :func:`merge_results` joins
their results into one run (``theorycheck merge``) with one report.  ``theorycheck schedule``
prints the plan for N workers from any results.json, and with ``--markdown`` the per-claim
cost table (:func:`theorycheck.report.costs.cost_markdown`, from :func:`cost_rows`: wall and
CPU seconds, resident peak) it rests on.

A claim that computes several long shared runs is one long unit.  The *warm* plan
(:func:`warm_plan`, ``theorycheck schedule --warm``) splits it: phase 1 computes every shared
run the run recorded as computed, each an independent job into the shared cache
(``theorycheck run MODULE:FUNCTION --set ...``, :func:`warm_commands`), longest first; phase 2
runs the claims, which then read their runs from the cache and cost only the rest.
"""
from __future__ import annotations

import re

from .errors import UsageError
from .results_layout import claim_unit, shared_runs_of

__all__ = ["UNKNOWN_S", "unit_durations", "schedule", "parse_shard", "merge_results",
           "cost_rows", "computed_runs", "disk_costs", "warm_plan", "warm_commands"]

#: the duration given to a unit that the durations file does not know
UNKNOWN_S = 1.0


def disk_costs(results: dict) -> dict[str, tuple[float, bool]]:
    """claim id -> (CPU seconds of the shared runs it read from the disk cache, each counted
    toward the first claim in the run's order that read it; whether any such run's cost is
    unknown).  A run resumed after an interruption reads what the cut run computed: this puts
    that cost back where an uninterrupted run would have counted it (a cache entry keeps the CPU
    seconds of its computation)."""
    seen, out = set(), {}
    for claim in results.get("claims", []):
        added, unknown = 0.0, False
        for used in shared_runs_of(claim):
            if used.get("source") == "disk" and used["key"] not in seen:
                seen.add(used["key"])
                if used.get("cpu_s") is None:
                    unknown = True
                else:
                    added += float(used["cpu_s"])
        out[claim.get("id")] = (added, unknown)
    return out


def unit_durations(results: dict) -> dict[str, float]:
    """unit -> seconds of the claim's case and its controls from a results.json: their process
    CPU seconds (``cost.cpu_s``: what the claim costs on a worker of its own, whatever else ran
    on the machine that recorded it) plus the recorded cost of the shared runs it read from the
    disk cache (`disk_costs`), else their wall seconds (``wall_s``, older runs)."""
    durations, extra = {}, disk_costs(results)
    for claim in results.get("claims", []):
        unit = claim_unit(claim)
        if unit is not None:
            cpu = (claim.get("cost") or {}).get("cpu_s")
            base = float(cpu or claim.get("wall_s") or claim.get("duration_s") or 0.0)
            durations[unit] = base + extra[claim.get("id")][0]
    return durations


def schedule(units: list[str], durations: dict[str, float], bins: int) -> list[dict]:
    """LPT assignment of ``units`` to ``bins``: a list of ``{"units": [...], "seconds": load}``.
    Deterministic: ties are broken by the unit's name."""
    if bins < 1:
        raise UsageError(f"need at least one shard or worker, got {bins}")
    plan = [{"units": [], "seconds": 0.0} for _ in range(bins)]
    for unit in sorted(set(units), key=lambda u: (-durations.get(u, UNKNOWN_S), u)):
        target = min(range(bins), key=lambda i: (plan[i]["seconds"], i))
        plan[target]["units"].append(unit)
        plan[target]["seconds"] += durations.get(unit, UNKNOWN_S)
    return plan


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> (2, 4): shard 2 of 4 (1-based); a :class:`UsageError` otherwise."""
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise UsageError(f"--tc-shard {text!r}: expected I/N with 1 <= I <= N, e.g. 1/4")
    return int(match.group(1)), int(match.group(2))


#: what runs must share to be merged at all
MERGE_SETTINGS = ("schema_version", "tier", "device", "dtype", "seed")
#: what they must share unless ``allow_mixed`` (then the merged run lists what differed)
MERGE_PROVENANCE = ("commit", "theorycheck_version")


def _provenance(part: dict) -> dict:
    """The commit, theorycheck version and library versions a run was made with."""
    environment = part.get("environment") or {}
    return {**{k: part.get(k) for k in MERGE_PROVENANCE},
            **{f"environment.{k}": v for k, v in sorted(environment.items()) if k != "platform"}}


def _shard_count(part: dict) -> int | None:
    """N of a part's ``shard`` field "I/N" (None: not a shard); a :class:`UsageError` for a
    field that is not one."""
    shard = part.get("shard")
    if not shard:
        return None
    try:
        return parse_shard(str(shard))[1]
    except UsageError:
        raise UsageError(f"merge: a run's shard field is {shard!r}, not I/N") from None


def merge_results(parts: list[dict], allow_mixed: bool = False) -> dict:
    """One results document from the results of several shards (or runs) of the same
    settings (:data:`MERGE_SETTINGS`) and provenance (:data:`MERGE_PROVENANCE` and the
    library versions; with ``allow_mixed`` differing provenance is merged and listed in
    ``mixed_provenance``): their claims joined (a claim in two parts must have the same
    outcome, else a :class:`UsageError`), papers joined, counts recomputed; complete when the
    parts are the shards 1..N of one N, else partial."""
    from .report.results import summary_counts

    if not parts:
        raise UsageError("merge: no runs given")
    first = parts[0]
    mixed = {}
    for part in parts[1:]:
        differ = [k for k in MERGE_SETTINGS if part.get(k) != first.get(k)]
        if differ:
            raise UsageError(f"merge: the runs differ in {differ}; merge runs of one setting")
        provenance, theirs = _provenance(first), _provenance(part)
        mixed.update({k: sorted({str(provenance.get(k)), str(theirs.get(k))})
                      for k in sorted(set(provenance) | set(theirs)) if provenance.get(k) != theirs.get(k)})
    if mixed and not allow_mixed:
        raise UsageError("merge: the runs were made with different " + "; ".join(
            f"{k} ({' vs '.join(v)})" for k, v in mixed.items()) + ": rerun the shards at one "
            "commit and environment, or pass --allow-mixed (the report then says so)")
    claims: dict[str, dict] = {}
    for part in parts:
        for claim in part["claims"]:
            seen = claims.get(claim["id"])
            if seen is not None and seen["outcome"] != claim["outcome"]:
                raise UsageError(f"merge: {claim['id']} is {seen['outcome']} in one run and "
                                 f"{claim['outcome']} in another")
            claims.setdefault(claim["id"], claim)
    counts = {_shard_count(part) for part in parts} - {None}
    shards = sorted({part.get("shard") for part in parts if part.get("shard")})
    complete = (len(counts) == 1 and len(shards) == next(iter(counts))
                and all(not p.get("partial") or p.get("shard") for p in parts))
    merged = dict(first, claims=[claims[k] for k in sorted(claims)],
                  papers=dict(sorted({k: v for p in parts for k, v in p.get("papers", {}).items()}.items())),
                  wall_time_s=round(max(p.get("wall_time_s", 0.0) for p in parts), 3),
                  partial=not complete, partial_reason=None if complete else "merged from partial runs",
                  shard=None, merged_from=len(parts), baseline_diff=[], seed_sweep=[])
    if mixed:
        merged["mixed_provenance"] = mixed
    merged["summary"] = summary_counts(merged)
    return merged


def cost_rows(results: dict) -> list[dict]:
    """Per claim (its case and controls) the cost a run recorded, costliest first:
    ``{"claim", "paper", "outcome", "wall_s", "cpu_s", "peak_rss_mb", "from_disk"}`` (CPU and
    peak None in a run recorded before they were measured).  ``cpu_s`` includes the recorded
    cost of the shared runs the claim read first from the disk cache (`disk_costs`: computed by
    an earlier, interrupted run); ``from_disk``: it read one whose cost is unknown, so its CPU
    seconds leave that run out."""
    rows, extra = [], disk_costs(results)
    for claim in results.get("claims", []):
        cost = claim.get("cost") or {}
        wall = cost.get("wall_s", claim.get("wall_s", claim.get("duration_s", 0.0)))
        added, unknown = extra[claim["id"]]
        cpu = None if cost.get("cpu_s") is None else cost["cpu_s"] + added
        rows.append({"claim": claim["id"], "paper": claim["paper"], "outcome": claim["outcome"],
                     "wall_s": float(wall), "cpu_s": cpu,
                     "peak_rss_mb": cost.get("peak_rss_mb"), "from_disk": unknown})
    return sorted(rows, key=lambda r: (-r["wall_s"], r["claim"]))


def computed_runs(results: dict) -> list[dict]:
    """The shared runs whose computation a run recorded -- computed in it, or read from the disk
    cache with the cost their computation stored there -- once each, costliest first:
    ``{"name", "target" (MODULE:FUNCTION), "key", "config", "cpu_s", "claim"}`` (the first claim
    that used it).  Runs computed inside another shared run are inside its cost."""
    runs = {}
    for claim in results.get("claims", []):
        for used in shared_runs_of(claim):
            known = used.get("source") == "computed" or (used.get("source") == "disk"
                                                         and used.get("cpu_s") is not None)
            if known and used["key"] not in runs:
                module, _, function = used["name"].rpartition(".")
                runs[used["key"]] = {"name": used["name"], "target": f"{module}:{function}",
                                     "key": used["key"], "config": used.get("config", {}),
                                     "cpu_s": float(used.get("cpu_s") or 0.0), "claim": claim["id"]}
    return sorted(runs.values(), key=lambda r: (-r["cpu_s"], r["name"], r["key"]))


def warm_plan(results: dict, workers: int) -> dict:
    """Two phases on ``workers`` workers: the computed shared runs (:func:`computed_runs`) as
    independent jobs, longest first; then the claims, each costing its recorded CPU seconds
    less the shared runs its cases computed.  ``{"phase1", "phase2"}`` (each a :func:`schedule`
    plan), ``"makespan"`` (the sum of the phases' makespans) and ``"runs"``."""
    runs = computed_runs(results)
    job = {f"{r['target']}#{r['key'][:12]}": r["cpu_s"] for r in runs}
    extra = disk_costs(results)
    own = {}          # what unit_durations counts for the claim's shared runs
    for claim in results.get("claims", []):
        computed = sum(float(u.get("cpu_s") or 0.0) for u in shared_runs_of(claim) if u.get("source") == "computed")
        own[claim["id"]] = computed + extra[claim["id"]][0]
    durations = unit_durations(results)
    rest = {}
    for claim in results.get("claims", []):
        unit = claim_unit(claim)
        if unit is not None:
            rest[unit] = max(durations.get(unit, 0.0) - own[claim["id"]], 0.0)
    phase1, phase2 = schedule(list(job), job, workers), schedule(list(rest), rest, workers)
    span = lambda plan: max(b["seconds"] for b in plan)  # noqa: E731
    return {"runs": runs, "phase1": phase1, "phase2": phase2,
            "makespan": (span(phase1) if job else 0.0) + span(phase2)}


def warm_commands(results: dict, cache_dir: str = "$CACHE") -> list[str]:
    """One ``theorycheck run`` command per computed shared run of ``results`` (phase 1 of
    :func:`warm_plan`), with the run's tier, seed, device, dtype and threads (1 for a run
    recorded before its threads were kept: the default) and its configuration -- the settings
    the cache key holds, so that the claims, rerun with them, read what the commands stored."""
    import json
    import shlex

    settings = (f"--tier {results.get('tier')} --seed {results.get('seed')} "
                f"--device {results.get('device')} --dtype {results.get('dtype', 'float64')} "
                f"--threads {results.get('threads', 1)}")
    lines = []
    for r in computed_runs(results):
        sets = " ".join(f"--set {shlex.quote(f'{k}={json.dumps(v)}')}" for k, v in sorted(r["config"].items()))
        lines.append(f"theorycheck run {r['target']} {settings} --cache-dir {cache_dir} {sets}".rstrip())
    return lines
