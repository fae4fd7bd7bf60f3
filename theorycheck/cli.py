"""``theorycheck`` command line: ``list``, ``report``, ``diff``, ``baseline``, ``sweep``,
``new``, ``run``, ``merge``, ``schedule``, ``cache``.

* ``theorycheck list [PATH] [-v [--tier T]] [--json]``: the registered claims under PATH (default
  ``claims``): id, paper, source, kind, statement and controls (``-v``: with each claim's
  false-failure bound and each control's miss bound from ``reports/calibration-<tier>.json``) -- from the manifest the last
  collection wrote (:mod:`theorycheck.manifest`) while it is current, else by collecting.
* ``theorycheck report [RESULTS] [--out DIR]``: re-render report.md, report.html and the
  plots from a results.json or a run folder (default: the latest complete run).
* ``theorycheck diff OLD NEW [--rtol R]``: what changed between two runs (results.json, run
  folders or digests): outcomes, values that moved by more than ``R`` relative, claims in
  one run only; a note when seeds, tiers, dtypes or devices differ.
* ``theorycheck baseline [RESULTS] [--out FILE]``: write the digest of a run (default: the
  latest complete run into ``reports/baseline-<tier>.json``), the file a run compares with.
* ``theorycheck sweep [--seeds 0-19] [--out DIR] [--calibration FILE] [PYTEST ARGS]``: run
  pytest once per base seed (each in a fresh process) and aggregate each claim's pass rate beside the
  rate its calibration row (else its binomial tests) predicts, each control's failure rate,
  and per decision its worst margin over the seeds (:mod:`theorycheck.sweep`).
* ``theorycheck calibrate [CLAIM-or-PAPER ...] --seeds A-B [-n N] [--tier T] [--out FILE]
  [--runs DIR | --from-runs DIR] [--cache-dir DIR]``:
  run the claims and their controls once per seed and merge their false-failure and miss
  rows into the calibration table (default ``reports/calibration-<tier>.json``) and its page
  ``docs/calibration.md`` (:mod:`theorycheck.calibrate`).  Each seed runs without the cache of
  shared runs unless ``--cache-dir`` names one: then claims calibrated one after another on the
  same seeds compute the runs they share once (the cache's key holds the seed, tier and code).
* ``theorycheck new PAPERKEY NAME [--claims-dir DIR]``: scaffold
  ``claims/<paperkey>/__init__.py`` (the paper's :func:`theorycheck.paper` declaration, with
  placeholder citation that the conformance suite refuses until it is filled in) and
  ``claims/<paperkey>/test_<name>.py``: a passing claim of a known shape built from library
  pieces (:mod:`theorycheck.scaffold`), to be edited into the new claim; names every file written.
* ``theorycheck run MODULE:FUNCTION [--tier] [--seed] [--device] [--set NAME=VALUE]
  [--save FILE.npz] [-i]``: run one shared run outside pytest with a claim run's settings,
  print a summary of what it returns, save its arrays or open a prompt on them
  (:mod:`theorycheck.explore`): the way to explore before writing a claim.
* ``theorycheck merge RUN... --out DIR``: the runs of several shards (``pytest --tc-shard
  I/N``) joined into one run and report (:mod:`theorycheck.shards`).
* ``theorycheck schedule [RESULTS] [--workers N] [--markdown [--top N]] [--warm]
  [--commands [--cache-dir DIR]]``: the longest-first plan of a run's claims on N workers and
  its makespan; ``--markdown`` the per-claim cost table (wall and CPU seconds, resident peak)
  for BENCHMARKS.md; ``--warm`` the two-phase plan (the shared runs as independent jobs, then
  the claims from the cache) and ``--commands`` its first phase's ``theorycheck run`` lines.
* ``theorycheck cache info|clear [--dir DIR]``: the size of the cache of shared runs, or
  empty it (default ``$THEORYCHECK_CACHE_DIR``, else ``<rootdir>/.theorycheck-cache``: the one a
  pytest run in the same folder uses, :func:`theorycheck.cache.default_cache_dir`).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

from .errors import InvalidInputError, UsageError
from .files import write_json
from .history import RTOL
from .papers import PAPER_KEY


def collect_claims(path: str) -> list[dict]:
    """The claims declared under ``path`` (``ClaimSpec.to_json`` dicts sorted by id): from the
    manifest while it is current for ``path``, else by importing the claim modules through
    pytest's collection (which writes the manifest).  Raises ``SystemExit`` with one line when
    ``path`` does not exist, and with pytest's message on a collection error (e.g. a claim
    declared without a control)."""
    from .manifest import read_claims

    if not Path(path).exists():
        raise SystemExit(f"theorycheck list: no such path {path!r} (run it in the project's "
                         "root, where claims/ is, or give the path of a claims folder)")
    listed = read_claims(path)
    if listed is not None:
        return listed
    import pytest

    from .claim import registry

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = pytest.main([path, "--collect-only", "-q", "--tc-no-report", "-p", "no:cacheprovider"])
    if code not in (0, 5):
        raise SystemExit(f"theorycheck list: collecting {path!r} failed:\n{buffer.getvalue()}")
    root = Path(path).resolve()
    return [registry[k].to_json() for k in sorted(registry)
            if _declared_under(registry[k].module, root)]


def _declared_under(module: str, root: Path) -> bool:
    filename = getattr(sys.modules.get(module), "__file__", None)
    if filename is None:
        return True
    file = Path(filename).resolve()
    return file == root or root in file.parents


def _claims_with_maps() -> dict[str, list[str]]:
    """claim id -> the names of the boundary maps it recorded in the latest complete run
    (``reports/latest``; none without one, or when its results file cannot be read)."""
    from .history import latest_run_dir
    from .results_layout import map_names, read_results

    run = latest_run_dir(Path("reports"))
    if run is None:
        return {}
    try:  # unvalidated: the listing must not wait for the schema check of a full run's file
        claims = read_results(run)["claims"]
        mapped = {c["id"]: map_names(c) for c in claims}
    except (InvalidInputError, KeyError, TypeError, AttributeError):  # a listing does not depend on it
        return {}
    return {cid: names for cid, names in mapped.items() if names}


def _list_path(given: str) -> str:
    """A path, or a paper key naming ``claims/<key>``."""
    if not Path(given).exists() and PAPER_KEY.match(given) and (Path("claims") / given).is_dir():
        return str(Path("claims") / given)
    return given


def cmd_list(args) -> int:
    from itertools import groupby

    from .calibrate import bound_text, load_table

    specs = collect_claims(_list_path(args.path))
    mapped = _claims_with_maps()
    calibrated = load_table(Path("reports") / f"calibration-{args.tier}.json")["claims"] \
        if args.verbose else {}
    if args.json:
        print(json.dumps(specs, indent=1))
        return 0
    for paper, group in groupby(sorted(specs, key=lambda s: (s["paper"], s["id"])), key=lambda s: s["paper"]):
        group = list(group)
        controls = sum(len(s["controls"]) for s in group)
        refuted = sum(s["kind"] == "discrepancy" for s in group)
        print(f"{paper}: {len(group)} claims ({refuted} refuting a statement as written), "
              f"{controls} negative controls")
        for s in group:
            label = " [discrepancy]" if s["kind"] == "discrepancy" else ""
            nature = f" [{s['nature']}]" if s.get("nature", "theorem") != "theorem" else ""
            maps = f" [map: {', '.join(mapped[s['id']])}]" if s["id"] in mapped else ""
            print(f"  {s['id']}  ({s['source']}){label}{nature}{maps}; controls: {', '.join(s['controls'])}")
            if args.verbose:
                entry = calibrated.get(s["id"]) or {"claim": None, "controls": {}}
                print(f"      {s['statement']}\n      provenance: {s['provenance']}\n"
                      f"      {args.tier} tier: {bound_text(entry['claim'])}")
                if s.get("over_budget") and args.tier == "quick":
                    print(f"      over budget by design: {s['over_budget']}")
                for name, c in s["controls"].items():
                    print(f"      control {name} [{c['kind']}, breaks {list(c['breaks'])}]: "
                          f"{c['description']}\n        {bound_text(entry['controls'].get(name))}")
    total_controls = sum(len(s["controls"]) for s in specs)
    papers = len({s["paper"] for s in specs})
    print(f"{len(specs)} claims, {total_controls} negative controls, {papers} papers"
          + ("" if args.verbose else " (-v: statements, controls and calibrated bounds)"))
    return 0


def _results_path(given: str | None, verb: str) -> Path:
    """The results.json that ``given`` names (a file or a run folder), or the latest run's."""
    from .history import latest_run_dir
    from .results_layout import results_file

    if given is None:
        latest = latest_run_dir(Path("reports"))
        if latest is None:
            raise SystemExit(f"theorycheck {verb}: no complete run under reports/ (run pytest "
                             "first, or give a results.json)")
        return results_file(latest)
    path = results_file(given)
    if not path.is_file():
        raise SystemExit(f"theorycheck {verb}: no results file at {str(path)!r}")
    return path


