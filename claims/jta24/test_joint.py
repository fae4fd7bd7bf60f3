r"""jta24: joint training of (W, v) by l_p mirror descent on the paper's two-sample example
(main-body joint theorem, reconstructed, and the joint-training figures).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581.  Shared run `joint_runs`: normalized
l_p-JointGD (each block divided by its own dual norm, the authors' experimental algorithm) from
(W, v) = 0 on the example (n=2, T=3, d=2, z_i = x_{i,0}), p in {1.75, 2, 3}; 2000 steps with
eta = 0.1, 0.1, 1 (quick; normalized MD with (eta, K) and (eta/10, 10K) follow the same path) or
20000 steps with eta = 0.1 (full).  The exponential loss replaces the paper's logistic loss (see
setup.py); both are strictly decreasing with the same exponential tail, which is what fixes the
implicit bias.
"""
import numpy as np
import torch

from theorycheck import Control, claim
from theorycheck.models import log_attention
from theorycheck.solvers.support import SUPPORT_TOL

from .joint import JOINT_X, JOINT_Y, divergence, joint_runs, nearest_other_tokens
from .setup import PAPER

JOINT_SIZES = {"quick": dict(steps=2000, eta=(0.1, 0.1, 1.0)), "full": dict(steps=20000, eta=(0.1, 0.1, 0.1))}
PAPER_TOKENS = {1.75: (1, 0), 2.0: (1, 0), 3.0: (0, 0)}
"""The tokens selected in the authors' stored joint-training output (0-based), per p."""


