r"""jta24 inside the cone around the l_p-AttSVM direction: the references of the runs of
`normalized_mirror_runs`, points sampled in the cone, the constants of Lemma 19 and the margin
slacks of (12a)-(12c), and the gradient correlation in log scale (`test_gradient_lemmas.py`).

Julistiono, Tarzanagh, Azizan, arXiv 2410.14581, Appendix A.3 (Lemmas 19-20).
"""
from __future__ import annotations

import numpy as np
import torch

from theorycheck.optim import lp_norm
from theorycheck.optim.directions import lp_unit
from theorycheck.solvers.margin import constraint_values
from theorycheck.solvers.support import SUPPORT_TOL, locally_optimal
from theorycheck.solvers.svm import wsvm_constraint_factors
from theorycheck.tolerance import unit_roundoff

from .direction import normalized_mirror_runs, own_index
from .setup import INSTANCES, instances, lowest_token_svm

NOISE = (1e-3, 1e-2)


def log_correlation(model, W, ref):
    r"""log <-grad L(W), ref> per trial from the scaled gradient exp(M) G (exact deep in
    saturation); NaN where the correlation is not positive."""
    g = model.scaled_gradient({"W": W})["W"]
    inner = -(g.direction * ref).flatten(1).sum(1)
    return torch.where(inner > 0, g.log_scale + inner.clamp_min(1e-300).log(), torch.nan), inner


USED = "runs used: alpha locally optimal"
QUARTER = 0.25
r"""At least a quarter of the runs considered are used (their alpha locally optimal): the exact
one-sided binomial test of P >= QUARTER at level 1/2 rejects exactly the counts below the median
of Bin(J, 1/4), 5 of the quick tier's J = 20 runs (the decision `at_least(runs used, 5)` was; 20
of the full tier's 80, where it was 5); as a binomial its calibration row is bounded through the
runs (pooled trials) instead of by counting seeds."""


def references(tc, bad_tokens: bool):
    r"""The reference of every run of `normalized_mirror_runs` on the first ``tc.sizes["instances"]``
    instances whose alpha is locally optimal (the runs used): its own l_p-AttSVM W_mm_alpha, or with
    ``bad_tokens`` the l_p-AttSVM of alpha_bad = argmin_t gamma_{i,t}.  Records the precondition
    (`USED`): over the runs of those instances, alpha locally optimal (`locally_optimal` for the
    alpha and reference in use: the run's own, or alpha_bad and its l_p-AttSVM) on at least a
    quarter of them, the binomial of `QUARTER`; returns (refs (J,d,d), p (J,), instance (J,),
    data, alpha (J,n)) of the runs used."""
    runs = tc.use(normalized_mirror_runs)
    data, _ = instances(tc.paper_rng(INSTANCES), tc.sizes)
    p_all = runs["p"]
    considered = np.flatnonzero(runs["instance"] < data.K)
    scores = data.scores()
    refs, alphas, alpha_ok = [], [], []
    for j in considered:
        k = runs["instance"][j]
        if bad_tokens:
            bad, ref = lowest_token_svm(data, k, p_all[j])
            refs.append(ref), alphas.append(bad)
            alpha_ok.append(bool(locally_optimal(data.X[k], scores[k], bad, ref)))
        else:
            refs.append(runs["W_mm"][own_index(p_all[j:j + 1])[0], j])
            alphas.append(runs["alpha"][j]), alpha_ok.append(bool(runs["locally_optimal"][j]))
    tc.precondition.binomial(USED, alpha_ok, p=QUARTER, alpha=0.5)
    used = runs["locally_optimal"][considered]
    keep = considered[used]
    return (np.stack(refs)[used], p_all[keep], runs["instance"][keep], data, np.stack(alphas)[used])


def cone_samples(rng, refs, p, inst, radii, noise=NOISE):
    r"""W = R ||W_mm||_p U/||U||_p, U = W_mm/||W_mm||_p + s E/||E||_p (E Gaussian) for every
    reference, R in ``radii`` and s in ``noise``: (W (S,d,d), p (S,), instance (S,), reference (S,d,d))."""
    rows, ps, insts, cone_refs = [], [], [], []
    for ref, pv, k in zip(refs, p, inst):
        norm = float(lp_norm(torch.as_tensor(ref)[None], pv))
        for R in radii:
            for s in noise:
                U = lp_unit(ref, pv) + s * lp_unit(rng.standard_normal(ref.shape), pv)
                rows.append(R * norm * lp_unit(U, pv))
                ps.append(pv), insts.append(k), cone_refs.append(ref)
    return np.stack(rows), np.array(ps), np.array(insts), np.stack(cone_refs)


