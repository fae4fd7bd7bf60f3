"""``theorycheck new``: a paper package and a first claim built from registered pieces.

The claim is the worked example of a known shape (docs/writing-claims.md): normalized GD on
the token-selection model converges in direction to the certified W-SVM solution, with a
reference control and a dynamics control that recompute.  The paper's citation is left as
placeholders that fail the conformance suite (`theorycheck.conformance.paper_problems`) until
they are replaced.
"""
from __future__ import annotations

import re
from pathlib import Path

from .claim import ID_PATTERN
from .errors import UsageError
from .files import atomic_write, make_folder
from .papers import PAPER_KEY

__all__ = ["PLACEHOLDER_ARXIV", "PLACEHOLDER_AUTHORS", "MAX_NAME_LENGTH", "scaffold",
           "render_claim", "check_names"]

#: a claim's name: a lower-case identifier (the test function is ``test_<name>``)
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
#: the longest paper key or claim name ``new`` accepts: the file ``test_<name>.py`` and the
#: package folder stay far inside every file system's 255-byte limit on a name
MAX_NAME_LENGTH = 100

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
       sizes={{"quick": {{"instances": 4, "n": 4, "T": 3, "d": 16, "steps": 300}},
              "full": {{"instances": 64, "n": 8, "T": 4, "d": 64, "steps": 3000}}}},
       constants={{"deficit": 0.002, "eta": 0.5}}, calibration=["deficit chosen on seeds 1-10 (NGD "
           "at most 5.1e-4, GD at least 4.5e-3 at T = 300), checked on seed 0"], controls={{
           "wrong_opt": Control("reference", BREAKS, "W-SVM of the tokens opt + 1 (mod T)"),
           "gd": Control("dynamics", BREAKS, "plain GD, eta = 0.5: only logarithmic alignment")}})
def test_{name}(tc):
    """W_mm = argmin ||W||_F s.t. (x_{{i,opt_i}} - x_{{i,t}})^T W x_{{i,0}} >= 1 (certified cvxpy);
    NGD W <- W - eta grad L/||grad L|| from W = 0. Hypothesis: opt_i is the argmax score token
    (a least-squares decoder u with scores 3 y_i on opt_i, 0 elsewhere). Pass: on every trial
    1 - <W_T, W_mm>/(||W_T|| ||W_mm||) <= deficit (the claim's constant)."""
    K, n, T, d = (tc.sizes[k] for k in ("instances", "n", "T", "d"))
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


def check_names(paperkey: str, name: str) -> None:
    """A :class:`UsageError` naming the problem unless ``paperkey`` is a paper key (lower-case
    letters and digits, starting with a letter), ``name`` a lower-case identifier, both at most
    ``MAX_NAME_LENGTH`` characters, and ``<paperkey>.thm1.<name>`` a claim id."""
    if not PAPER_KEY.match(paperkey):
        raise UsageError(f"paper key {paperkey[:60]!r} must be lower-case letters and digits, "
                         "starting with a letter (e.g. abc24)")
    if not NAME.match(name):
        raise UsageError(f"name {name[:60]!r} must be a lower-case identifier")
    for what, value in (("paper key", paperkey), ("name", name)):
        if len(value) > MAX_NAME_LENGTH:
            raise UsageError(f"the {what} has {len(value)} characters; at most {MAX_NAME_LENGTH}")
    if not ID_PATTERN.match(f"{paperkey}.thm1.{name}"):
        raise UsageError(f"{paperkey}.thm1.{name!r} is not a valid claim id")


def scaffold(paperkey: str, name: str, claims_dir: str | Path) -> list[Path]:
    """Write the paper package (``__init__.py`` with placeholder citation, unless it exists)
    and ``test_<name>.py``; return every file written.  A :class:`UsageError`, with nothing
    written, if a name is not valid (:func:`check_names`) or the claim file exists."""
    check_names(paperkey, name)
    root = Path(claims_dir)
    package = root / paperkey
    target = package / f"test_{name}.py"
    if target.exists():
        raise UsageError(f"{target} exists; not overwriting it")
    make_folder(package)
    written = []
    if not (root / "__init__.py").exists():
        atomic_write(root / "__init__.py", "")
        written.append(root / "__init__.py")
    if not (package / "__init__.py").exists():
        atomic_write(package / "__init__.py", PAPER_TEMPLATE.format(paperkey=paperkey, name=name))
        written.append(package / "__init__.py")
    atomic_write(target, render_claim(paperkey, name))
    written.append(target)
    return written
