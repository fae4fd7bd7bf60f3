"""Unit tests of the library's token-sequence data: the container, the seeded trial streams,
the token measurements, and the numpy entry points of the model math."""

import dataclasses

import numpy as np
import pytest
import torch

from theorycheck import models
from theorycheck.data import (
    AssumptionReport,
    TokenSelectionData,
    concatenate,
    constraint_radii,
    max_cross_inner_product,
    non_optimal_spread,
    opt_is_argmax,
    orthogonality_ratio,
    score_gaps,
    token_gram,
    token_scores,
    trial_generators,
)

FIELDS = ("X", "y", "u", "opt", "designated_opt")


def gaussian_tokens(rng, K=None, *, n=6, T=4, d=32) -> TokenSelectionData:
    """A neutral data set built from the library alone: Gaussian tokens and decoder, random
    labels, ``opt`` the argmax of the scores."""
    parts = []
    for g in trial_generators(rng, K):
        X = g.standard_normal((n, T, d)) / np.sqrt(d)
        parts.append((X, g.choice([-1.0, 1.0], size=n), g.standard_normal(d) / np.sqrt(d)))
    X, y, u = (np.stack(p) for p in zip(*parts))
    opt = np.argmax(token_scores(X, y, u), axis=-1)
    report = AssumptionReport.from_flags({"opt_unique_argmax": opt_is_argmax(token_scores(X, y, u), opt).all(-1)},
                                         {"rho_perp": orthogonality_ratio(X)})
    return TokenSelectionData(name=f"gaussian_tokens(n={n},T={T},d={d})", X=X, y=y, u=u, opt=opt,
                              designated_opt=opt.copy(), params=dict(n=n, T=T, d=d), assumptions=report)


# ----------------------------------------------------------------------------- seeding


def test_trial_generators_seeding_rules():
    first = [g.standard_normal(3) for g in trial_generators(5, 4)]
    np.testing.assert_array_equal(first[:2], [g.standard_normal(3) for g in trial_generators(5, 2)])
    by_seed = [g.standard_normal(3) for g in trial_generators([3, 5])]
    np.testing.assert_array_equal(by_seed[1], np.random.default_rng(5).standard_normal(3))
    assert len(trial_generators(range(5))) == 5 and len(trial_generators(0)) == 1
    with pytest.raises(ValueError, match="K=2"):
        trial_generators([1, 2, 3], K=2)
    a = [g.standard_normal(2) for g in trial_generators(np.random.default_rng(9), 2)]
    b = [g.standard_normal(2) for g in trial_generators(np.random.default_rng(9), 2)]
    np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- container


def test_container_shapes_instance_and_read_only():
    data = gaussian_tokens(0, K=3, n=5, T=3, d=20)
    assert (data.K, data.n, data.T, data.d) == (3, 5, 3, 20)
    assert data.X.shape == (3, 5, 3, 20) and data.u.shape == (3, 20) and data.opt.shape == (3, 5)
    assert data.scores().shape == (3, 5, 3)
    inst = data.instance(1)
    for key in FIELDS:
        np.testing.assert_array_equal(getattr(inst, key), getattr(data, key)[1])
    np.testing.assert_array_equal(inst.optimal_tokens(), data.X[1][np.arange(5), data.opt[1]])
    with pytest.raises(ValueError):
        data.X[0, 0, 0, 0] = 1.0
    with pytest.raises(ValueError, match="shape"):
        dataclasses.replace(data, u=data.u[:, :-1])
    with pytest.raises(ValueError, match="float64"):
        dataclasses.replace(data, X=data.X.astype(np.float32))