def cone_constants(X, alpha, W_mm, ref_norm, p):
    r"""The constants of Lemma 19 for one instance, ``ref_norm`` = ||W_mm||_p: margins m_k(W_mm) with
    the constraint factors, support mask, delta = (1/2) min over non-support tokens of (m - 1), A_q =
    max_{i,t,tau} ||x_{i,t} - x_{i,tau}||_q ||z_i||_q and mu(delta) (spec section 1.7:
    eps = delta / (2 A_q ||W_mm||_p); mu = eps^p / (p 2^p) for p >= 2, (p-1)/2 eps^2 N^(1-2/p) for
    p < 2, N = d^2)."""
    A, B, index = wsvm_constraint_factors(X, alpha)
    m = constraint_values(A, B, W_mm)
    support = np.abs(m - 1) <= SUPPORT_TOL
    delta = 0.5 * float(np.min(m[~support] - 1)) if (~support).any() else np.inf
    q = p / (p - 1)
    diffs = X[:, :, None, :] - X[:, None, :, :]
    A_q = float(np.max(np.linalg.norm(diffs, ord=q, axis=-1).max((1, 2)) * np.linalg.norm(X[:, 0], ord=q, axis=-1)))
    eps = delta / (2 * A_q * ref_norm)
    mu = eps ** p / (p * 2 ** p) if p >= 2 else (p - 1) / 2 * eps ** 2 * W_mm.size ** (1 - 2 / p)
    return A, B, index, support, delta, A_q, mu


def directional_roundoff(unit_ref, V, p) -> np.ndarray:
    r"""E_D per unit matrix of V (S, d, d), ``unit_ref`` = ref/||ref||_p: a bound on |computed D -
    D_psi(exact unit ref, exact unit W)| for the computed D = 1 - <grad psi(W/||W||_p), ref/||ref||_p>
    (`theorycheck.optim.directional_bregman`, W any positive multiple of V), E_D = 6 (N + 8) u S with
    N = d^2 and S = 1 + sum_i |grad psi(V)_i| |unit ref_i| (<= 2 by Hoelder): the evaluation errs by at
    most (N + 6)u S (N products summed, as in `lem13`'s BREGMAN_LOWER_ROUNDOFF), and the computed unit
    matrices are entrywise within (N + 8)u of the exact ones (a normalization by `lp_norm`: (p + 2)u per
    term, (N - 1)u for the sum, its 1/p power and a division), which moves the exact D by at most
    p (N + 8)u S; so |computed D - D| <= (p + 1)(N + 8)u S <= E_D for p <= 3 (P_VALUES)."""
    S = 1.0 + np.sum(np.abs(V) ** (p - 1) * np.abs(unit_ref), axis=(1, 2))
    return 6 * (unit_ref.size + 8) * unit_roundoff("float64") * S


def support_deviation(A, B, support, W_mm) -> float:
    r"""d_s = max |m_t(W_mm) - 1| over the support tokens t of the certified W_mm (0 without any): how far
    the reference's support margins are from the exact program's 1 (the certificate, and the support
    tolerance SUPPORT_TOL, which counts a token within it as support)."""
    m = constraint_values(A, B, W_mm)
    return float(np.max(np.abs(m[support] - 1))) if support.any() else 0.0


def lemma19_allowances(A_q, ref_norm, N, d_s) -> tuple[float, float]:
    r"""The proven allowances of Lemma 19's conclusions for one reference W_mm of ``ref_norm`` =
    ||W_mm||_p with N = d^2 entries (docs/claims/jta24.md, "Lemma 19 with the hypothesis admitted
    through E_D"): for the margins (12a)-(12c) d_s + 8 (N + 8) u kappa, kappa = A_q ||W_mm||_p (the
    condition of a margin: |<F_k, V>| <= A_q ||V||_p by Hoelder), and for the distance
    ||W - W_mm||_p 8 (N + 8) u ||W_mm||_p."""
    unit = 8 * (N + 8) * unit_roundoff("float64")
    return d_s + unit * A_q * ref_norm, unit * ref_norm


def margin_slacks(A, B, index, support, delta, W):
    r"""Smallest slacks over the matrices W (S, d, d) and the constraints of (12a)
    m_tau - m_t - (3/2) delta (t support, tau non-support, same sample), (12b)
    m_tau - 1 - (3/2) delta, (12c) delta/2 - |m_t - 1| (inf where a set is empty)."""
    m = np.einsum("kr,src,kc->sk", A, W, B)
    slacks = {"12a": np.inf, "12b": np.inf, "12c": np.inf}
    for i in np.unique(index[:, 0]):
        own = index[:, 0] == i
        tight, loose = m[:, own & support], m[:, own & ~support]
        if tight.size:
            slacks["12c"] = min(slacks["12c"], float(np.min(delta / 2 - np.abs(tight - 1))))
        if loose.size:
            slacks["12b"] = min(slacks["12b"], float(np.min(loose - 1 - 1.5 * delta)))
        if tight.size and loose.size:
            slacks["12a"] = min(slacks["12a"], float(np.min(loose[:, :, None] - tight[:, None] - 1.5 * delta)))
    return slacks
