"""Shared runs and their cache: keys, the disk format, corruption, invalidation, the plugin
options and the CLI."""
import importlib
import json
import math
import pickle
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from theorycheck import Control, cli, shared_run
from theorycheck.cache import (
    CACHE_DIR_ENV, DEFAULT_DIR_NAME, CacheWarning, DiskCache, SharedRunCache, TAG_NAME, cache_from_options,
    cache_key, canonical, default_cache_dir, directory_fingerprint,
)
from theorycheck.context import ClaimContext
from theorycheck.claim import ClaimSpec
from theorycheck.errors import DeclarationError, UsageError
from theorycheck.report import load_results
from theorycheck.runtime import Runtime, generator

RT = Runtime()
CALLS = []


@dataclass
class Summary:
    losses: np.ndarray
    final: torch.Tensor
    label: str


@shared_run(sizes={"quick": {"n": 5}, "full": {"n": 50}}, scope="test")
def numpy_run(run, *, eta=0.1, shift=(0.0,)):
    CALLS.append(("numpy_run", eta))
    return {"x": run.rng("data").standard_normal(run.sizes["n"]) * eta + shift[0], "eta": eta}


@shared_run(sizes={"quick": {"n": 4}, "full": {"n": 40}}, scope="test")
def torch_run(run):
    CALLS.append(("torch_run",))
    g = torch.Generator().manual_seed(run.seed("init"))
    return torch.randn(run.sizes["n"], run.sizes["n"], generator=g, dtype=run.dtype)


@shared_run(scope="test")
def dataclass_run(run, *, steps=3):
    CALLS.append(("dataclass_run", steps))
    losses = np.exp(-np.arange(steps, dtype=float))
    return Summary(losses=losses, final=run.tensor(losses[-1:]), label=f"{steps} steps")


@shared_run(scope="test")
def nested_run(run):
    return run.use(numpy_run, eta=2.0)["x"].sum()


@shared_run(scope="test", seeded=False)
def fixed_run(run, *, steps=3):
    CALLS.append(("fixed_run", steps, run.runtime.seed))
    return np.cumsum(np.ones(steps))


@shared_run(scope="test", seeded=False)
def seedless_drawing_run(run):
    return run.rng("data").standard_normal(3)


@shared_run(scope="test", seeded=False)
def seedless_using_seeded_run(run):
    return run.use(numpy_run)


@shared_run(scope="test")
def unpicklable_run(run):
    return {"f": lambda: 0}


def same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.device == b.device and torch.equal(a, b)
    if isinstance(a, Summary):
        return same(vars(a), vars(b))
    return np.array_equal(a, b)


@pytest.fixture(autouse=True)
def _reset_calls():
    CALLS.clear()


def disk_cache(tmp_path) -> SharedRunCache:
    return SharedRunCache(DiskCache(tmp_path / "cache"))


# -- values --------------------------------------------------------------------------------
@pytest.mark.parametrize("run, config", [(numpy_run, {"eta": 0.5}), (torch_run, {}),
                                         (dataclass_run, {"steps": 7})])
def test_a_value_from_the_disk_equals_the_fresh_value(tmp_path, run, config):
    fresh, _ = SharedRunCache(None).use(run, RT, config)
    stored, first = disk_cache(tmp_path).use(run, RT, config)
    loaded, second = disk_cache(tmp_path).use(run, RT, config)  # a new process memo
    assert (first["source"], second["source"]) == ("computed", "disk")
    assert first["key"] == second["key"] and len(CALLS) == 2
    assert same(fresh, stored) and same(fresh, loaded) and loaded is not stored


def test_an_entry_keeps_the_cost_of_its_computation(tmp_path):
    """A value read from the disk carries the CPU seconds its computation stored beside it (a
    resumed run counts them where an uninterrupted one would); a cleared cache has no costs
    left, and an entry without its cost file reads back without one."""
    _, first = disk_cache(tmp_path).use(numpy_run, RT, {"eta": 0.3})
    _, second = disk_cache(tmp_path).use(numpy_run, RT, {"eta": 0.3})
    assert second["source"] == "disk" and second["cpu_s"] == first["cpu_s"] >= 0
    disk = DiskCache(tmp_path / "cache")
    disk.cost_path(first["key"]).unlink()
    _, third = disk_cache(tmp_path).use(numpy_run, RT, {"eta": 0.3})
    assert third["source"] == "disk" and "cpu_s" not in third and disk.cost(first["key"]) is None
    disk_cache(tmp_path).use(numpy_run, RT, {"eta": 0.4})
    disk.clear()
    assert not list((tmp_path / "cache").glob("??/*"))