def test_scores_are_label_times_projection():
    data = gaussian_tokens(1, K=2)
    expected = data.y[..., None] * np.einsum("kntd,kd->knt", data.X, data.u)
    np.testing.assert_allclose(data.scores(), expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_to_torch_moves_the_same_numbers(dtype):
    data = gaussian_tokens(2, K=2)
    tensors = data.to_torch("cpu", dtype=dtype)
    assert tensors.X.dtype == dtype and tensors.u.dtype == dtype and tensors.y.dtype == dtype
    assert tensors.opt.dtype == torch.int64 and tensors.designated_opt.dtype == torch.int64
    assert tensors.X.device.type == "cpu"
    np.testing.assert_array_equal(tensors.X.numpy(), data.X.astype(tensors.X.numpy().dtype))
    np.testing.assert_array_equal(tensors.opt.numpy(), data.opt)


def test_default_torch_dtype_is_float64():
    assert gaussian_tokens(0).to_torch("cpu").X.dtype == torch.float64


# ----------------------------------------------------------------------------- model math on numpy


def test_numpy_entry_points_evaluate_the_model_functions():
    """token_scores and constraint_radii have one implementation, the model's torch functions."""
    data = gaussian_tokens(3, K=2, n=4, T=3, d=16)
    t = data.to_torch()
    np.testing.assert_array_equal(token_scores(data.X, data.y, data.u), models.token_scores(t.X, t.y, t.u).numpy())
    np.testing.assert_array_equal(constraint_radii(data.X, data.opt), models.constraint_radii(t.X, t.opt).numpy())
    # the formula R_i = ||x_{i,0}|| max_{t != opt_i} ||x_{i,opt_i} - x_{i,t}||
    optimal = np.take_along_axis(data.X, data.opt[:, :, None, None], axis=2)
    expected = np.linalg.norm(data.X[:, :, 0], axis=-1) * np.linalg.norm(optimal - data.X, axis=-1).max(-1)
    np.testing.assert_allclose(constraint_radii(data.X, data.opt), expected, rtol=1e-14)


# ----------------------------------------------------------------------------- token measurements


def test_orthogonality_ratio_by_hand():
    X = np.array([[[1.0, 0.0], [1.0, 1.0]]])  # n=1, T=2: cross 1, min squared norm 1
    assert max_cross_inner_product(X) == pytest.approx(1.0)
    assert orthogonality_ratio(X) == pytest.approx(1.0)
    X = np.array([[[2.0, 0, 0, 0], [0, -1.0, 0, 0]], [[0, 0, 0.5, 0], [0, 0, 0, 3.0]]])
    assert orthogonality_ratio(X) == 0.0  # orthogonal within and across samples
    X[1, 1, 0] = 1.0  # <x_{0,0}, x_{1,1}> = 2, min squared norm 0.25
    assert orthogonality_ratio(X) == pytest.approx(8.0)
    np.testing.assert_allclose(orthogonality_ratio(np.stack([X, 2 * X])), [8.0, 8.0])
    assert token_gram(np.stack([X, X])).shape == (2, 4, 4)


def test_non_optimal_spread_score_gaps_and_argmax_by_hand():
    scores = np.array([[3.0, 1.0, 1.0, 0.5], [1.0, 2.0, 1.0, 1.0]])
    opt = np.array([0, 1])
    assert non_optimal_spread(scores, opt) == 0.5
    assert non_optimal_spread(scores[1:], opt[1:]) == 0.0
    np.testing.assert_array_equal(score_gaps(scores, opt), [2.0, 1.0])
    np.testing.assert_array_equal(opt_is_argmax(scores, opt), [True, True])
    np.testing.assert_array_equal(opt_is_argmax(scores, np.array([1, 0])), [False, False])
    tie = np.array([[0.0, 2.0, 2.0]])
    np.testing.assert_array_equal(opt_is_argmax(tie, np.array([1])), [False])  # a tie is not unique


def test_concatenate_stacks_trials_and_reports_in_order():
    a, b = gaussian_tokens([0, 1]), gaussian_tokens([2], n=6, T=4, d=32)
    both = concatenate([a, b])
    assert both.K == 3 and both.name == a.name + "+" + b.name
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(both, field), np.concatenate([getattr(a, field), getattr(b, field)]))
    np.testing.assert_array_equal(both.assumptions.details["rho_perp"],
                                  np.r_[a.assumptions.details["rho_perp"], b.assumptions.details["rho_perp"]])
    assert both.assumptions.n_met == a.assumptions.n_met + b.assumptions.n_met
    assert concatenate([a]) is a


def test_library_data_module_speaks_no_paper():
    """The library's data module names no paper's data sets or assumptions."""
    import theorycheck.data as data

    for word in ("example1", "antipodal", "counterexample", "gaussian_dm", "assumption2", "ASSUMPTION2"):
        assert not any(word in name for name in dir(data)), word


def test_data_and_solvers_sources_use_no_paper_vocabulary():
    """Pointers into a paper (assumption/lemma/equation numbers, its key) belong in claims/<paper>/;
    a citation of a paper as the source of a program is fine."""
    import re
    from pathlib import Path

    import theorycheck

    pattern = re.compile(r"assumption ?[0-9]|example ?1|eq\. ?\(|lemma|theorem|condition 1|vdt24|figure|fig\. ",
                         re.IGNORECASE)
    root = Path(theorycheck.__file__).parent
    hits = [f"{path.relative_to(root)}:{number}: {line.strip()}"
            for package in ("data", "solvers") for path in sorted((root / package).glob("*.py"))
            for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, "\n".join(hits)
