"""The evidence classifier (theorycheck.evidence) on controls of known class.

A temporary paper package holds one claim -- gradient descent with step 1/L on a realizable
least-squares problem contracts ||w_t - w*|| at rate 1 - mu/L, mu solved as the minimum of
w^T X^T X w on the unit sphere -- and one control of every class the review found: the claim's
numbers re-judged (rescaled, shifted, reversed, a subset read at another step, a stricter bound,
a stricter bound folded into a ratio, a flipped boolean, the claim's stream drawn again, the
claim's run repeated with other metrics, a computation of its own made only after deciding),
each of which must be *discrimination*, and recomputations (another step size, another
optimizer, a new draw of label noise, a shared run with other noise, mu solved on other
data), each of which must be *independent*.  Every control fails as declared."""
import json

import numpy as np
import pytest
import torch

from theorycheck.errors import DeclarationError
from theorycheck.evidence import DISCRIMINATION, INDEPENDENT, evidence_class
from theorycheck.lineage import ComputationLog, computation, fingerprint, recording

TOY_INIT = '''
from theorycheck import paper

paper("toy", authors="A. Author", title="Toy", arxiv="2401.00001", year=2024,
      expected_ids=["thm1.gd_contraction"])
'''

TOY_CLAIM = '''
"""toy: gradient descent on realizable least squares, with controls of known evidence class."""
import numpy as np
import torch

from theorycheck import Control, claim, shared_run
from theorycheck.models.base import Model
from theorycheck.optim import GD, NGD, run_trajectory
from theorycheck.solvers import lp_sphere_minimize

BOUND = "error below the contraction bound"
FINAL = "final error small"
DISCRIMINATION = {
    "rescaled": "the errors times 2", "shifted": "the errors plus 1e-3 ||w*||",
    "reversed": "the errors in reverse order", "read_early": "the run read at T/10 against the final tolerance",
    "stricter_bound": "the bound at rate (1 - mu/L)^2", "folded_slack": "the ratio error / bound with the bound at rate (1 - mu/L)^2",
    "flipped": "the final-error boolean negated", "same_stream": "the claim's data stream drawn again, errors times 2",
    "same_run": "the claim's run repeated with other metrics and more steps, errors times 2",
    "late_draw": "a fresh draw made after deciding, errors times 2"}
INDEPENDENT = {
    "long_step": "GD with step 2.5/L: diverges", "other_optimizer": "normalized GD, step 0.05: stalls",
    "fresh_noise": "label noise of scale 0.1 from a new stream: w* is not the minimizer",
    "noisy_run": "label noise of scale 0.1 from the shared run",
    "mu_other_data": "mu solved on better-conditioned data (4N rows)"}


class LeastSquares(Model):
    blocks = ("w",)

    def __init__(self, X, y):
        self.X, self.y = X, y

    def log_loss(self, params):
        r = torch.einsum("knd,kd->kn", self.X, params["w"]) - self.y
        return torch.log(0.5 * (r ** 2).sum(1))

    def restrict(self, trials):
        return LeastSquares(self.X[trials], self.y[trials])


@shared_run(scope="toy", sizes={"quick": {"K": 3, "N": 20}, "full": {"K": 3, "N": 20}})
def label_noise(run, *, sigma=0.0):
    return sigma * run.rng("noise").standard_normal((run.sizes["K"], run.sizes["N"]))


def smallest_eigenvalue(X):
    """min over ||w||_2 = 1 of w^T X^T X w, by the library's sphere solver."""
    G = torch.as_tensor(np.einsum("knd,kne->kde", X, X))
    def value_and_gradient(W):
        return torch.einsum("kd,kde,ke->k", W, G, W), 2 * torch.einsum("kde,ke->kd", G, W)
    start = np.ones((X.shape[0], X.shape[2]))
    return lp_sphere_minimize(value_and_gradient, np.ones(X.shape[0]), np.full(X.shape[0], 2.0), start).value


@claim("toy.thm1.gd_contraction", source="Theorem 1", provenance="stated",
       statement="GD with step 1/L contracts ||w_t - w*|| at rate 1 - mu/L.",
       sizes={"quick": {"K": 3, "N": 20, "d": 5, "steps": 60}, "full": {"K": 3, "N": 20, "d": 5, "steps": 60}},
       controls={**{n: Control("statement", [BOUND, FINAL], text) for n, text in DISCRIMINATION.items()},
                 **{n: Control("dynamics", [BOUND, FINAL], text) for n, text in INDEPENDENT.items()}})
def test_gd_contraction(tc):
    """Pass: ||w_t - w*|| <= (1 - mu/L)^t ||w*|| for t = 0..T and ||w_T - w*|| <= 1e-2 ||w*||."""
    K, N, d, steps = (tc.sizes[k] for k in ("K", "N", "d", "steps"))
    control = tc.control
    X = tc.rng("data").standard_normal((K, N, d))
    w_star = tc.rng("target").standard_normal((K, d))
    noise = tc.use(label_noise, sigma=0.1 if control == "noisy_run" else 0.0)
    if control == "fresh_noise":
        noise = 0.1 * tc.rng("noise").standard_normal((K, N))
    y = np.einsum("knd,kd->kn", X, w_star) + noise
    L = np.linalg.eigvalsh(np.einsum("knd,kne->kde", X, X))[:, -1]
    mu = smallest_eigenvalue(X)
    if control == "mu_other_data":
        mu = smallest_eigenvalue(tc.rng("data", "other").standard_normal((K, 4 * N, d)) / 2)
    model = LeastSquares(torch.as_tensor(X), torch.as_tensor(y))
    step = {"long_step": GD(model, list(2.5 / L)), "other_optimizer": NGD(model, 0.05)}.get(
        control, GD(model, list(1.0 / L)))
    start = {"w": torch.zeros(K, d, dtype=torch.float64)}
    ws = torch.as_tensor(w_star)
    error = {"error": lambda it: (it.params["w"] - ws).norm(dim=1)}
    errors = run_trajectory(step, start, steps, error)["error"]            # (T+1, K)
    if control == "same_stream":
        X = tc.rng("data").standard_normal((K, N, d))
    if control == "same_run":
        errors = run_trajectory(step, start, 2 * steps, {"e": error["error"], "n": lambda it: it.params["w"].norm(dim=1)})["e"][: steps + 1]
    t = np.arange(steps + 1)[:, None]
    rate = 1 - mu / L
    bound = rate ** t * np.linalg.norm(w_star, axis=1)
    measured = {"rescaled": 2 * errors, "shifted": errors + 1e-3 * bound[0], "reversed": errors[::-1],
                "same_stream": 2 * errors, "same_run": 2 * errors, "late_draw": 2 * errors}.get(control, errors)
    if control == "stricter_bound":
        bound = rate ** (2 * t) * bound[0]
    final = (errors[steps // 10] if control == "read_early" else measured[-1]) <= 1e-2 * bound[0]
    tc.precondition.at_least("X has full column rank (mu > 0)", mu, 0.0)
    if control == "folded_slack":
        tc.conclusion.at_most(BOUND, measured / (rate ** (2 * t) * bound[0]), 1.0)
    else:
        tc.conclusion.at_most(BOUND, measured, bound, margin=tc.roundoff(100 * steps) * bound[0].max())
    tc.conclusion.holds(FINAL, ~final if control == "flipped" else final)
    if control == "late_draw":
        tc.rng("data", "after deciding").standard_normal(3)
'''


