"""The comparisons in theorycheck.checks decide correctly and record their numbers."""
import math
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from theorycheck import checks
from theorycheck.runtime import (Runtime, RuntimeConfigError, derive_seed, generator, keep_freed_memory,
                                 release_freed_memory)

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
vectors = arrays(np.float64, st.integers(1, 20), elements=finite)


@given(vectors, finite, st.floats(min_value=0, max_value=10))
def test_at_most_passes_exactly_when_every_element_is_below_bound_plus_margin(m, bound, margin):
    d = checks.at_most("x", m, bound, margin=margin)
    assert d.passed == bool(np.all(m <= bound + margin))
    scale = max(1.0, abs(bound), margin, float(np.max(np.abs(m))))  # the slack cancels to this scale
    assert d.detail["worst_slack"] == pytest.approx(float(np.min(bound + margin - m)), abs=4e-16 * scale)


@given(vectors, finite, st.floats(min_value=0, max_value=10))
def test_at_least_is_the_mirror_of_at_most(m, bound, margin):
    assert checks.at_least("x", m, bound, margin=margin).passed == \
        checks.at_most("x", -m, -bound, margin=margin).passed


def test_non_finite_values_never_pass():
    assert not checks.at_most("x", [1.0, np.nan], 2.0).passed
    assert not checks.at_least("x", [np.inf], 0.0).passed  # an infinite value is no evidence
    assert not checks.close("x", np.nan, 1.0, rtol=1.0).passed
    assert not checks.monotone("x", [1.0, np.nan, 3.0], increasing=True).passed


@given(st.floats(min_value=-1e3, max_value=1e3), st.floats(min_value=1e-12, max_value=1e-1))
def test_close_uses_numpy_isclose_semantics(value, rtol):
    assert checks.close("x", value * (1 + rtol / 2), value, rtol=rtol, atol=1e-300).passed
    assert not checks.close("x", value + 2 * rtol * (abs(value) + 1), value, rtol=rtol,
                            atol=1e-300).passed


def test_close_frobenius_is_relative():
    A = np.eye(3)
    d = checks.close("A", A + 1e-7, A, rtol=1e-6, norm="fro")
    assert d.passed and d.measured == pytest.approx(3e-7 / math.sqrt(3))
    assert not checks.close("A", A + 1e-5, A, rtol=1e-6, norm="fro").passed


def test_close_refuses_a_zero_tolerance_and_unknown_norm():
    with pytest.raises(ValueError, match="at least one > 0"):
        checks.close("x", 1.0, 1.0)
    with pytest.raises(ValueError, match="unknown norm"):
        checks.close("x", 1.0, 1.0, rtol=1, norm="max")


@given(st.floats(min_value=-3, max_value=3), st.floats(min_value=-5, max_value=5))
def test_slope_recovers_a_power_law(exponent, log_c):
    t = np.arange(1, 200, dtype=float)
    y = np.exp(log_c) * t**exponent
    fit = checks.fit_slope(t, y, window=(10, 150))
    assert fit.slope == pytest.approx(exponent, abs=1e-9)
    assert fit.n_points == 141
    if abs(exponent) > 1e-3:
        assert checks.slope("p", t, y, window=(10, 150), expected=exponent, rtol=1e-6).passed


def test_slope_checks_range_r2_and_transforms():
    t = np.arange(0, 1000, dtype=float)
    log_loss = -2.0 * (t + 1) ** (1 / 3) + 0.5
    d = checks.slope("loss", t + 1, log_loss, window=(100, 1000), x_transform=1 / 3,
                     y_transform="linear", expected=-2.0, rtol=1e-9, min_r2=0.999)
    assert d.passed and d.detail["r2"] == pytest.approx(1.0)
    assert not checks.slope("loss", t + 1, log_loss, window=(100, 1000), x_transform=1 / 3,
                            y_transform="linear", at_least=-1.0).passed
    with pytest.raises(ValueError, match="at least 3"):
        checks.slope("p", t + 1, t + 1, window=(5000, 6000), at_most=0)
    with pytest.raises(ValueError, match="positive values"):
        checks.slope("p", t, -t - 1, window=(1, 10), at_most=0)
    with pytest.raises(ValueError, match="expected and rtol go together"):
        checks.slope("p", t + 1, t + 1, window=(1, 10), expected=1.0)