def _load_results_or_exit(path: Path, verb: str) -> dict:
    from .results_layout import load_results

    try:
        return load_results(path)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SystemExit(f"theorycheck {verb}: {path} is not a valid results file: {first}") from None


def cmd_report(args) -> int:
    from .report import rerender, summarize

    path = _results_path(args.results, "report")
    results = _load_results_or_exit(path, "report")
    out = rerender(path, args.out, results=results)
    print(summarize(results))
    print(f"report: {out / 'report.html'}")
    return 0


def cmd_diff(args) -> int:
    from .history import diff_digests, format_diff, load_comparable, setting_warnings

    old, new = (load_comparable(_results_path(p, "diff")) for p in (args.old, args.new))
    # a partial NEW run is compared on the claims it ran, not reported as dropping the rest
    changes = diff_digests(old, new, rtol=args.rtol, only_new=bool(new.get("partial")))
    lines = format_diff(changes, limit=args.limit)
    def label(d: dict) -> str:
        return (f"{d.get('tier')} tier, seed {d.get('seed')}, commit "
                f"{str(d.get('commit'))[:10]}{', partial' if d.get('partial') else ''}")
    print(f"theorycheck diff: {args.old} ({label(old)}) -> {args.new} ({label(new)})")
    for note in setting_warnings(old, new):
        print(f"warning: {note}")
    outcomes = [c for c in changes if c["what"].endswith(("outcome", "present"))]
    print(f"{len(outcomes)} changed outcomes, {len(changes) - len(outcomes)} values moved by more "
          f"than {args.rtol:.0%} (relative)")
    for line in lines:
        print("  " + line)
    if args.json:
        write_json(args.json, changes, indent=1)
    return 0


