"""``theorycheck`` command line: ``list``, ``report``, ``new``, ``cache``.

* ``theorycheck list [PATH] [--json]``: the registered claims under PATH (default
  ``claims``): id, paper, source, kind, statement and controls.
* ``theorycheck report [RESULTS] [--out DIR]``: re-render report.md, report.html and the
  plots from a results.json (default ``reports/latest/results.json``).
* ``theorycheck new PAPERKEY NAME [--claims-dir DIR]``: scaffold
  ``claims/<paperkey>/test_<name>.py`` with a worked, passing example claim, its negative
  control and a plot, to be edited into the new claim.
* ``theorycheck cache info|clear [--dir DIR]``: the size of the cache of shared runs, or
  empty it (default ``$THEORYCHECK_CACHE_DIR``, else ``./.theorycheck-cache``).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
from pathlib import Path

from .claim import ID_PATTERN, registry

PAPERKEY = re.compile(r"^[a-z][a-z0-9]*$")
NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def collect_claims(path: str) -> list:
    """Import the claim modules under ``path`` (through pytest's collection) and return
    their specs sorted by id.  Raises ``SystemExit`` with pytest's message on a collection
    error (e.g. a claim declared without a control)."""
    import pytest

    if not Path(path).exists():
        raise SystemExit(f"theorycheck list: no such path {path!r}")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = pytest.main([path, "--collect-only", "-q", "--tc-no-report", "-p", "no:cacheprovider"])
    if code not in (0, 5):
        raise SystemExit(f"theorycheck list: collecting {path!r} failed:\n{buffer.getvalue()}")
    return [registry[k] for k in sorted(registry)]


def cmd_list(args) -> int:
    specs = collect_claims(args.path)
    if args.json:
        print(json.dumps([s.to_json() for s in specs], indent=1))
        return 0
    for s in specs:
        label = " [discrepancy, corrected by %s]" % s.corrected_by if s.kind == "discrepancy" else ""
        print(f"{s.id}  ({s.paper}, {s.source}){label}\n    {s.statement}")
        for name, description in s.controls.items():
            print(f"    control {name}: {description}")
    total_controls = sum(len(s.controls) for s in specs)
    print(f"{len(specs)} claims, {total_controls} negative controls")
    return 0


def cmd_report(args) -> int:
    from .report import rerender, summarize, load_results

    path = Path(args.results)
    if not path.is_file():
        raise SystemExit(f"theorycheck report: no results file at {str(path)!r}")
    out = rerender(path, args.out)
    print(summarize(load_results(out / "results.json")))
    print(f"report: {out / 'report.html'}")
    return 0


TEMPLATE = '''"""{paperkey}: {name} -- a worked example; replace it with the paper's statement.

Cite the paper here (authors, title, arXiv id) and state the math the claim checks.

Example statement (a classical fact, so that the scaffold runs and passes as it is):
gradient descent on f(w) = 1/2 w^T A w with step eta = 1/L contracts the error as
||w_t|| <= (1 - mu/L)^t ||w_0||, where mu, L are the extreme eigenvalues of A.
"""
import numpy as np
import scipy.linalg

from theorycheck import claim


@claim(
    "{claim_id}",
    source="(e.g. Theorem 1)",
    statement="GD with step 1/L on a strongly convex quadratic contracts at rate 1 - mu/L.",
    controls={{
        "too_fast_rate": "compare against the rate (1 - mu/L)^2, faster than the truth: must fail",
    }},
    sizes={{"quick": {{"d": 20, "steps": 200}}, "full": {{"d": 500, "steps": 2000}}}},
)
def test_{name}(tc):
    d, steps = tc.sizes["d"], tc.sizes["steps"]
    rng = tc.rng("data")
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    A = Q @ np.diag(np.linspace(1.0, 10.0, d)) @ Q.T
    mu, L = scipy.linalg.eigvalsh(A)[[0, -1]]
    w = rng.standard_normal(d)
    norms = [np.linalg.norm(w)]
    for _ in range(steps):
        w = w - (A @ w) / L
        norms.append(np.linalg.norm(w))
    t = np.arange(steps + 1)
    rate = 1 - mu / L
    if tc.control == "too_fast_rate":
        rate = rate**2
    bound = rate**t * norms[0]
    tc.record("rate", rate)
    tc.check.at_most("error below the contraction bound", norms, bound, margin=1e-12)
    tc.curve("error", "||w_t||", t, norms, yscale="log", ylabel="error")
    tc.curve("error", "(1 - mu/L)^t ||w_0||", t, bound, style="bound")
'''


def cmd_new(args) -> int:
    if not PAPERKEY.match(args.paperkey):
        raise SystemExit(f"theorycheck new: paper key {args.paperkey!r} must be lower-case "
                         "letters and digits, starting with a letter (e.g. abc24)")
    if not NAME.match(args.name):
        raise SystemExit(f"theorycheck new: name {args.name!r} must be a lower-case identifier")
    claim_id = f"{args.paperkey}.example.{args.name}"
    assert ID_PATTERN.match(claim_id)
    root = Path(args.claims_dir)
    package = root / args.paperkey
    target = package / f"test_{args.name}.py"
    if target.exists():
        raise SystemExit(f"theorycheck new: {target} exists; not overwriting it")
    package.mkdir(parents=True, exist_ok=True)
    for init in (root / "__init__.py", package / "__init__.py"):
        if not init.exists():
            init.write_text("")
    target.write_text(TEMPLATE.format(paperkey=args.paperkey, name=args.name, claim_id=claim_id))
    print(f"wrote {target}; run it with: pytest {target}")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="theorycheck", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="list the registered claims")
    p.add_argument("path", nargs="?", default="claims")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_list)
    p = sub.add_parser("report", help="re-render the report from a results.json")
    p.add_argument("results", nargs="?", default="reports/latest/results.json")
    p.add_argument("--out", default=None, help="output directory (default: beside the results)")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("new", help="scaffold a claim file for a paper")
    p.add_argument("paperkey")
    p.add_argument("name")
    p.add_argument("--claims-dir", default="claims")
    p.set_defaults(func=cmd_new)
    p = sub.add_parser("cache", help="size of the cache of shared runs, or empty it")
    p.add_argument("action", choices=("info", "clear"))
    p.add_argument("--dir", default=None,
                   help="cache directory (default: $THEORYCHECK_CACHE_DIR or ./.theorycheck-cache)")
    p.set_defaults(func=cmd_cache)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