def test_binomial_acceptance():
    ok = checks.binomial("whp", [True] * 19 + [False], p=0.9, alpha=0.05)
    assert ok.passed and ok.detail["successes"] == 19
    bad = checks.binomial("whp", [True] * 10 + [False] * 10, p=0.9, alpha=0.05)
    assert not bad.passed and bad.detail["p_value"] < 1e-4
    with pytest.raises(ValueError):
        checks.binomial("whp", [], p=0.9)


@given(arrays(np.float64, st.integers(2, 30), elements=st.floats(-1e3, 1e3)))
def test_monotone_agrees_with_sorted(series):
    assert checks.monotone("s", np.sort(series), increasing=True).passed
    d = checks.monotone("s", series, increasing=False, tol=0.0)
    assert d.passed == bool(np.all(np.diff(series) <= 0))


def test_holds_and_decision_json():
    d = checks.holds("flags", np.array([True, False]), detail={"why": np.float64(2.0)})
    assert not d.passed and d.detail["n_true"] == 1
    js = d.to_json()
    assert js["detail"]["why"] == 2.0 and js["measured"] == [True, False]
    assert checks.jsonable(float("nan")) == "nan"


def test_seeds_are_derived_by_hash_and_reproducible():
    assert derive_seed(0, "a.b.c", "data") == derive_seed(0, "a.b.c", "data")
    assert derive_seed(0, "a.b.c", "data") != derive_seed(1, "a.b.c", "data")
    assert derive_seed(0, "a.b.c", "data") != derive_seed(0, "a.b.c", "init")
    assert generator(3, "x").standard_normal() == generator(3, "x").standard_normal()


@pytest.mark.parametrize("kwargs", [dict(tier="medium"), dict(device="tpu"), dict(dtype="int8"),
                                    dict(seed=-1)])
def test_runtime_rejects_unknown_values(kwargs):
    with pytest.raises(RuntimeConfigError):
        Runtime(**kwargs)


def test_runtime_limits_torch_and_blas_threads():
    import torch
    from threadpoolctl import threadpool_info

    Runtime(threads=1).apply_torch_settings()
    assert torch.get_num_threads() == 1
    assert all(pool["num_threads"] == 1 for pool in threadpool_info())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc settings")
