r"""gsb26: the estimators Algorithm 1 starts from (OLS, the spectral initialization) and the
norm comparison it relies on.

Goel, Soltanolkotabi, Bartlett, arXiv 2603.01514, Lemma 6 (OLS error), Lemma 3 (spectral
initialization close to the manifold) and Lemma 4 (the empirical extended-covariance norm
against the true one).
"""
import numpy as np
import scipy.linalg
import torch

from theorycheck import Control, claim
from theorycheck.models.attention_regression import ols_estimate, sample_covariance
from theorycheck.solvers import project_to_manifold

from .setup import (
    PAPER,
    gaussian_rows,
    ill_conditioned,
    ratios,
    record_assumptions,
    spectral_initialization,
    well_conditioned,
)


@claim(
    f"{PAPER}.lem6.ols_error",
    source="Lemma 6",
    statement="With high probability the OLS estimate satisfies ||W_hat - W*|| <~ "
              "sigma sqrt((d + k + log(1/p)) / (n lambda_min(Sigma))): the error decays like n^{-1/2}.",
    provenance="inferred",
    controls={
        "no_inverse_covariance": Control(
            "reference", breaks=["mean OLS error decays like n^{-1/2}",
                                 "instances within 3 sigma (sqrt k + sqrt d)/sqrt(n lambda_min)"],
            description="W_hat = (1/n) sum y_i x_i^T without Sigma_hat^{-1}: it tends to "
                        "W* Sigma != W*, so the error plateaus"),
    },
    sizes={"quick": {"ns": [100, 400, 1600, 6400], "seeds": 20},
           "full": {"ns": [100, 400, 1600, 6400, 25600, 102400], "seeds": 50}},
)
def test_ols_error(tc):
    r"""W_hat = (sum y_i x_i^T)(sum x_i x_i^T)^{-1} on ``seeds`` independent training sets per n
    (batched), well-conditioned instance.  The constants of Lemma 6 were lost, so the claim
    is tested as a shape plus a stated explicit bound: (1) the log-log slope of the mean of
    ||W_hat - W*|| (operator norm) over n is in [-0.6, -0.4] (rate n^{-1/2}; the spec measured
    -0.511); (2) the fraction of (seed, n) instances with ||W_hat - W*|| <= 3 sigma (sqrt k +
    sqrt d)/sqrt(n lambda_min(Sigma)) is accepted by an exact one-sided binomial test at
    p = 0.95 (alpha = 0.05; its power is recorded: with 80 trials it rejects with
    probability 0.8 once the true rate falls to about 0.84).  The factor 3 is the spec's;
    the expected error is about sigma (sqrt k + sqrt d)/sqrt(n lambda_min) / 3 on seeds 1, 2.
    Hypotheses A1, A2 (A3 plays no role for OLS).
    """
    problem = well_conditioned(tc.rng("well_conditioned"))
    record_assumptions(tc, problem, a3=False)
    rng = tc.rng("ols")
    ns = np.array(tc.sizes["ns"])
    lam_min = problem.covariance_eigenvalues()[0]
    means, within = [], []
    for n in ns:
        X = torch.as_tensor(gaussian_rows(rng, problem.Sigma, (tc.sizes["seeds"], n)))
        Y = X @ torch.as_tensor(problem.W).T + problem.noise * torch.as_tensor(
            rng.standard_normal((tc.sizes["seeds"], n, problem.k)))
        W_hat = Y.transpose(1, 2) @ X / n if tc.control == "no_inverse_covariance" else ols_estimate(X, Y)
        errors = torch.linalg.matrix_norm(W_hat - torch.as_tensor(problem.W), ord=2).numpy()
        means.append(errors.mean())
        bound = 3 * problem.noise * (np.sqrt(problem.k) + np.sqrt(problem.d)) / np.sqrt(n * lam_min)
        within.extend(errors <= bound)
    means = np.array(means)
    tc.record("sqrt(n) mean error", np.sqrt(ns) * means)
    tc.conclusion.slope("mean OLS error decays like n^{-1/2}", ns, means, window=(ns[0], ns[-1]),
                        at_least=-0.6, at_most=-0.4)
    tc.conclusion.binomial("instances within 3 sigma (sqrt k + sqrt d)/sqrt(n lambda_min)",
                           np.array(within), p=0.95)
    tc.curve("ols", "mean ||W_hat - W*||", ns, means, xscale="log", yscale="log")