def test_the_memo_returns_the_same_object_without_reloading(tmp_path):
    cache = disk_cache(tmp_path)
    first, r1 = cache.use(numpy_run, RT, {})
    cache.disk.path(r1["key"]).unlink()
    second, r2 = cache.use(numpy_run, RT, {})
    assert second is first and r2["source"] == "memo" and len(CALLS) == 1


def test_the_memo_forgets_the_least_recently_used_value():
    cache = SharedRunCache(None, memo_size=2)
    for eta in (1.0, 2.0, 1.0, 3.0, 1.0, 2.0):
        cache.use(numpy_run, RT, {"eta": eta})
    assert CALLS == [("numpy_run", 1.0), ("numpy_run", 2.0), ("numpy_run", 3.0), ("numpy_run", 2.0)]


def test_the_record_names_the_run_config_sizes_and_seed(tmp_path):
    _, record = disk_cache(tmp_path).use(numpy_run, Runtime(seed=7), {"shift": (1.0,)})
    assert record == {"name": f"{__name__}.numpy_run", "key": record["key"],
                      "config": {"eta": 0.1, "shift": {"tuple": [1.0]}}, "sizes": {"n": 5},
                      "seed": 7, "source": "computed", "cpu_s": record["cpu_s"]}
    assert record["cpu_s"] >= 0


def test_a_run_draws_from_the_streams_of_its_scope():
    value, _ = SharedRunCache(None).use(numpy_run, RT, {"eta": 1.0})
    assert np.array_equal(value["x"], generator(RT.seed, "test", "data").standard_normal(5))


def test_a_run_can_use_another_run_through_the_same_cache(tmp_path):
    cache = disk_cache(tmp_path)
    total, _ = cache.use(nested_run, RT, {})
    inner, record = cache.use(numpy_run, RT, {"eta": 2.0})
    assert record["source"] == "memo" and total == inner["x"].sum()


def test_a_seedless_run_has_one_value_and_one_key_for_every_seed(tmp_path):
    """seeded=False: computed once at base seed 0, whatever the caller's seed, and found again
    under another seed (its key leaves the seed out)."""
    cache = disk_cache(tmp_path)
    first, record = cache.use(fixed_run, Runtime(seed=7), {})
    again, other = cache.use(fixed_run, Runtime(seed=8), {})
    assert CALLS == [("fixed_run", 3, 0)] and other["source"] == "memo" and again is first
    assert record["seed"] is None and record["key"] == other["key"] == key(fixed_run)
    assert key(numpy_run) != key(numpy_run, runtime=Runtime(seed=1))


@pytest.mark.parametrize("run, message", [
    (seedless_drawing_run, r"seedless_drawing_run is declared seeded=False, so it cannot draw "
                           r"the stream \('data',\)"),
    (seedless_using_seeded_run, r"seedless_using_seeded_run is declared seeded=False but uses "
                                r"the seeded run .*numpy_run"),
])
def test_a_seedless_run_that_draws_or_uses_a_seeded_run_is_a_usage_error(run, message):
    with pytest.raises(UsageError, match=message):
        SharedRunCache(None).use(run, RT, {})


def test_seeded_must_be_a_boolean():
    with pytest.raises(DeclarationError, match="seeded must be True or False, got 'no'"):
        shared_run(scope="test", seeded="no")(lambda run: 0)


def test_a_value_that_cannot_be_pickled_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="unpicklable_run: its value cannot be pickled"):
        disk_cache(tmp_path).use(unpicklable_run, RT, {})
    assert SharedRunCache(None).use(unpicklable_run, RT, {})[1]["source"] == "computed"


# -- corruption ------------------------------------------------------------------------------
def _truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _flip(data: bytes) -> bytes:
    return data[:-10] + bytes([data[-10] ^ 0x01]) + data[-9:]


def _garbage(data: bytes) -> bytes:
    return b"\x00garbage" * 10