def cmd_baseline(args) -> int:
    from .history import write_baseline

    path = _results_path(args.results, "baseline")
    results = _load_results_or_exit(path, "baseline")
    if results.get("partial"):
        raise SystemExit(f"theorycheck baseline: {path} is a partial run ({results.get('partial_reason')}); "
                         "a baseline needs a complete run")
    out = Path(args.out or f"reports/baseline-{results['tier']}.json")
    claims = write_baseline(out, results)
    print(f"theorycheck baseline: wrote {out} ({claims} claims, {results['tier']} tier, "
          f"seed {results['seed']}, commit {str(results.get('commit'))[:10]})")
    return 0


def _sweep_calibration(given: str | None, pytest_args: list[str]) -> dict | None:
    """The calibration table a sweep predicts from: ``--calibration FILE``, ``none`` for no
    table, else ``reports/calibration-<tier>.json`` of the tier in the pytest arguments."""
    from .calibrate import load_table

    if given is not None and given.lower() == "none":
        return None
    if given is not None:
        if not Path(given).is_file():
            raise UsageError(f"--calibration {given!r}: no such file")
        return load_table(given)
    tier = "quick"
    for i, arg in enumerate(pytest_args):
        if arg == "--tc-tier" and i + 1 < len(pytest_args):
            tier = pytest_args[i + 1]
        elif arg.startswith("--tc-tier="):
            tier = arg.split("=", 1)[1]
    return load_table(Path("reports") / f"calibration-{tier}.json")