@claim(
    f"{PAPER}.lem4.norm_equivalence",
    source="Lemma 4, eq. (15) (inferred content)",
    statement="(1 - eps') ||theta||^2 <= ||theta||^2_{Sigma_hat_bar} <= (1 + eps') ||theta||^2 with "
              "eps' = ||Sigma^{-1/2} Sigma_hat Sigma^{-1/2} - I||, and the same for the dual norms "
              "with ||Sigma^{1/2} Sigma_hat^{-1} Sigma^{1/2} - I||; the bounds are attained.",
    provenance="inferred",
    controls={
        "absolute_deviation": Control(
            "statement", breaks=["ratios within 1 -/+ eps' (random and extremal points)"],
            description="eps' replaced by ||Sigma_hat - Sigma|| (smaller than the relative "
                        "deviation on the ill-conditioned instance): the extremal point violates it"),
    },
    sizes={"quick": {"n": 200, "points": 1000}, "full": {"n": 200, "points": 100000}},
)
def test_norm_equivalence(tc):
    r"""||theta||^2_{Sigma_hat_bar} - ||theta||^2_{Sigma_bar} = tr(K^T (Sigma_hat - Sigma) K), so the
    ratio lies between 1 -/+ eps', eps' = ||Sigma^{-1/2} Sigma_hat Sigma^{-1/2} - I|| (operator
    norm), with equality at V = 0, K = Sigma^{-1/2} v 1^T, v the extremal eigenvector of
    Sigma^{-1/2} Sigma_hat Sigma^{-1/2} - I (random points alone have no power against a wrong
    constant).  Sigma_hat from n = 200 samples on the ill-conditioned instance; 1000 Gaussian
    points plus the extremal points for the primal and the dual norm.  Pass: every ratio within
    [1 - eps', 1 + eps'] up to 1e-12 (round-off of the quadratic forms), and the extremal
    point attains the bound to 1e-10 (a conclusion: the constant is sharp).
    """
    problem = ill_conditioned(tc.rng("ill_conditioned"))
    record_assumptions(tc, problem, a3=False)
    rng = tc.rng("norm_equivalence")
    Sigma_hat = sample_covariance(torch.as_tensor(gaussian_rows(rng, problem.Sigma, (tc.sizes["n"],)))).numpy()
    root = scipy.linalg.sqrtm(problem.Sigma).real
    inv_root = np.linalg.inv(root)
    relative = inv_root @ Sigma_hat @ inv_root - np.eye(problem.d)
    relative_dual = root @ np.linalg.inv(Sigma_hat) @ root - np.eye(problem.d)
    eps = np.linalg.norm(relative, 2)
    eps_dual = np.linalg.norm(relative_dual, 2)
    if tc.control == "absolute_deviation":
        eps = np.linalg.norm(Sigma_hat - problem.Sigma, 2)
    tc.record("eps' (primal, dual)", [eps, eps_dual])
    count = tc.sizes["points"]
    thetas = (rng.standard_normal((count, problem.k, problem.d)), rng.standard_normal((count, problem.d, problem.d)))
    primal, dual = ratios(problem, Sigma_hat, thetas)

    def extremal(deviation, weight):
        values, vectors = np.linalg.eigh(deviation)
        v = vectors[:, np.argmax(np.abs(values))]
        K = (weight @ v)[:, None] * np.ones((1, problem.d))
        return np.zeros((1, problem.k, problem.d)), K[None]

    edge_primal = ratios(problem, Sigma_hat, extremal(relative, inv_root))[0]
    edge_dual = ratios(problem, Sigma_hat, extremal(relative_dual, root))[1]
    all_primal = np.concatenate([primal, edge_primal])
    tc.conclusion.at_most("ratios within 1 -/+ eps' (random and extremal points)",
                          np.abs(all_primal - 1), eps, margin=1e-12)
    tc.conclusion.at_most("dual ratios within 1 -/+ eps'_dual", np.abs(np.concatenate([dual, edge_dual]) - 1),
                          eps_dual, margin=1e-12)
    tc.conclusion.close("extremal point attains the bound (primal)", np.abs(edge_primal - 1),
                        np.linalg.norm(relative, 2), rtol=1e-10)
    tc.conclusion.close("extremal point attains the bound (dual)", np.abs(edge_dual - 1), eps_dual, rtol=1e-10)