@pytest.fixture
def toy_results(pytester, tmp_path_factory):
    (pytester.path / "claims" / "toy").mkdir(parents=True)
    (pytester.path / "claims" / "__init__.py").write_text("")
    (pytester.path / "claims" / "toy" / "__init__.py").write_text(TOY_INIT)
    (pytester.path / "claims" / "toy" / "test_contraction.py").write_text(TOY_CLAIM)
    cache = tmp_path_factory.mktemp("cache")
    report = tmp_path_factory.mktemp("report")
    run = pytester.runpytest_subprocess("claims", "-p", "no:cacheprovider", "--tc-cache-dir", str(cache),
                                        "--tc-report-dir", str(report))
    run.assert_outcomes(passed=1, xfailed=15)
    results = json.loads((report / "results.json").read_text())
    return results, report


def test_every_control_gets_its_known_class_with_the_computation_that_made_the_difference(toy_results):
    results, _ = toy_results
    (claim,) = results["claims"]
    classes = {k["name"]: k["evidence"] for k in claim["controls"]}
    assert classes == {
        **dict.fromkeys(["rescaled", "shifted", "reversed", "read_early", "stricter_bound",
                         "folded_slack", "flipped", "same_stream", "same_run", "late_draw"],
                        DISCRIMINATION),
        **dict.fromkeys(["long_step", "other_optimizer", "fresh_noise", "noisy_run",
                         "mu_other_data"], INDEPENDENT)}
    assert claim["independent_controls"] == 5
    lineage = {k["name"]: " | ".join(k["evidence_lineage"]) for k in claim["controls"]}
    assert lineage["long_step"] == "trajectory run run_trajectory on other step than the claim's"
    assert lineage["other_optimizer"] == lineage["long_step"]
    assert "random stream 'noise'" in lineage["fresh_noise"]
    assert lineage["noisy_run"] == ("shared run label_noise with sigma=0.1 (the claim's: 0.0) | "
                                    "trajectory run run_trajectory on other step than the claim's")
    assert "random stream 'data/other'" in lineage["mu_other_data"]
    assert "solver call lp_sphere_minimize on other value_and_gradient" in lineage["mu_other_data"]
    late = next(k for k in claim["controls"] if k["name"] == "late_draw")
    assert "came after every conclusion it breaks" in late["evidence_reason"]
    assert lineage["same_run"] == lineage["rescaled"] == ""