def _sound_header_unknown_class(data: bytes) -> bytes:
    import hashlib

    payload = pickle.dumps(Summary(np.zeros(1), torch.zeros(1), "x")).replace(
        b"Summary", b"Vanishd")
    magic = b"theorycheck-cache-2 "
    key = data[len(magic):len(magic) + 64]
    return magic + key + b" " + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


@pytest.mark.parametrize("corrupt", [_truncate, _flip, _garbage, _sound_header_unknown_class])
def test_a_corrupted_entry_is_recomputed_with_a_warning_never_trusted(tmp_path, corrupt):
    fresh, record = disk_cache(tmp_path).use(dataclass_run, RT, {"steps": 5})
    path = DiskCache(tmp_path / "cache").path(record["key"])
    path.write_bytes(corrupt(path.read_bytes()))
    with pytest.warns(CacheWarning, match=f"discarded corrupted entry {path}"):
        value, again = disk_cache(tmp_path).use(dataclass_run, RT, {"steps": 5})
    assert again["source"] == "computed" and same(value, fresh) and len(CALLS) == 2
    assert DiskCache(tmp_path / "cache").cost(record["key"]) == again["cpu_s"]   # rewritten with it
    assert disk_cache(tmp_path).use(dataclass_run, RT, {"steps": 5})[1]["source"] == "disk"


# -- keys ------------------------------------------------------------------------------------
def key(run=numpy_run, runtime=RT, **config) -> str:
    return cache_key(run, runtime, run.bind(config))


def test_keys_differ_with_config_seed_dtype_device_tier_and_run():
    keys = [key(), key(eta=0.2), key(shift=[0.0]), key(eta=1), key(runtime=Runtime(seed=1)),
            key(runtime=Runtime(dtype="float32")), key(runtime=Runtime(device="cuda")),
            key(runtime=Runtime(tier="full")), key(runtime=Runtime(threads=2)), key(torch_run)]
    assert len(set(keys)) == len(keys)


def test_defaults_are_part_of_the_config():
    assert key() == key(eta=0.1) == key(eta=0.1, shift=(0.0,))


def test_keys_of_arrays_and_tensors_follow_dtype_shape_and_bytes():
    a = np.arange(6.0)
    images = [canonical(x, "x") for x in (a, a.reshape(2, 3), a.astype(np.float32), a + 1,
                                           torch.arange(6.0, dtype=torch.float64), a[::-1])]
    assert len({json.dumps(i) for i in images}) == len(images)
    assert canonical(a[::-1], "x") == canonical(np.array([5.0, 4, 3, 2, 1, 0]), "x")
    assert canonical(torch.ones(2, 2).t(), "x") == canonical(torch.ones(2, 2), "x")


@pytest.mark.parametrize("bad, where", [
    (object(), "argument 'eta': unsupported type object"),
    ([1, {"a": {1, 2}}], r"argument 'eta'\[1\]\['a'\]: unsupported type set"),
    ({1: 2.0}, "argument 'eta': dict keys must be strings"),
    (np.array([None]), "argument 'eta': numpy arrays of Python objects"),
])
def test_an_unsupported_config_value_is_a_usage_error_naming_the_argument(bad, where):
    with pytest.raises(UsageError, match=where):
        SharedRunCache(None).use(numpy_run, RT, {"eta": bad})
    assert CALLS == []


def test_an_unknown_config_argument_is_a_usage_error():
    with pytest.raises(UsageError, match="numpy_run: got an unexpected keyword argument 'lr'"):
        SharedRunCache(None).use(numpy_run, RT, {"lr": 0.1})


def test_use_refuses_a_plain_function_and_a_shared_run_refuses_a_direct_call():
    with pytest.raises(UsageError, match="declared with @theorycheck.shared_run"):
        SharedRunCache(None).use(lambda run: 1, RT, {})
    with pytest.raises(UsageError, match=r"use tc.use\(numpy_run"):
        numpy_run(None)


@pytest.mark.parametrize("decorate, message", [
    (lambda f: shared_run(scope="s")(f), "only positional argument"),
    (lambda f: shared_run(sizes={"quick": {}}, scope="s")(f), "exactly the tiers"),
    (lambda f: shared_run(sizes={"quick": {"iterations": 9}, "full": {"iterations": 9}}, scope="s")(f),
     "shared run .*: size 'iterations' is a synonym: use 'steps'"),
    (lambda f: shared_run(sizes={"quick": {"n": {1}}, "full": {}}, scope="s")(f), "unsupported type set"),
    (lambda f: shared_run(f), "scope cannot be inferred"),
])
def test_declaration_errors(decorate, message):
    def two_positionals(run, eta):
        return eta

    target = two_positionals if message == "only positional argument" else (lambda run: 0)
    with pytest.raises(DeclarationError, match=message):
        decorate(target)