def cmd_sweep(args, pytest_args: list[str]) -> int:
    from datetime import datetime, timezone

    from .calibrate import calibrated_seeds, format_seeds
    from .report import report_folder, write_report
    from .sweep import aggregate, format_sweep, load_runs, parse_seeds, run_seeds

    seeds = parse_seeds(args.seeds)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = report_folder(args.out or f"reports/sweeps/{stamp}-seeds{seeds[0]}-{seeds[-1]}")
    print(f"theorycheck sweep: {len(seeds)} seeds ({args.seeds}) of pytest {' '.join(pytest_args)}"
          f" -> {out}")
    table = _sweep_calibration(args.calibration, pytest_args)
    reused = sorted(set(seeds) & calibrated_seeds(table or {}))
    if reused:
        print(f"note: seeds {format_seeds(reused)} were used to calibrate the table's rows: a sweep "
              "that tests the calibration needs seeds it has not seen")
    found = run_seeds(seeds, pytest_args, out, jobs=args.jobs)
    if not found:
        raise SystemExit(f"theorycheck sweep: no seed produced results (see the logs in {out})")
    runs = load_runs(found)
    entries = aggregate(runs, table)
    write_json(out / "sweep.json", {"seeds": sorted(found), "pytest_args": pytest_args,
                                    "seed_sweep": entries}, indent=1)
    results = dict(runs[0], seed_sweep=entries)
    write_report(results, out)
    for line in format_sweep(entries):
        print(line)
    print(f"report: {out / 'report.html'}")
    return 1 if any(e["flaky"] for e in entries) else 0


def _calibration_targets(names: list[str], claims_dir: str) -> tuple[list[dict], list[str]]:
    """The claims named by ids or paper keys, and their pytest node ids (``path::function``)."""
    from .results_layout import claim_unit

    specs = collect_claims(claims_dir)
    by_id = {s["id"]: s for s in specs}
    chosen: dict[str, dict] = {}
    for name in names or sorted({s["paper"] for s in specs}):
        found = [by_id[name]] if name in by_id else [s for s in specs if s["paper"] == name]
        if not found:
            raise UsageError(f"no claim or paper named {name!r} under {claims_dir} "
                             "(theorycheck list shows the ids)")
        chosen.update((s["id"], s) for s in found)
    nodes = sorted({claim_unit(s) for s in chosen.values()})
    return sorted(chosen.values(), key=lambda s: s["id"]), nodes