def test_freed_memory_is_reused_without_page_faults():
    """With `keep_freed_memory`, a 40 MB temporary allocated and freed 20 times faults its pages
    in once, not every time (glibc's default mmap/trim thresholds return it to the system at
    each free: ~10^4 minor faults per allocation, 20 times the bound below).  The best of three
    rounds counts: the kernel's own reclaim of idle pages on a loaded machine (DAMON) can fault a
    round in again, never 20 times over."""
    import resource

    import torch

    assert keep_freed_memory()
    pages = 40 * 2 ** 20 // resource.getpagesize()
    torch.ones(40 * 2 ** 20 // 8, dtype=torch.float64)
    faults = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(20):
            torch.ones(40 * 2 ** 20 // 8, dtype=torch.float64)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    assert min(faults) < 2 * pages, faults


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc settings")
def test_released_memory_leaves_the_resident_set():
    """A freed 200 MB temporary stays resident under `keep_freed_memory` until
    `release_freed_memory` gives it back."""
    import torch

    def resident_mb():
        with open("/proc/self/status") as status:
            return next(int(row.split()[1]) for row in status if row.startswith("VmRSS:")) / 1024

    assert keep_freed_memory()
    temporary = torch.ones(200 * 2 ** 20 // 8, dtype=torch.float64)
    del temporary
    kept = resident_mb()
    assert release_freed_memory()
    assert resident_mb() < kept - 100


def test_relative_margins_scale_with_the_bound():
    assert checks.at_most("m", [10.5, 1.05], [10.0, 1.0], rmargin=0.06).passed
    assert not checks.at_most("m", [10.5, 1.05], [10.0, 1.0], rmargin=0.04).passed
    assert checks.at_least("m", [9.5], [10.0], rmargin=0.05, margin=0.0).passed
    d = checks.at_least("m", [9.46], [10.0], rmargin=0.05, margin=0.05)
    assert d.passed and d.tolerance == {"margin": 0.05, "rmargin": 0.05}
    with pytest.raises(ValueError, match="margin and rmargin must be >= 0"):
        checks.at_most("m", [1.0], [1.0], rmargin=-0.1)


def test_a_bound_below_the_dtype_resolution_warns_where_only_the_margin_passes():
    """A contraction bound rate^t decays below float64 resolution while the measured error
    stalls at round-off: the check passes on its margin there and says so."""
    t = np.arange(400)
    bound = 0.8**t
    stalled = np.maximum(bound, 1e-16)
    d = checks.at_most("contraction", stalled, bound, margin=100 * 400 * 2.0**-53)
    assert d.passed and len(d.warnings) == 1
    first_unresolved = int(np.argmax((bound < 2 * 2.0**-53) & (stalled > bound)))
    assert f"first at flat index {first_unresolved}" in d.warnings[0]
    assert "float64 resolution" in d.warnings[0] and "warning:" in d.summary()
    # the window ending before the floor: nothing to warn about
    assert checks.at_most("contraction", stalled[:100], bound[:100], margin=1e-12).warnings == []
    # float32 resolves less: the same series warns earlier
    d32 = checks.at_most("c", np.maximum(bound, 1e-7), bound, margin=1e-5, dtype="float32")
    assert "float32 resolution" in d32.warnings[0]
    # a measured value resolved on the wrong side of the bound is a real failure, no warning
    assert checks.at_least("gap", -1e-3 * np.ones(5), [0.5, 0.1, 1e-20, 1e-21, 0.0]).warnings == []
    # a scalar bound or a bound of exact zeros never warns
    assert checks.at_most("s", 1e-17, 0.0, margin=1e-15).warnings == []


def test_a_slope_window_into_the_round_off_floor_warns():
    t = np.arange(1, 200, dtype=float)
    y = np.maximum(np.exp(-0.5 * t), 1e-300)
    floor = 1e-16
    inside = checks.slope("rate", t, y, window=(1, 60), x_transform="linear", at_most=-0.4,
                          floor=floor)
    assert inside.passed and inside.warnings == [] and inside.detail["floor"] == floor
    into = checks.slope("rate", t, y, window=(1, 150), x_transform="linear", at_most=-0.4,
                        floor=floor)
    first = t[np.argmax(y <= floor)]
    assert len(into.warnings) == 1 and f"first at x = {first:.6g}" in into.warnings[0]
    default = checks.slope("rate", t, y, window=(1, 150), x_transform="linear", at_most=-0.4)
    assert default.warnings and default.detail["floor"] == pytest.approx(2 * 2.0**-53 * y.max())


def test_runtime_rejects_a_thread_count_below_one():
    with pytest.raises(RuntimeConfigError, match="threads must be an integer from 1 to 1024"):
        Runtime(threads=0)


def test_slope_interval_is_the_student_t_interval_of_linregress():
    from scipy import stats
    from theorycheck.checks import fit_slope
    rng = np.random.default_rng(3)
    x = np.repeat([64.0, 512.0, 4096.0], 10)
    y = np.exp(0.2 * np.log(x) + 0.1 * rng.standard_normal(x.size))
    fit = fit_slope(x, y, window=(64, 4096))
    ref = stats.linregress(np.log(x), np.log(y))
    half = stats.t.ppf(0.995, x.size - 2) * ref.stderr
    assert np.allclose(fit.interval(0.99), (ref.slope - half, ref.slope + half), rtol=1e-12)
    with pytest.raises(ValueError, match="confidence"):
        fit.interval(1.5)
