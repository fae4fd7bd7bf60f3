"""``theorycheck new``: a paper package and a first claim built from registered pieces.

The claim is the worked example of a known shape (docs/writing-claims.md): normalized GD on
the token-selection model converges in direction to the certified W-SVM solution, with a
reference control and a dynamics control that recompute.  The paper's citation is left as
placeholders that fail the conformance suite (`theorycheck.conformance.paper_problems`) until
they are replaced.
"""
from __future__ import annotations

from pathlib import Path

from .errors import UsageError

__all__ = ["PLACEHOLDER_ARXIV", "PLACEHOLDER_AUTHORS", "scaffold", "render_claim"]

#: the citation fields ``theorycheck new`` writes; conformance refuses them
PLACEHOLDER_ARXIV = "0000.00000"
PLACEHOLDER_AUTHORS = "(the authors, e.g. A. Author, B. Author)"

PAPER_TEMPLATE = '''"""{paperkey}: the claims of one paper.  Fill in the citation and the claim index."""
from theorycheck import paper

paper(
    "{paperkey}",
    authors="%s",
    title="(the paper's title)",
    arxiv="%s",
    year=None,
    expected_ids=[
        "thm1.{name}",
    ],
)
''' % (PLACEHOLDER_AUTHORS, PLACEHOLDER_ARXIV)

CLAIM_TEMPLATE = '''"""{paperkey}: a claim of a known shape to start from (normalized GD converges in direction
to the W-SVM solution); replace the statement, the data and the sizes with the paper's."""
import numpy as np

from theorycheck import Control, claim
from theorycheck.data import opt_is_argmax, token_scores
from theorycheck.models import TokenSelection
from theorycheck.optim import GD, NGD, run_trajectory
from theorycheck.optim.directions import direction_metrics
from theorycheck.solvers import solve_wsvm_batch

BREAKS = ["alignment deficit at T"]


@claim("{claim_id}", source="Theorem 1", provenance="stated",
       statement="NGD on the fixed-decoder token-selection model converges in direction to W_mm.",
       sizes={{"quick": {{"K": 4, "n": 4, "T": 3, "d": 16, "steps": 300}},
              "full": {{"K": 64, "n": 8, "T": 4, "d": 64, "steps": 3000}}}},
       constants={{"deficit": 0.002, "eta": 0.5}}, calibration=["deficit chosen on seeds 1-10 (NGD "
           "at most 5.1e-4, GD at least 4.5e-3 at T = 300), checked on seed 0"], controls={{
           "wrong_opt": Control("reference", BREAKS, "W-SVM of the tokens opt + 1 (mod T)"),
           "gd": Control("dynamics", BREAKS, "plain GD, eta = 0.5: only logarithmic alignment")}})
def test_{name}(tc):
    """W_mm = argmin ||W||_F s.t. (x_{{i,opt_i}} - x_{{i,t}})^T W x_{{i,0}} >= 1 (certified cvxpy);
    NGD W <- W - eta grad L/||grad L|| from W = 0. Hypothesis: opt_i is the argmax score token
    (a least-squares decoder u with scores 3 y_i on opt_i, 0 elsewhere). Pass: on every trial
    1 - <W_T, W_mm>/(||W_T|| ||W_mm||) <= deficit (the claim's constant)."""
    K, n, T, d = (tc.sizes[k] for k in ("K", "n", "T", "d"))
    rng = tc.rng("data")
    X = rng.standard_normal((K, n, T, d)) / np.sqrt(d)
    y, opt = rng.choice([-1.0, 1.0], (K, n)), rng.integers(T, size=(K, n))
    target = 3.0 * y[..., None] * (np.arange(T) == opt[..., None])
    u = np.stack([np.linalg.lstsq(x.reshape(-1, d), g.ravel(), rcond=None)[0] for x, g in zip(X, target)])
    tc.precondition.holds("opt_i is the argmax score", opt_is_argmax(token_scores(X, y, u), opt))
    W_mm = tc.tensor(solve_wsvm_batch(X, (opt + (tc.control == "wrong_opt")) % T))
    model = TokenSelection(tc.tensor(X), tc.tensor(y), tc.tensor(u))
    step = (GD if tc.control == "gd" else NGD)(model, tc.constants["eta"])
    traj = run_trajectory(step, {{"W": tc.tensor(np.zeros((K, d, d)))}}, tc.sizes["steps"],
                          direction_metrics(W_mm))
    deficit = 1 - traj["W_alignment"]
    tc.conclusion.at_most(BREAKS[0], deficit[-1], tc.constants["deficit"])
    tc.curve("deficit", "1 - alignment", traj.t, deficit.mean(1), yscale="log", xscale="log")
'''


def render_claim(paperkey: str, name: str) -> str:
    """The text of ``claims/<paperkey>/test_<name>.py``: the known-shape claim with id
    ``<paperkey>.thm1.<name>``."""
    return CLAIM_TEMPLATE.format(paperkey=paperkey, name=name, claim_id=f"{paperkey}.thm1.{name}")


def scaffold(paperkey: str, name: str, claims_dir: str | Path) -> list[Path]:
    """Write the paper package (``__init__.py`` with placeholder citation, unless it exists)
    and ``test_<name>.py``; return every file written.  A :class:`UsageError` if the claim
    file exists."""
    root = Path(claims_dir)
    package = root / paperkey
    target = package / f"test_{name}.py"
    if target.exists():
        raise UsageError(f"{target} exists; not overwriting it")
    package.mkdir(parents=True, exist_ok=True)
    written = []
    if not (root / "__init__.py").exists():
        (root / "__init__.py").write_text("")
        written.append(root / "__init__.py")
    if not (package / "__init__.py").exists():
        (package / "__init__.py").write_text(PAPER_TEMPLATE.format(paperkey=paperkey, name=name))
        written.append(package / "__init__.py")
    target.write_text(render_claim(paperkey, name))
    written.append(target)
    return written