def cmd_calibrate(args) -> int:
    import shutil
    import tempfile

    from . import calibrate
    from .results_layout import RESULTS_FILE
    from .sweep import load_runs, parse_seeds, run_seeds

    seeds = parse_seeds(args.seeds)
    calibrate.check_unspent(seeds, "--seeds")
    specs, nodes = _calibration_targets(args.claims, args.claims_dir)
    out = Path(args.out or f"reports/calibration-{args.tier}.json")
    calibrate.load_table(out)  # a file that is no table is refused before any seed runs
    if args.from_runs:
        work = Path(args.from_runs)
        found = {s: work / f"seed{s}" / RESULTS_FILE for s in seeds
                 if (work / f"seed{s}" / RESULTS_FILE).is_file()}
        print(f"theorycheck calibrate: {len(specs)} claims from the runs of {len(found)} of "
              f"{len(seeds)} seeds kept in {work}")
    else:
        work = Path(args.runs) if args.runs else Path(tempfile.mkdtemp(prefix="theorycheck-calibrate-"))
        print(f"theorycheck calibrate: {len(specs)} claims over {len(seeds)} seeds "
              f"({calibrate.format_seeds(seeds)}), {args.tier} tier; runs in {work}")
        cache = ["--tc-cache-dir", str(Path(args.cache_dir).resolve())] if args.cache_dir else ["--tc-no-cache"]
        found = run_seeds(seeds, [*nodes, "--tc-tier", args.tier, *cache], work,
                          jobs=args.workers, progress=print)
    if not found:
        raise SystemExit(f"theorycheck calibrate: no seed produced results (see the logs in {work})")
    runs = load_runs(found)
    tiers = {r["tier"] for r in runs}
    if tiers != {args.tier}:
        raise SystemExit(f"theorycheck calibrate: the runs are of the {sorted(tiers)} tier, not {args.tier}")
    rows = calibrate.calibrate_rows(runs, sorted(found), [s["id"] for s in specs])
    if not args.runs and not args.from_runs and len(found) == len(seeds):
        shutil.rmtree(work)
    commits = sorted({str(r.get("commit"))[:10] for r in runs})
    # read again: another calibrate may have written the table while the seeds ran
    table = calibrate.merge_table(calibrate.load_table(out), rows, args.tier, commit=",".join(commits))
    calibrate.write_table(out, table)
    pages = [calibrate.load_table(p) for p in sorted(out.parent.glob("calibration-*.json"))]
    calibrate.write_page(args.markdown, pages)
    for cid, entry in rows.items():
        print(f"{cid}: {calibrate.bound_text(entry['claim'])}")
        for name, row in entry["controls"].items():
            print(f"  control {name}: {calibrate.bound_text(row)}")
    print(f"wrote {out} and {args.markdown}")
    return 0


def cmd_new(args) -> int:
    from .scaffold import check_names, scaffold

    check_names(args.paperkey, args.name)
    package = Path(args.claims_dir) / args.paperkey
    existed = (package / "__init__.py").exists()
    written = scaffold(args.paperkey, args.name, args.claims_dir)
    for path in written:
        print(f"wrote {path}")
    if existed:
        print(f"{package / '__init__.py'} exists: add 'thm1.{args.name}' to its expected_ids")
    else:
        print(f"fill in the citation in {package / '__init__.py'}: the conformance suite refuses "
              "the placeholders until then")
    print(f"run it with: pytest {written[-1]}")
    return 0


def cmd_cache(args) -> int:
    from .cache import DiskCache, default_cache_dir
    from .errors import UsageError

    try:
        cache = DiskCache.existing(args.dir or default_cache_dir())
    except UsageError as exc:
        raise SystemExit(f"theorycheck cache {args.action}: {exc}") from None
    if args.action == "info":
        print(f"theorycheck cache: {cache.info().line()}")
    else:
        print(f"theorycheck cache: removed {cache.clear().line()}")
    return 0


def cmd_run(args) -> int:
    import code

    import numpy as np

    from .explore import arrays_of, parse_config, run_shared, summarize

    value, record = run_shared(args.target, tier=args.tier, seed=args.seed, device=args.device,
                               dtype=args.dtype, threads=args.threads, config=parse_config(args.set),
                               cache_dir=args.cache_dir, use_cache=not args.no_cache)
    seed = f"seed {args.seed}" if record["seed"] is not None else "seedless: one value for every seed"
    print(f"theorycheck run: {record['name']} ({args.tier} tier, {seed}, "
          f"{args.device} device; {record['source']}; sizes {record['sizes']}; "
          f"config {record['config']})")
    for line in summarize(value):
        print("  " + line)
    arrays = arrays_of(value)
    if args.save:
        np.savez(args.save, **arrays)
        print(f"saved {len(arrays)} arrays to {args.save} (numpy.load; keys are the paths above)")
    if args.interactive:
        code.interact(banner="theorycheck run: `value` is the run's value, `arrays` its arrays by "
                             "path, np and torch imported; Ctrl-D leaves",
                      local={"value": value, "arrays": arrays, "np": np,
                             "torch": __import__("torch")}, exitmsg="")
    return 0