def test_the_claim_page_lists_each_controls_class_and_lineage(toy_results):
    _, report = toy_results
    md = (report / "report.md").read_text()
    assert "Evidence: 5 of 15 controls independent." in md
    assert ("noisy_run [dynamics, independent: shared run label_noise with sigma=0.1 "
            "(the claim's: 0.0); trajectory run run_trajectory on other step than the claim's]") in md
    assert "rescaled [statement, discrimination]" in md
    html = (report / "report.html").read_text()
    assert "claims on independent evidence" in html and "shared run label_noise with sigma=0.1" in html


def case(events, decisions):
    return {"computations": [{"kind": "draw", "name": n, "id": n, "inputs": {}} for n in events],
            "decisions": [{"name": name, "role": "conclusion", "passed": passed,
                           "detail": {"computed_before": before}} for name, passed, before in decisions]}


def test_a_conclusion_counts_only_when_it_failed_and_came_after_the_new_computation():
    claim = case(["data"], [("c", True, 1), ("d", True, 1)])
    new_before_c = dict(case(["data", "fresh"], [("c", False, 2), ("d", True, 2)]), breaks=["c", "d"])
    assert evidence_class(claim, new_before_c)[0] == INDEPENDENT
    # the new draw precedes only 'd', which held: the broken 'c' read the claim's computations
    new_before_d = dict(case(["data", "fresh"], [("c", False, 1), ("d", True, 2)]), breaks=["c", "d"])
    assert evidence_class(claim, new_before_d)[0] == DISCRIMINATION
    # no declared conclusion failed (a control that passed): every declared one is looked at
    passed = dict(case(["data", "fresh"], [("c", True, 2)]), breaks=["c"])
    assert evidence_class(claim, passed)[0] == INDEPENDENT


class Step:
    def __init__(self, data, eta):
        self.data, self.eta = data, eta


def test_fingerprints_see_contents_not_addresses():
    data = torch.arange(6.0).reshape(2, 3)
    assert fingerprint(Step(data, 0.1)) == fingerprint(Step(data.clone(), 0.1))
    assert fingerprint(Step(data, 0.1)) != fingerprint(Step(data, 0.2))
    assert fingerprint(Step(data, 0.1)) != fingerprint(Step(2 * data, 0.1))
    assert fingerprint({object(), 1}) == fingerprint({1, object()})
    used = Step(data, 0.1)
    used._velocity = torch.ones(3)  # state left by an earlier run is not what the step is
    assert fingerprint(used) == fingerprint(Step(data, 0.1))
    module = torch.nn.Linear(2, 2)
    before = fingerprint(module)
    with torch.no_grad():
        module.weight.add_(1.0)
    assert fingerprint(module) != before

    def closure_over(G):
        return lambda W: G @ W
    assert fingerprint(closure_over(np.eye(2))) == fingerprint(closure_over(np.eye(2)))
    assert fingerprint(closure_over(np.eye(2))) != fingerprint(closure_over(2 * np.eye(2)))
    rng = np.random.default_rng(0)
    before = fingerprint(rng)
    rng.standard_normal()
    assert fingerprint(rng) != before


@computation("solver", inputs=("A",))
def solve(A, tol=1e-6):
    return inner(A) + tol


@computation("solver", inputs=("A",))
def inner(A):
    return float(np.sum(A))


def test_a_computation_logs_its_defining_inputs_once_and_not_what_it_calls():
    log = ComputationLog()
    solve(np.ones(2))  # outside a case: nothing is logged
    with recording(log):
        solve(np.ones(2))
        solve(np.ones(2), tol=1e-9)       # a tolerance does not define the problem
        solve(2 * np.ones(2))
    assert [e["name"].rsplit(".", 1)[-1] for e in log.events] == ["solve", "solve"]
    assert log.events[0]["inputs"] == {"A": fingerprint(np.ones(2))}
    with pytest.raises(DeclarationError, match="not parameters"):
        computation("solver", inputs=("B",))(inner)


def test_every_solver_and_run_of_the_library_is_a_declared_computation():
    """A solve_* function or a run that logged nothing would make the controls that call it
    invisible to the classifier (discrimination)."""
    from theorycheck import optim, solvers
    from theorycheck.optim.adaptive import adam_steps

    solves = [getattr(solvers, name) for name in solvers.__all__ if name.startswith("solve_")]
    runs = [optim.run_trajectory, adam_steps, solvers.kernel_gd_predictions, solvers.lp_sphere_minimize,
            solvers.lp_regularization_path]
    assert len(solves) >= 7
    undeclared = [f.__name__ for f in solves + runs if not hasattr(f, "__theorycheck_computation__")]
    assert undeclared == []