@claim(
    f"{PAPER}.thm.joint",
    source="main-body joint (W, v) theorem (reconstructed; after Tarzanagh et al. 2023's joint theorem)",
    statement="Under l_p-JointGD, v/||v||_p -> v_mm_alpha/||v_mm_alpha||_p (the l_p SVM of the "
              "selected tokens) and, when every sample is a support sample of v_mm, "
              "W/||W||_p -> W_mm_alpha/||W_mm_alpha||_p (the l_p-AttSVM).",
    provenance="inferred",
    controls={"other_tokens": Control(
        "reference", breaks=["Dir_W(K) <= 1e-3, every p", "Dir_v(K) <= 2e-3, every p"],
        description="the SVMs of the nearest other token choice alpha'' != alpha (all 8, "
                    "infeasible ones skipped) as references",
        constants={"token_choices": 8})},
    calibration=["thresholds 1e-3 (W) and 2e-3 (v) the spec's, fixed before the data; the spec observed "
                 "Dir_W 1.6e-5 to 8.9e-5 and Dir_v 3e-6 to 5.4e-4 with the logistic loss, and against "
                 "the nearest other token choice >= 0.23 (W) and >= 0.011 (v)"],
    sizes=JOINT_SIZES,
)
def test_joint(tc):
    r"""Reference: the certified l_p-AttSVM W_mm_alpha and the l_p head SVM
    v_mm_alpha = argmin ||v||_p s.t. y_i x_{i,alpha_i}^T v >= 1, alpha = the tokens of the last
    iterate.  The relaxed W-SVM of the theorem equals W_mm_alpha when every sample is a support
    sample of v_mm (|y_i x_{i,alpha_i}^T v_mm - 1| <= 1e-6): a precondition (the spec tests the W
    part only in that case).  Pass, for every p: Dir_W(K) = D_psi_p(W_mm, W(K)) <= 1e-3 and
    Dir_v(K) <= 2e-3 (the spec's thresholds, fixed before the data; the spec's observations are in
    the calibration record), and both decrease from K/10 to K.  The control (reference kind)
    measures against the SVMs of the nearest other token choice.
    """
    runs = tc.use(joint_runs)
    t, p = runs["t"], runs["p"]
    tenth = np.searchsorted(t, t[-1] // 10)
    support = [np.all(np.abs(JOINT_Y * (JOINT_X[np.arange(2), a] @ v) - 1) <= SUPPORT_TOL)
               for a, v in zip(runs["alpha"], runs["v_mm"])]
    tc.precondition.holds("every sample is a support sample of v_mm, every p", bool(all(support)))
    tc.precondition.holds("alpha stable over the last 90% of steps",
                          bool(np.all(runs["tokens"][tenth:] == runs["alpha"][None])))
    dW = np.array([[divergence(runs["W_mm"][j], runs["W"][c][j], pv) for c in (tenth, -1)]
                   for j, pv in enumerate(p)])
    dv = np.array([[divergence(runs["v_mm"][j], runs["v"][c][j], pv) for c in (tenth, -1)]
                   for j, pv in enumerate(p)])
    if tc.control == "other_tokens":
        nearest = [nearest_other_tokens(runs["alpha"][j], pv, runs["W"][-1][j], runs["v"][-1][j])
                   for j, pv in enumerate(p)]
        tc.record("feasible other token choices per p", [n for _, _, n in nearest])
        dW[:, 1] = [w for w, _, _ in nearest]
        dv[:, 1] = [v for _, v, _ in nearest]
    tc.record("alpha per p", runs["alpha"])
    tc.record("Dir_W at K/10, K per p", dW)
    tc.record("Dir_v at K/10, K per p", dv)
    tc.conclusion.at_most("Dir_W(K) <= 1e-3, every p", dW[:, 1], 1e-3)
    tc.conclusion.at_most("Dir_v(K) <= 2e-3, every p", dv[:, 1], 2e-3)
    tc.conclusion.holds("Dir_W and Dir_v decrease from K/10 to K, every p",
                        bool(np.all(dW[:, 1] < dW[:, 0]) and np.all(dv[:, 1] < dv[:, 0])))


@claim(
    f"{PAPER}.exp.joint_token_choice",
    source="joint-training figures (iterates against the SVM rays; probabilities over the first "
           "100 epochs) and the authors' stored notebook output",
    statement="On the two-sample example the selected tokens depend on p: (1,0) for p in "
              "{1.75, 2}, (0,0) for p = 3; the softmax probability of the selected tokens and the "
              "logistic probability (1/n) sum_i sigma(y_i x_{i,alpha_i}^T v) both approach 1.",
    provenance="stated",
    controls={"gd_in_every_arm": Control(
        "dynamics", breaks=["selected tokens per p = the authors' stored output"],
        description="normalized GD (the mirror map of p = 2) in every arm, each keeping its step size: "
                    "the choice's dependence on p comes from the mirror map, so the p = 3 arm no "
                    "longer selects (0,0)", constants={"mirror_p": 2.0})},
    nature="figure reproduction",
    sizes=JOINT_SIZES,
)
def test_joint_token_choice(tc):
    r"""Our measurement against the paper's: alpha = argmax_t s_{i,t}(W(K)) of each run compared
    with the authors' stored output (1,0), (1,0), (0,0) for p = 1.75, 2, 3 (exact: token indices).
    The probabilities, as the figure draws them: at k = 100 (the figure's last epoch) and at K,
    min_i s_{i,alpha_i} >= 0.9 and the mean logistic probability >= 0.9 for every p, and both are
    non-decreasing between the checkpoints k = 10, 20, ..., 100 (tolerance tc.tol("conditioned")).  0.9 is read
    off the figure's curves (which approach 1 within 100 epochs), fixed before the run.  The
    control reruns every arm with the mirror map of p = 2 (its own runs): without the l_p
    geometry the p = 3 arm selects GD's tokens, not the stored (0,0).
    The runs are in the authors' setting, the logistic loss of their notebook (`thm.joint` runs the
    exponential loss of the reconstructed theorem; both select the same tokens).
    """
    gd = tc.control == "gd_in_every_arm"
    runs = tc.use(joint_runs, loss="logistic", mirror_p=2.0) if gd else tc.use(joint_runs, loss="logistic")
    p, t = runs["p"], runs["t"]
    stated = {pv: PAPER_TOKENS[pv] for pv in p}
    tc.record("selected tokens per p", runs["alpha"])
    tc.conclusion.holds("selected tokens per p = the authors' stored output",
                        all(tuple(runs["alpha"][j]) == stated[pv] for j, pv in enumerate(p)))
    marks = np.searchsorted(t, np.arange(10, 101, 10).tolist() + [t[-1]])
    alpha = torch.as_tensor(runs["alpha"])
    X = torch.as_tensor(np.tile(JOINT_X, (len(p), 1, 1, 1)))
    softmax, logistic = [], []
    for c in marks:
        a = log_attention(X, torch.as_tensor(runs["W"][c])).exp()
        softmax.append(a.gather(-1, alpha[..., None]).squeeze(-1).min(-1).values.numpy())
        features = JOINT_X[np.arange(2)[None], runs["alpha"]]                      # (P, n, d)
        m = JOINT_Y * np.einsum("jnd,jd->jn", features, runs["v"][c])
        logistic.append((1 / (1 + np.exp(-m))).mean(-1))
    softmax, logistic = np.array(softmax), np.array(logistic)
    tc.record("min_i s_{i,alpha_i} at k = 10..100, K", softmax)
    tc.record("mean logistic probability at k = 10..100, K", logistic)
    tc.conclusion.at_least("probabilities >= 0.9 at k = 100 and K", np.concatenate([softmax[-2:], logistic[-2:]]), 0.9)
    tc.conclusion.holds("probabilities non-decreasing over k = 10..100",
                        bool(np.all(np.diff(softmax[:-1], axis=0) >= -tc.tol("conditioned"))
                             and np.all(np.diff(logistic[:-1], axis=0) >= -tc.tol("conditioned"))))
    for j, pv in enumerate(p):
        tc.curve("joint probabilities", f"softmax p={pv:g}", t[marks[:-1]], softmax[:-1, j],
                 xlabel="step k", ylabel="probability")
        tc.curve("joint probabilities", f"logistic p={pv:g}", t[marks[:-1]], logistic[:-1, j],
                 xlabel="step k", ylabel="probability")
