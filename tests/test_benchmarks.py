"""The benchmark script's bookkeeping (never its timings): a partial run (``--only``) keeps the
other workloads' rows of the machine's results file."""
import importlib.util

import pytest


@pytest.fixture(scope="module")
def bench(benchmark_script):
    return benchmark_script("bench")


def test_partial_run_keeps_the_other_workloads_rows_in_workload_order(bench):
    first, second = list(bench.WORKLOADS)[:2]
    earlier = {"rows": [{"device": "cpu", "workload": second, "K": 1, "old": True},
                        {"device": "cpu", "workload": first, "K": 1, "old": True},
                        {"device": "cpu", "workload": first, "K": 64, "old": True}],
               "svm": [{"solve": "old"}]}
    new = {"rows": [{"device": "cpu", "workload": second, "K": 1, "old": False}], "svm": []}
    merged = bench.with_earlier_rows(new, earlier, f"^{second}$")
    assert [(r["workload"], r["K"], r["old"]) for r in merged["rows"]] == [
        (first, 1, True), (first, 64, True), (second, 1, False)]
    assert merged["svm"] == [{"solve": "old"}]
    assert bench.with_earlier_rows(dict(new, svm=[{"solve": "new"}]), earlier, second)["svm"] == [{"solve": "new"}]


def test_the_plain_jax_row_runs_the_same_step_when_jax_is_installed(bench):
    """The row a user would write instead (jit + vmap + grad); absent when jax is not installed."""
    import types

    args = types.SimpleNamespace(repeats=1, min_seconds=0.0)
    if importlib.util.find_spec("jax") is None:
        assert bench.bench_jax("cpu", args) == []
        return
    old_trials, bench.TRIALS = bench.TRIALS, (1, 4)
    try:
        rows = bench.bench_jax("cpu", args)
    finally:
        bench.TRIALS = old_trials
    assert [r["K"] for r in rows] == [1, 4] and all(r["trial_steps_per_s"] > 0 for r in rows)
    table = bench.table(dict(machine="m", platform="p", torch="t", threads=1, peaks={}, rows=rows))
    assert table.splitlines()[-1].endswith("|  |  |  |")   # no naive loop, no bound: empty cells


def test_profile_step_splits_the_step_and_counts_its_traffic(benchmark_script, tmp_path):
    """benchmarks/profile_step.py on a small K: the shares of the step are fractions, the
    operator table lists the batched matrix product, and the traffic outside the matrix products
    is at least the step's minimal bytes (every argument and result counted once a kernel)."""
    module = benchmark_script("profile_step")
    rate, bound, ops, cpu, peaks, flops, nbytes, traffic = module.profile_step(
        "token_selection canonical", "ngd", "span", 16, 3)
    assert rate > 0 and bound > 0 and cpu > 0 and flops > 0 and nbytes > 0
    assert all(0 <= share <= 1.5 for share, _ in ops.values()) and "aten::bmm" in ops
    assert traffic[0] > 0 and traffic[1] > 0 and traffic[2] > 0 and peaks[2] > 0
    out = tmp_path / "profile.md"
    assert module.main(["--K", "16", "--steps", "2", "--out", str(out)]) == 0
    assert "| `aten::bmm` |" in out.read_text()
    with pytest.raises(SystemExit, match="unknown workload"):
        module.main(["--workload", "nope"])


def test_quick_tier_script_lists_the_papers_flags_the_budget_and_refuses_unknown_ones(benchmark_script):
    """benchmarks/quick_tier.py's bookkeeping: the papers are the claim packages, the table marks
    a paper over 60 s, and an unknown paper is named before anything runs."""
    module = benchmark_script("quick_tier")
    assert {"anon20", "gsb26", "jta24"} <= set(module.papers(module.ROOT / "claims"))
    rows = [{"paper": "a", "wall_s": 59.0, "cpu_s": 58.0, "exit_status": 0, "pytest": "1 passed"},
            {"paper": "b", "wall_s": 61.0, "cpu_s": 60.5, "exit_status": 0, "pytest": "1 passed"}]
    lines = module.table(rows).splitlines()
    assert lines[2].split("|")[4].strip() == "yes" and lines[3].split("|")[4].strip() == "**no**"
    with pytest.raises(SystemExit, match="unknown paper"):
        module.main(["--papers", "nope"])


def test_quick_tier_host_probe_times_its_fixed_workload_and_restores_the_threads(benchmark_script):
    """The host probe returns both parts' seconds (non-negative: a tiny workload rounds to 0.0 at
    the recorded millisecond) and leaves torch's thread count as it found it (the papers'
    processes are separate, but the caller's is not)."""
    import torch

    module = benchmark_script("quick_tier")
    module.PROBE_LOOP, module.PROBE_MATMUL = 1000, (8, 2)
    threads = torch.get_num_threads()
    probe = module.host_probe()
    assert set(probe) == {"python_s", "matmul_s"} and all(v >= 0 for v in probe.values())
    assert torch.get_num_threads() == threads