def _refuse_output_over_inputs(out: str, inputs: list[Path]) -> None:
    """A :class:`UsageError` when the folder ``out`` holds one of ``inputs``."""
    folder = Path(out).resolve()
    for path in inputs:
        if folder in path.resolve().parents:
            raise UsageError(f"--out {out!r} holds the input {str(path)!r}: the merged run goes "
                             "into a new folder, never over the runs it merges")


def cmd_merge(args) -> int:
    from .report import summarize, write_report
    from .shards import merge_results

    paths = [_results_path(p, "merge") for p in args.runs]
    _refuse_output_over_inputs(args.out, paths)
    parts = [_load_results_or_exit(path, "merge") for path in paths]
    merged = merge_results(parts, allow_mixed=args.allow_mixed)
    out = write_report(merged, args.out)
    print(summarize(merged) + ("" if not merged["partial"] else " (partial: not every shard given)"))
    print(f"report: {out / 'report.html'}")
    return 0


def cmd_schedule(args) -> int:
    from .report.costs import cost_markdown
    from .shards import schedule, unit_durations, warm_commands, warm_plan

    results = _load_results_or_exit(_results_path(args.results, "schedule"), "schedule")
    if args.markdown:
        print(cost_markdown(results, args.workers, top=args.top), end="")
        return 0
    if args.commands:
        print("\n".join(warm_commands(results, args.cache_dir)))
        return 0
    if args.warm:
        plan = warm_plan(results, args.workers)
        for phase, what in (("phase1", "shared runs"), ("phase2", "claims from the cache")):
            span = max(b["seconds"] for b in plan[phase])
            print(f"{phase}: {what}, makespan {span:.0f} s on {args.workers} workers")
            for i, b in enumerate(plan[phase], 1):
                head = ", ".join(u.split("::")[-1].split(":")[-1] for u in b["units"][:4])
                more = f" (+{len(b['units']) - 4})" if len(b["units"]) > 4 else ""
                print(f"  worker {i:2d}: {b['seconds']:8.1f} s  {len(b['units'])} jobs: {head}{more}")
        print(f"warm plan: {len(plan['runs'])} shared runs, then the claims: {plan['makespan']:.0f} s "
              "in all (theorycheck schedule --commands prints phase 1's commands)")
        return 0
    durations = unit_durations(results)
    plan = schedule(list(durations), durations, args.workers)
    total = sum(durations.values())
    print(f"{len(durations)} claims, {total:.0f} s in all; longest first on {args.workers} workers: "
          f"makespan {max(b['seconds'] for b in plan):.0f} s (ideal {total / args.workers:.0f} s)")
    for i, b in enumerate(plan, 1):
        head = ", ".join(u.split("::")[-1] for u in b["units"][:4])
        more = f" (+{len(b['units']) - 4})" if len(b["units"]) > 4 else ""
        print(f"  worker {i:2d}: {b['seconds']:8.1f} s  {len(b['units'])} claims: {head}{more}")
    return 0


def cmd_schema(args) -> int:
    from .report.schema_doc import load_schema, schema_markdown

    sys.stdout.write(schema_markdown() if args.markdown else json.dumps(load_schema(), indent=1) + "\n")
    return 0


