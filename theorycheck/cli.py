"""``theorycheck`` command line: ``list``, ``report``, ``new``, ``cache``.

* ``theorycheck list [PATH] [--json]``: the registered claims under PATH (default
  ``claims``): id, paper, source, kind, statement and controls.
* ``theorycheck report [RESULTS] [--out DIR]``: re-render report.md, report.html and the
  plots from a results.json (default ``reports/latest/results.json``).
* ``theorycheck new PAPERKEY NAME [--claims-dir DIR]``: scaffold
  ``claims/<paperkey>/__init__.py`` (the paper's :func:`theorycheck.paper` declaration, with
  placeholders to fill in) and ``claims/<paperkey>/test_<name>.py`` with a worked, passing
  example claim (provenance, a precondition, a conclusion, a negative control, a plot) that
  passes the conformance suite as it is, to be edited into the new claim.
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
        print(f"    provenance: {s.provenance}")
        for name, c in s.controls.items():
            print(f"    control {name} [{c.kind}, breaks {list(c.breaks)}]: {c.description}")
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


PAPER_TEMPLATE = '''"""{paperkey}: the claims of one paper.  Fill in the citation and the claim index."""
from theorycheck import paper

paper(
    "{paperkey}",
    authors="(the authors, e.g. A. Author, B. Author)",
    title="(the paper's title)",
    arxiv="0000.00000",
    year=None,
    expected_ids=[
        "example.{name}",
    ],
)
'''

TEMPLATE = '''"""{paperkey}: {name} -- a worked example; replace it with the paper's statement."""
import numpy as np
import scipy.linalg

from theorycheck import Control, claim


@claim(
    "{claim_id}",
    source="(e.g. Theorem 1)",
    statement="GD with step 1/L on a strongly convex quadratic contracts at rate 1 - mu/L.",
    provenance="derived",
    controls={{
        "too_fast_rate": Control(
            "statement", breaks=["error below the contraction bound"],
            description="compare against the rate (1 - mu/L)^2, faster than the truth"),
        "indefinite": Control(
            "hypothesis", breaks=["error below the contraction bound"],
            description="flip the sign of the smallest eigenvalue: A is no longer positive "
                        "definite and the error grows along that eigenvector"),
    }},
    sizes={{"quick": {{"d": 20, "steps": 200}}, "full": {{"d": 500, "steps": 2000}}}},
)
def test_{name}(tc):
    """Gradient descent on f(w) = 1/2 w^T A w with step eta = 1/L, where mu > 0 and L are
    the extreme eigenvalues of the symmetric matrix A, contracts the error as
    ||w_t|| <= (1 - mu/L)^t ||w_0||.  Precondition: mu > 0 (strong convexity).  Pass
    criterion: the bound holds at every step up to a round-off margin of 100 t unit
    round-offs of the run's dtype times ||w_0||.
    """
    d, steps = tc.sizes["d"], tc.sizes["steps"]
    rng = tc.rng("data")
    spectrum = np.linspace(1.0, 10.0, d)
    if tc.control == "indefinite":
        spectrum[0] = -1.0
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    A = Q @ np.diag(spectrum) @ Q.T
    mu, L = scipy.linalg.eigvalsh(A)[[0, -1]]
    tc.precondition.at_least("A is positive definite (mu > 0)", mu, 0.0)
    w = rng.standard_normal(d)
    norms = [np.linalg.norm(w)]
    for _ in range(steps):
        w = w - (A @ w) / L
        norms.append(np.linalg.norm(w))
    t = np.arange(steps + 1)
    rate = 1 - abs(mu) / L
    if tc.control == "too_fast_rate":
        rate = rate**2
    bound = rate**t * norms[0]
    tc.record("rate", rate)
    tc.conclusion.at_most("error below the contraction bound", norms, bound,
                          margin=tc.roundoff(100 * steps) * norms[0])
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
    if not ID_PATTERN.match(claim_id):
        raise SystemExit(f"theorycheck new: {claim_id!r} is not a valid claim id")
    root = Path(args.claims_dir)
    package = root / args.paperkey
    target = package / f"test_{args.name}.py"
    if target.exists():
        raise SystemExit(f"theorycheck new: {target} exists; not overwriting it")
    package.mkdir(parents=True, exist_ok=True)
    if not (root / "__init__.py").exists():
        (root / "__init__.py").write_text("")
    if not (package / "__init__.py").exists():
        (package / "__init__.py").write_text(PAPER_TEMPLATE.format(paperkey=args.paperkey,
                                                                   name=args.name))
    else:
        print(f"{package / '__init__.py'} exists: add 'example.{args.name}' to its expected_ids")
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