# -- invalidation by code --------------------------------------------------------------------
def write_package(root, name: str):
    """``<root>/<name>/claims/paperx/sub/runs.py``: a shared run using ``paperx/helper.py``."""
    package = root / name / "claims" / "paperx"
    (package / "sub").mkdir(parents=True)
    for folder in (root / name, root / name / "claims", package, package / "sub"):
        (folder / "__init__.py").write_text("")
    (package / "helper.py").write_text("FACTOR = 2\n")
    (package / "sub" / "runs.py").write_text(textwrap.dedent("""
        from theorycheck import shared_run
        from ..helper import FACTOR

        @shared_run
        def doubled(run, *, x=1.0):
            return FACTOR * x
    """))
    return package


def test_a_changed_source_file_of_the_runs_package_misses_the_cache(tmp_path, monkeypatch):
    package = write_package(tmp_path, "pkg_invalidation")
    monkeypatch.syspath_prepend(str(tmp_path))
    run = importlib.import_module("pkg_invalidation.claims.paperx.sub.runs").doubled
    assert run.scope == "paperx" and run.source_dir == package.resolve()
    before = key(run)
    directory_fingerprint.cache_clear()
    assert key(run) == before  # recomputing the fingerprint of unchanged code changes nothing
    _, first = disk_cache(tmp_path).use(run, RT, {})
    (package / "helper.py").write_text("FACTOR = 2  # a comment is a change too\n")
    assert key(run) == before  # fingerprints are computed once per process
    directory_fingerprint.cache_clear()
    value, second = disk_cache(tmp_path).use(run, RT, {})
    assert second["key"] != before and second["source"] == "computed" and value == 2.0
    directory_fingerprint.cache_clear()


# -- the disk directory -----------------------------------------------------------------------
def test_info_and_clear_count_only_cache_entries(tmp_path):
    cache = disk_cache(tmp_path)
    cache.use(numpy_run, RT, {})
    cache.use(torch_run, RT, {})
    disk = DiskCache.existing(tmp_path / "cache")
    (tmp_path / "cache" / "notes.txt").write_text("mine")
    info = disk.info()
    assert info.entries == 2 and info.bytes == sum(p.stat().st_size for p in disk.entries())
    assert disk.clear() == info and disk.info().entries == 0
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [TAG_NAME, "notes.txt"]


def test_the_cli_reports_and_clears_the_cache(tmp_path, capsys):
    disk_cache(tmp_path).use(numpy_run, RT, {})
    root = tmp_path / "cache"
    assert cli.main(["cache", "info", "--dir", str(root)]) == 0
    assert capsys.readouterr().out == f"theorycheck cache: 1 entries, 0.0 MB in {root}\n"
    assert cli.main(["cache", "clear", "--dir", str(root)]) == 0
    assert capsys.readouterr().out.startswith("theorycheck cache: removed 1 entries")
    cli.main(["cache", "info", "--dir", str(root)])
    assert capsys.readouterr().out.startswith("theorycheck cache: 0 entries")


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing", "no cache directory at"),
    (lambda p: (p / "file").write_text("x") and p / "file", "is not a directory"),
    (lambda p: p, "is not a theorycheck cache"),
])
def test_the_cli_refuses_a_bad_directory_with_one_line(tmp_path, make, message):
    (tmp_path / "precious.txt").write_text("keep")
    with pytest.raises(SystemExit) as exc:
        cli.main(["cache", "clear", "--dir", str(make(tmp_path))])
    assert message in str(exc.value.code) and "\n" not in str(exc.value.code)
    assert (tmp_path / "precious.txt").read_text() == "keep"