def _verb_on_a_run(sub, name: str, help_text: str, func, out_help: str) -> None:
    """A verb reading one run (``RESULTS``, default the latest complete run) with ``--out``."""
    p = sub.add_parser(name, help=help_text)
    p.add_argument("results", nargs="?", default=None,
                   help="results.json or run folder (default: the latest complete run)")
    p.add_argument("--out", default=None, help=out_help)
    p.set_defaults(func=func)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="theorycheck",
        description="Executable claims of ML-theory papers. The claims run under pytest "
                    "(`pytest claims`, options --tc-tier, --tc-device, --tc-seed, ...); these "
                    "verbs list them, run one shared run, compare and re-render runs, sweep "
                    "seeds and start a new paper.",
        epilog="Each verb has its own --help. Docs: README.md, docs/writing-claims.md, the API "
               "reference in docs/api (sphinx-build docs/api docs/_build/api).")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="list the registered claims, by paper")
    p.add_argument("path", nargs="?", default="claims",
                   help="a claims folder, a paper's folder or a paper key (default: claims)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="statements, controls and their calibrated bounds too")
    p.add_argument("--tier", choices=("quick", "full"), default="quick",
                   help="with -v: the tier whose calibration table to show (default quick)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_list)
    _verb_on_a_run(sub, "report", "re-render the report from a results.json", cmd_report,
                   "output directory (default: beside the results)")
    p = sub.add_parser("diff", help="what changed between two runs")
    p.add_argument("old", help="results.json, run folder or digest (baseline) file")
    p.add_argument("new", help="results.json, run folder or digest file")
    p.add_argument("--rtol", type=float, default=RTOL,
                   help=f"list values that moved by more than this, relative (default {RTOL})")
    p.add_argument("--limit", type=int, default=None, help="print at most this many changes (>= 0)")
    p.add_argument("--json", default=None, help="also write the changes to this file")
    p.set_defaults(func=cmd_diff)
    _verb_on_a_run(sub, "baseline", "write the digest of a run (the committed baseline)",
                   cmd_baseline, "default: reports/baseline-<tier>.json")
    p = sub.add_parser("sweep", help="run pytest over several base seeds; pass rates, flaky claims",
                       description="Arguments after the options go to pytest (e.g. claims/vdt24).")
    p.add_argument("--seeds", default="0-19",
                   help="seeds, e.g. 0-19 or 0,3,7 (default 0-19; at most 1000 seeds)")
    p.add_argument("--out", default=None, help="default: reports/sweeps/<time>-seeds<a>-<b>/")
    p.add_argument("--jobs", type=int, default=1, help="seeds run at the same time (default 1)")
    p.add_argument("--calibration", default=None,
                   help="the calibration table the pass rates are predicted from (default "
                        "reports/calibration-<tier>.json; none: the statistical tests only)")
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser("calibrate", help="false-failure and miss rates of claims and controls over seeds",
                       description="Runs the named claims (ids or paper keys; default all) and "
                                   "their controls once per seed and merges their rows into the "
                                   "calibration table and its page.")
    p.add_argument("claims", nargs="*", help="claim ids or paper keys (default: every claim)")
    p.add_argument("--seeds", required=True, help="seeds outside 0-19, e.g. 1000-1049")
    p.add_argument("-n", "--workers", type=int, default=1, help="seeds run at the same time (default 1)")
    p.add_argument("--tier", choices=("quick", "full"), default="quick")
    p.add_argument("--out", default=None, help="the table (default reports/calibration-<tier>.json)")
    p.add_argument("--markdown", default="docs/calibration.md",
                   help="its generated page, from every calibration-*.json beside --out "
                        "(default docs/calibration.md)")
    p.add_argument("--runs", default=None, help="keep the seeds' runs in this folder (default: a "
                                                "temporary folder, removed when every seed gave results)")
    p.add_argument("--from-runs", default=None, metavar="DIR",
                   help="run nothing: read the seeds' runs kept earlier with --runs DIR (the "
                        "margins are recomputed with the current definitions)")
    p.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="keep the seeds' shared runs in this cache folder and reuse those computed "
                        "there before (by calibrations of other claims on the same seeds, tier and "
                        "code); default: none, every seed computes its shared runs")
    p.add_argument("--claims-dir", default="claims")
    p.set_defaults(func=cmd_calibrate)
    p = sub.add_parser("new", help="scaffold a claim file for a paper")
    p.add_argument("paperkey")
    p.add_argument("name")
    p.add_argument("--claims-dir", default="claims")
    p.set_defaults(func=cmd_new)
    p = sub.add_parser("run", help="run one shared run outside pytest and summarize what it returns",
                       description="Runs MODULE:FUNCTION (a @shared_run) with the settings of a "
                                   "claim run (float64, one CPU thread, TF32 off, freed memory kept) "
                                   "through the shared-run cache, and prints what it returns.")
    p.add_argument("target", help="MODULE:FUNCTION, e.g. claims.jta24.joint:joint_runs")
    p.add_argument("--tier", default="quick", help="quick (default) or full")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument("--device", default="auto", help="auto (default), cpu or cuda")
    p.add_argument("--dtype", default="float64", help="float64 (default) or float32")
    p.add_argument("--threads", type=int, default=1, help="CPU threads (default 1)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a configuration argument of the run (JSON value), repeatable")
    p.add_argument("--save", default=None, metavar="FILE.npz", help="save every array it returns")
    p.add_argument("-i", "--interactive", action="store_true",
                   help="open a Python prompt with the value")
    p.add_argument("--cache-dir", default=None,
                   help="cache directory (default: $THEORYCHECK_CACHE_DIR or <rootdir>/.theorycheck-cache, "
                        "the one pytest run here uses)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the disk cache")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("merge", help="join the runs of several shards into one run and report")
    p.add_argument("runs", nargs="+", help="results.json files or run folders")
    p.add_argument("--out", required=True, help="the merged run's folder (a new or empty one)")
    p.add_argument("--allow-mixed", action="store_true",
                   help="merge runs of different commits or library versions (the report names "
                        "what differs); runs of different tiers, seeds or settings never merge")
    p.set_defaults(func=cmd_merge)
    p = sub.add_parser("schedule", help="longest-first plan of a run's claims on N workers")
    p.add_argument("results", nargs="?", default=None,
                   help="results.json or run folder (default: the latest complete run)")
    p.add_argument("--workers", type=int, default=16, help="workers (default 16)")
    p.add_argument("--markdown", action="store_true",
                   help="the per-claim cost table (wall, CPU, peak memory) and the plan, as markdown")
    p.add_argument("--top", type=int, default=None, help="with --markdown: the N costliest claims only")
    p.add_argument("--warm", action="store_true",
                   help="two phases: the shared runs as independent jobs, then the claims from the cache")
    p.add_argument("--commands", action="store_true",
                   help="the theorycheck run commands of the warm plan's first phase")
    p.add_argument("--cache-dir", default="$CACHE", help="with --commands: the shared cache directory")
    p.set_defaults(func=cmd_schedule)
    p = sub.add_parser("schema", help="print the JSON Schema of results.json")
    p.add_argument("--markdown", action="store_true",
                   help="the layout as the docs page docs/results-schema.md instead")
    p.set_defaults(func=cmd_schema)
    p = sub.add_parser("cache", help="size of the cache of shared runs, or empty it")
    p.add_argument("action", choices=("info", "clear"))
    p.add_argument("--dir", default=None,
                   help="cache directory (default: $THEORYCHECK_CACHE_DIR or <rootdir>/.theorycheck-cache, "
                        "the one pytest run here uses)")
    p.set_defaults(func=cmd_cache)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one verb; a bad input exits non-zero with one line naming the problem."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and args.func is not cmd_sweep:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return args.func(args, rest) if args.func is cmd_sweep else args.func(args)
    except (UsageError, InvalidInputError) as exc:
        raise SystemExit(f"theorycheck {args.command}: {exc}") from None


if __name__ == "__main__":
    sys.exit(main())