@claim(
    f"{PAPER}.lem3.init_close",
    source="Lemma 3",
    statement="For n large, with high probability the spectral initialization is "
              "O(n^{-1/2})-close to the manifold in the extended-covariance norm, and "
              "||Sigma_hat^{-1} - Sigma^{-1}|| = O(n^{-1/2}).",
    provenance="inferred",
    controls={
        "no_inverse_covariance": Control(
            "reference", breaks=["mean dist(theta_0, M) decays like n^{-1/2}",
                                 "90% quantile of dist(theta_0, M) decays like n^{-1/2}"],
            description="K_0 = D_hat^{1/2} V_hat^T without Sigma_hat^{-1}: the distance plateaus"),
    },
    sizes={"quick": {"ns": [100, 400, 1600, 6400], "seeds": 20},
           "full": {"ns": [100, 400, 1600, 6400, 25600, 102400], "seeds": 50}},
)
def test_init_close(tc):
    r"""theta_0 = (U_hat D_hat^{1/2}, Sigma_hat^{-1} D_hat^{1/2} V_hat^T) from the OLS W_hat and
    Sigma_hat of n samples, ``seeds`` training sets per n (well-conditioned instance, A1-A3
    recorded).  dist(theta_0, M) by the extended-covariance projection (weighted Procrustes,
    both components of O(d) plus 2 Haar starts).  Pass: the log-log slopes of the means of
    dist(theta_0, M) and of ||Sigma_hat^{-1} - Sigma^{-1}|| over n lie in [-0.6, -0.4] (rate
    n^{-1/2}, the spec's window; it measured -0.514 and -0.519), and "with probability 1 - p"
    as a shape: the 90% quantile over seeds of dist(theta_0, M) decays with slope in
    [-0.65, -0.35] (wider: a quantile of 20 draws is noisier than a mean).  The spec's
    additional target "every seed within 0.5 sqrt(sigma_d(W*)) for n >= 1600" is not encoded:
    N(p) depends on the instance, and on seed 2 only 62.5% of those instances met it (the
    fraction is recorded).
    """
    problem = well_conditioned(tc.rng("well_conditioned"))
    record_assumptions(tc, problem)
    rng = tc.rng("init_close")
    ns = np.array(tc.sizes["ns"])
    Sinv = np.linalg.inv(problem.Sigma)
    radius = 0.5 * np.sqrt(problem.singular_values()[-1])
    mean_dist, mean_inv, quantile, close = [], [], [], []
    for n in ns:
        dists, invs = [], []
        for _ in range(tc.sizes["seeds"]):
            V0, K0, Sigma_hat = spectral_initialization(problem, n, rng)
            if tc.control == "no_inverse_covariance":
                K0 = Sigma_hat @ K0
            dists.append(project_to_manifold(V0, K0, problem.Sigma, problem.W, rng, random_starts=2).distance)
            invs.append(np.linalg.norm(np.linalg.inv(Sigma_hat) - Sinv, 2))
        mean_dist.append(np.mean(dists))
        quantile.append(np.quantile(dists, 0.9))
        mean_inv.append(np.mean(invs))
        if n >= 1600:
            close.extend(np.array(dists) <= radius)
    tc.record("sqrt(n) mean dist", np.sqrt(ns) * np.array(mean_dist))
    tc.conclusion.slope("mean dist(theta_0, M) decays like n^{-1/2}", ns, mean_dist,
                        window=(ns[0], ns[-1]), at_least=-0.6, at_most=-0.4)
    tc.conclusion.slope("mean ||Sigma_hat^{-1} - Sigma^{-1}|| decays like n^{-1/2}", ns, mean_inv,
                        window=(ns[0], ns[-1]), at_least=-0.6, at_most=-0.4)
    tc.conclusion.slope("90% quantile of dist(theta_0, M) decays like n^{-1/2}", ns, quantile,
                        window=(ns[0], ns[-1]), at_least=-0.65, at_most=-0.35)
    tc.record("fraction of n >= 1600 instances within 0.5 sqrt(sigma_d)", float(np.mean(close)))
    tc.curve("init", "mean dist(theta_0, M)", ns, mean_dist, xscale="log", yscale="log")