def test_the_context_records_each_use_and_its_keys():
    spec = ClaimSpec(id="toy.a.b", paper="toy", source="s", statement="s",
                     controls={"c": Control("statement", breaks=["b"])}, provenance="derived")
    tc = ClaimContext(spec, None, RT)
    tc.use(numpy_run)
    tc.use(numpy_run, eta=0.1)
    tc.use(torch_run)
    assert [r["source"] for r in tc.shared_runs] == ["computed", "memo", "computed"]
    assert tc.shared_keys == {key(), key(torch_run)}
    assert tc.to_json()["shared_runs"] == tc.shared_runs


def test_the_context_logs_whether_a_run_carries_the_seed_and_draws_paper_streams():
    """A seedless run's use is logged as not carrying the seed; ``tc.paper_rng`` draws the
    paper-wide stream a shared run of the paper's scope draws, logged as a draw."""
    spec = ClaimSpec(id="test.a.b", paper="test", source="s", statement="s",
                     controls={"c": Control("statement", breaks=["b"])}, provenance="derived")
    tc = ClaimContext(spec, None, RT)
    tc.use(fixed_run)
    assert tc.computations.seeded_count() == 0
    drawn = tc.paper_rng("data").standard_normal(5)
    value, _ = SharedRunCache(None).use(numpy_run, RT, {"eta": 1.0})
    assert np.array_equal(drawn, value["x"]) and tc.seeds["paper/data"] == tc.paper_seed("data")
    tc.use(numpy_run)
    assert [e["kind"] for e in tc.computations.events] == ["shared_run", "draw", "shared_run"]
    assert tc.computations.seeded_count() == 2


def test_an_infinite_setting_is_recorded_as_strict_json():
    """A run configured with eta_max = inf (an uncapped step) must not break results.json."""
    spec = ClaimSpec(id="toy.a.b", paper="toy", source="s", statement="s",
                     controls={"c": Control("statement", breaks=["b"])}, provenance="derived")
    tc = ClaimContext(spec, None, RT)
    tc.use(numpy_run, eta=math.inf)
    assert tc.shared_runs[0]["config"]["eta"] == "inf"
    json.dumps(tc.to_json(), allow_nan=False)


# -- through pytest ----------------------------------------------------------------------------
PROJECT_RUNS = '''
from pathlib import Path

from theorycheck import shared_run

COUNTER = Path(__file__).parents[3] / "computed.txt"


@shared_run(sizes={"quick": {"n": 4}, "full": {"n": 40}})
def series(run, *, rate=0.5):
    with COUNTER.open("a") as f:
        f.write(f"{rate}\\n")
    return run.tensor(rate ** run.rng("series").uniform(1, 2, run.sizes["n"]).cumsum())
'''

PROJECT_CLAIM = '''
from theorycheck import Control, claim

from ._runs import series


@claim("toy.thm1.decay", source="Theorem 1", statement="The series decays.", provenance="stated",
       controls={"same_run": Control("statement", breaks=["below 1"],
                                     description="compare against a bound of 0"),
                 "growing": Control("dynamics", breaks=["below 1"], description="use rate 2")})
def test_decay(tc):
    values = tc.use(series, rate=2.0 if tc.control == "growing" else 0.5)
    bound = 0.0 if tc.control == "same_run" else 1.0
    tc.record("keys", sorted(tc.shared_keys))
    tc.conclusion.at_most("below 1", values.max().item(), bound)
'''


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.delenv("THEORYCHECK_CACHE_DIR", raising=False)
    package = pytester.path / "proj" / "claims" / "toy"
    package.mkdir(parents=True)
    for folder in (package.parents[1], package.parent, package):
        (folder / "__init__.py").write_text("")
    (package / "_runs.py").write_text(PROJECT_RUNS)
    (package / "test_decay.py").write_text(PROJECT_CLAIM)
    return pytester


def sources(pytester) -> dict:
    (entry,) = load_results(pytester.path / "reports" / "latest" / "results.json")["claims"]
    cases = {"claim": entry, **{c["name"]: c for c in entry["controls"]}}
    for case in cases.values():
        assert [r["key"] for r in case["shared_runs"]] == case["measurements"]["keys"]
    return {name: [r["source"] for r in case["shared_runs"]] for name, case in cases.items()}


def computed(pytester) -> list[str]:
    return (pytester.path / "computed.txt").read_text().split()


def test_a_second_pytest_run_reads_the_shared_run_from_disk(project):
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, xfailed=2)
    assert sources(project) == {"claim": ["computed"], "same_run": ["memo"], "growing": ["computed"]}
    assert computed(project) == ["0.5", "2.0"]
    assert (project.path / ".theorycheck-cache" / TAG_NAME).is_file()
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, xfailed=2)
    assert sources(project) == {"claim": ["disk"], "same_run": ["memo"], "growing": ["disk"]}
    assert computed(project) == ["0.5", "2.0"]


def test_no_cache_computes_in_every_run_and_writes_nothing(project):
    for _ in range(2):
        project.runpytest("-p", "no:cacheprovider", "--tc-no-cache").assert_outcomes(
            passed=1, xfailed=2)
        assert sources(project) == {"claim": ["computed"], "same_run": ["memo"],
                                    "growing": ["computed"]}
    assert computed(project) == ["0.5", "2.0"] * 2
    assert not (project.path / ".theorycheck-cache").exists()


def test_the_cache_dir_option_and_its_environment_variable(project, monkeypatch):
    project.runpytest("-p", "no:cacheprovider", "--tc-cache-dir", "elsewhere").assert_outcomes(
        passed=1, xfailed=2)
    assert DiskCache.existing(project.path / "elsewhere").info().entries == 2
    monkeypatch.setenv("THEORYCHECK_CACHE_DIR", str(project.path / "elsewhere"))
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, xfailed=2)
    assert sources(project)["claim"] == ["disk"]
    assert not (project.path / ".theorycheck-cache").exists()


def test_a_cache_dir_that_is_a_file_is_a_usage_error(project):
    (project.path / "afile").write_text("")
    result = project.runpytest("-p", "no:cacheprovider", "--tc-cache-dir", "afile")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*theorycheck: cache directory *afile* is not a directory*"])


def test_xdist_workers_share_one_cache(project):
    """Two claim functions on two workers: whichever computes first stores the runs, and a
    second run reads everything from the disk."""
    claims = project.path / "proj" / "claims" / "toy"
    (claims / "test_again.py").write_text(PROJECT_CLAIM.replace("toy.thm1.decay", "toy.thm1.again")
                                          .replace("test_decay", "test_again"))
    args = ("-p", "no:cacheprovider", "-n", "2")
    project.runpytest(*args).assert_outcomes(passed=2, xfailed=4)
    first = len(computed(project))
    assert 2 <= first <= 4  # each of the two runs computed once, or once per worker
    cache = DiskCache.existing(project.path / ".theorycheck-cache")
    assert cache.info().entries == 2 and not list(cache.root.glob("*/*.tmp"))
    project.runpytest(*args).assert_outcomes(passed=2, xfailed=4)
    assert len(computed(project)) == first
    results = load_results(project.path / "reports" / "latest" / "results.json")
    assert {r["source"] for c in results["claims"] for case in [c, *c["controls"]]
            for r in case["shared_runs"]} <= {"disk", "memo"}


def test_one_default_cache_directory_for_pytest_and_the_command_line(tmp_path, monkeypatch):
    """Run in a subfolder of a project, a pytest run (``<rootdir>/.theorycheck-cache``) and the
    command line (`theorycheck run`, `theorycheck cache`) name the same cache, at the folder of
    the project's pytest configuration (a pyproject.toml without one does not stop the
    search); ``$THEORYCHECK_CACHE_DIR`` overrides both alike."""
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\naddopts = \"\"\n")
    sub = tmp_path / "claims" / "toy"
    sub.mkdir(parents=True)
    (tmp_path / "claims" / "pyproject.toml").write_text("[project]\nname = 'not-pytests'\n")
    monkeypatch.delenv(CACHE_DIR_ENV, raising=False)
    monkeypatch.chdir(sub)
    plugin = cache_from_options(tmp_path, sub, None, no_cache=False).disk.root
    assert plugin.resolve() == default_cache_dir().resolve() == (tmp_path / DEFAULT_DIR_NAME).resolve()
    monkeypatch.chdir(tmp_path)
    assert default_cache_dir() == Path(DEFAULT_DIR_NAME)          # in the root: relative, as it was
    monkeypatch.setenv(CACHE_DIR_ENV, "elsewhere")
    monkeypatch.chdir(sub)
    assert cache_from_options(tmp_path, sub, None, no_cache=False).disk.root == sub / "elsewhere"
    assert default_cache_dir() == Path("elsewhere")
