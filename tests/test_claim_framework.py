"""The claim framework end to end, through pytester: declaration, roles, controls and the
rule deciding them, verdicts, the report."""
import json
import re

import pytest

from theorycheck import ClaimDeclarationError, Control, claim, discrepancy
from theorycheck.report import load_results

#: a control declaration for tests that do not look at controls
ANY = Control("reference", breaks=["x"], description="d")

PASSING = '''
@claim("toy.thm1.square", source="Theorem 1", statement="3 squared is 9.", provenance="stated",
       controls={"wrong_square": Control("reference", breaks=["3^2"],
                                         description="compare 3*3 against 10")})
def test_square(tc):
    expected = 10.0 if tc.control == "wrong_square" else 9.0
    tc.record("value", 3.0 * 3.0)
    tc.conclusion.close("3^2", 3.0 * 3.0, expected, rtol=1e-12)
    tc.curve("values", "x^2", [1, 2, 3], [1, 4, 9], ylabel="x^2")
    tc.curve("values", "theory", [1, 2, 3], [1, 4, 9], style="theory")
'''


def results_of(pytester) -> dict:
    return load_results(pytester.path / "reports" / "latest" / "results.json")


def test_passing_claim_and_failing_control_give_a_green_run(pytester, claim_file):
    claim_file(PASSING)
    run = pytester.runpytest("-p", "no:cacheprovider")
    run.assert_outcomes(passed=1, xfailed=1)
    res = results_of(pytester)
    (entry,) = res["claims"]
    assert entry["id"] == "toy.thm1.square" and entry["paper"] == "toy"
    assert entry["outcome"] == "passed" and entry["kind"] == "claim"
    (control,) = entry["controls"]
    assert control["outcome"] == "failed_as_expected" and control["name"] == "wrong_square"
    assert control["kind"] == "reference" and control["breaks"] == ["3^2"]
    assert control["failed_conclusions"] == ["3^2"] and control["failed_preconditions"] == []
    assert entry["provenance"] == "stated"
    assert entry["decisions"][0]["role"] == "conclusion"
    assert entry["measurements"] == {"value": 9.0}
    assert entry["decisions"][0]["passed"] is True
    (image,) = entry["images"]
    assert re.fullmatch(r"plots/toy\.thm1\.square--values-[0-9a-f]{12}\.png", image)
    assert (pytester.path / "reports/latest" / image).stat().st_size > 1000
    html = (pytester.path / "reports/latest/report.html").read_text()
    assert "toy.thm1.square" in html and "failed as expected" in html
    md = (pytester.path / "reports/latest/report.md").read_text()
    assert "| `toy.thm1.square` | Theorem 1 | claim | stated | PASS |" in md
    assert "declares it breaks ['3^2']; broke ['3^2']" in md


def test_claim_without_control_is_rejected_at_declaration():
    with pytest.raises(ClaimDeclarationError, match="without a negative control"):
        claim("toy.x.y", source="Lemma 1", statement="s", provenance="stated",
              controls={})(lambda tc: None)


def test_claim_without_control_is_a_collection_error(pytester, claim_file):
    claim_file('''
@claim("toy.x.nocontrol", source="Lemma 1", statement="s", provenance="stated", controls={})
def test_it(tc):
    tc.conclusion.holds("true", True)
''')
    run = pytester.runpytest("-p", "no:cacheprovider")
    assert run.ret != 0
    run.stdout.fnmatch_lines(["*DeclarationError*without a negative control*"])


@pytest.mark.parametrize("kwargs, message", [
    (dict(id="not-dotted"), "must look like"),
    (dict(id="toy.thm.DISCREPANCY_x"), "declared with @discrepancy"),
    (dict(source=""), "non-empty"),
    (dict(controls={"bad name": ANY}), "identifier-like"),
    (dict(sizes={"quick": {}}), "exactly the tiers"),
    (dict(sizes={"quick": {"trials": 3}, "full": {"trials": 5}}), "size 'trials' is a synonym: use 'instances'"),
    (dict(sizes={"quick": {"lr": 0.1}, "full": {"lr": 0.1}}), "size 'lr' is a synonym: use 'eta'"),
    (dict(sizes={"quick": {"n": 2}, "full": {"n": 4, "samples": 9}}),
     r"size 'samples' is a synonym: use 'draws' \(Monte Carlo draws\) or 'n' \(training samples\)"),
    (dict(controls={"c": "a plain description"}), r"is str .*declare it as Control\(kind, breaks="),
    (dict(controls={"c": Control("wrong", breaks=["x"], description="d")}), "kind 'wrong' is not one of"),
    (dict(controls={"c": Control("reference", breaks=[], description="d")}), "non-empty list of conclusion"),
    (dict(controls={"c": Control("reference", breaks=["x"])}), "needs a description"),
    (dict(provenance="guessed"), "provenance 'guessed' is not one of"),
])
def test_bad_declarations_name_the_problem(kwargs, message):
    args = dict(id="toy.a.b", source="Lemma 1", statement="s", provenance="stated",
                controls={"c": ANY})
    args.update(kwargs)
    with pytest.raises(ClaimDeclarationError, match=message):
        claim(args.pop("id"), **args)(lambda tc: None)


def test_discrepancy_needs_the_corrected_claim():
    with pytest.raises(ClaimDeclarationError, match="corrected_by"):
        discrepancy("toy.a.DISCREPANCY_b", source="Thm 1", statement="s", corrected_by="",
                    provenance="stated", controls={"c": ANY})(lambda tc: None)


def test_duplicate_ids_are_rejected():
    def first(tc):
        pass

    def second(tc):
        pass

    claim("toy.dup.once", source="L", statement="s", provenance="stated", controls={"c": ANY})(first)
    with pytest.raises(ClaimDeclarationError, match="already declared"):
        claim("toy.dup.once", source="L", statement="s", provenance="stated",
              controls={"c": ANY})(second)


def test_control_that_passes_fails_the_run(pytester, claim_file):
    claim_file('''
@claim("toy.thm1.lax", source="Theorem 1", statement="9 is close to 9.", provenance="stated",
       controls={"no_perturbation": Control("reference", breaks=["3^2"],
                                            description="changes nothing, so it passes: a defect")})
def test_lax(tc):
    tc.conclusion.close("3^2", 9.0, 9.0, rtol=1e-12)
''')
    run = pytester.runpytest("-p", "no:cacheprovider")
    run.assert_outcomes(passed=1, failed=1)
    assert run.ret == 1
    (entry,) = results_of(pytester)["claims"]
    assert entry["controls"][0]["outcome"] == "passed_unexpectedly"


def test_control_that_crashes_is_an_error_not_an_expected_failure(pytester, claim_file):
    claim_file('''
@claim("toy.thm1.crash", source="Theorem 1", statement="s", provenance="stated",
       controls={"crash": Control("reference", breaks=["fine"],
                                  description="raises ValueError instead of failing a check")})
def test_crash(tc):
    if tc.control:
        raise ValueError("bad input")
    tc.conclusion.holds("fine", True)
''')
    run = pytester.runpytest("-p", "no:cacheprovider")
    assert run.ret == 1
    (entry,) = results_of(pytester)["claims"]
    assert entry["controls"][0]["outcome"] == "error"
    assert entry["controls"][0]["error_kind"] == "error"


def test_wrong_tolerance_fails_the_claim_with_all_numbers(pytester, claim_file):
    claim_file('''
@claim("toy.thm1.tight", source="Theorem 1", statement="pi is 3.14.", provenance="stated",
       controls={"c": Control("reference", breaks=["pi"], description="same")})
def test_tight(tc):
    tc.conclusion.close("pi", 3.14159265, 3.14, rtol=1e-6)
    tc.conclusion.at_most("bound", 1.0, 2.0)
''')
    run = pytester.runpytest("-p", "no:cacheprovider")
    run.assert_outcomes(failed=1, xfailed=1)
    run.stdout.fnmatch_lines(["*1 of 2 checks failed*", "*FAILED*conclusion close pi*",
                              "*ok*conclusion at_most bound*"])
    # the failure section opens with the decisions, not with library source
    section = run.stdout.str().split("_ test_tight[claim] _")[1]
    assert section.lstrip("_ \n").startswith("ClaimFailure: toy.thm1.tight [claim]: 1 of 2 checks failed")
    assert "def conclude" not in section and "(--tb=long shows the traceback)" in section
    (entry,) = results_of(pytester)["claims"]
    assert entry["outcome"] == "failed" and entry["error_kind"] == "failure"
    assert entry["failed_conclusions"] == ["pi"]


def test_claim_that_decides_nothing_is_an_error(pytester, claim_file):
    claim_file('''
@claim("toy.thm1.mute", source="Theorem 1", statement="s", provenance="stated",
       controls={"c": Control("reference", breaks=["x"], description="same")})
def test_mute(tc):
    tc.record("x", 1.0)
''')
    run = pytester.runpytest("-p", "no:cacheprovider")
    assert run.ret == 1
    run.stdout.fnmatch_lines(["*NoDecisionError*recorded no decision*"])
    (entry,) = results_of(pytester)["claims"]
    assert entry["outcome"] == "error" and entry["controls"][0]["outcome"] == "error"
    assert entry["error_kind"] == "declaration"


def test_discrepancy_is_reported_as_refuted_as_written(pytester, claim_file):
    claim_file(PASSING + '''
@discrepancy("toy.thm1.DISCREPANCY_cube", source="Theorem 1", corrected_by="toy.thm1.square",
             statement="As written: 3 squared is 27.", provenance="stated",
             controls={"honest": Control(
                 "statement", breaks=["counterexample: 3*3 differs from the claimed value"],
                 description="a statement that is true has no counterexample")})
def test_cube(tc):
    claimed = 9.0 if tc.control == "honest" else 27.0
    tc.conclusion.holds("counterexample: 3*3 differs from the claimed value", 3.0 * 3.0 != claimed)
''')
    run = pytester.runpytest("-p", "no:cacheprovider")
    run.assert_outcomes(passed=2, xfailed=2)
    res = results_of(pytester)
    kinds = {c["id"]: c["kind"] for c in res["claims"]}
    assert kinds == {"toy.thm1.square": "claim", "toy.thm1.DISCREPANCY_cube": "discrepancy"}
    md = (pytester.path / "reports/latest/report.md").read_text()
    assert "### Refuted as written" in md and "corrected statement: `toy.thm1.square`" in md


def test_k_selection_markers_and_junitxml_keep_working(pytester, claim_file):
    claim_file(PASSING)
    run = pytester.runpytest("-p", "no:cacheprovider", "-m", "control", "--junitxml=j.xml")
    run.assert_outcomes(xfailed=1)
    assert "testcase" in (pytester.path / "j.xml").read_text()
    run = pytester.runpytest("-p", "no:cacheprovider", "-k", "square and not control")
    run.assert_outcomes(passed=1)
    # both runs are partial: each has its run folder, and neither becomes reports/latest
    assert not (pytester.path / "reports/latest").exists()
    folders = sorted((pytester.path / "reports/runs").iterdir())
    assert [f.name.endswith("-quick-seed0-partial") for f in folders] == [True, True]
    results = load_results(folders[-1] / "results.json")
    assert results["partial"] and results["partial_reason"] == "-k square and not control"
    (entry,) = results["claims"]
    assert entry["controls"][0]["outcome"] == "not_run"


def test_xdist_workers_merge_into_one_report(pytester, claim_file):
    body = "".join(PASSING.replace("toy.thm1.square", f"toy.thm1.square{i}")
                   .replace("def test_square", f"def test_square{i}") for i in range(4))
    claim_file(body)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    run.assert_outcomes(passed=4, xfailed=4)
    res = results_of(pytester)
    assert sorted(c["id"] for c in res["claims"]) == [f"toy.thm1.square{i}" for i in range(4)]
    assert all(c["controls"][0]["outcome"] == "failed_as_expected" for c in res["claims"])
    assert res["summary"]["claim_outcomes"]["passed"] == 4


def test_xdist_keeps_a_claim_and_its_controls_on_one_worker(pytester, claim_file):
    body = "import os\n" + "".join(f'''
@claim("toy.thm{i}.worker", source="Theorem {i}", statement="Runs somewhere.", provenance="stated",
       controls={{k: Control("reference", breaks=["control or claim"], description="fails")
                  for k in "abc"}})
def test_worker{i}(tc):
    tc.record("worker", os.environ["PYTEST_XDIST_WORKER"])
    tc.conclusion.holds("control or claim", tc.control is None)
''' for i in range(3))
    claim_file(body)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    run.assert_outcomes(passed=3, xfailed=9)
    used = set()
    for entry in results_of(pytester)["claims"]:
        workers = {entry["measurements"]["worker"]} | {c["measurements"]["worker"] for c in entry["controls"]}
        assert len(workers) == 1, (entry["id"], workers)
        used |= workers
    assert used == {"gw0", "gw1"}  # the claims themselves are still spread over the workers


def test_curves_take_tensors_and_can_be_sorted(pytester, claim_file):
    claim_file('''
import torch

@claim("toy.thm1.scatter", source="Theorem 1", statement="A scatter drawn as a line.",
       provenance="stated",
       controls={"wrong": Control("reference", breaks=["one"], description="compare against 2")})
def test_scatter(tc):
    x = torch.tensor([3.0, 1.0, 2.0], dtype=torch.float64)
    tc.curve("scatter", "points", x, 2 * x, sort_x=True)
    tc.conclusion.close("one", 1.0, 2.0 if tc.control else 1.0, rtol=1e-12)
''')
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, xfailed=1)
    (entry,) = results_of(pytester)["claims"]
    (curve,) = entry["plots"][0]["curves"]
    assert curve["x"] == [1.0, 2.0, 3.0] and curve["y"] == [2.0, 4.0, 6.0]


def test_sizes_seeds_and_tier_reach_the_claim(pytester, claim_file):
    claim_file('''
import numpy as np

@claim("toy.sizes.tiers", source="L", statement="s", provenance="stated",
       controls={"c": Control("reference", breaks=["n matches tier"], description="wrong")},
       sizes={"quick": {"n": 3}, "full": {"n": 30}})
def test_sizes(tc):
    tc.record("n", tc.sizes["n"])
    tc.record("draw", tc.rng("data").standard_normal())
    tc.record("tier", tc.tier)
    tc.conclusion.holds("n matches tier", tc.sizes["n"] == (3 if tc.tier == "quick" else 30)
                        and tc.control is None)
''')
    pytester.runpytest("-p", "no:cacheprovider", "--tc-tier", "full", "--tc-seed", "7")
    entry = results_of(pytester)["claims"][0]
    first = entry["measurements"]
    assert first["n"] == 30 and first["tier"] == "full"
    from theorycheck.runtime import derive_seed

    seed = derive_seed(7, "toy.sizes.tiers", "data")
    assert entry["sizes"] == {"n": 30} and entry["seeds"] == {"data": seed}
    assert entry["controls"][0]["sizes"] == {"n": 30} and entry["controls"][0]["seeds"] == {"data": seed}
    import numpy as np

    assert first["draw"] == np.random.default_rng(seed).standard_normal()  # rerun from the record
    pytester.runpytest("-p", "no:cacheprovider", "--tc-tier", "full", "--tc-seed", "7")
    assert results_of(pytester)["claims"][0]["measurements"]["draw"] == first["draw"]
    pytester.runpytest("-p", "no:cacheprovider", "--tc-seed", "8")
    again = results_of(pytester)["claims"][0]["measurements"]
    assert again["n"] == 3 and again["draw"] != first["draw"]


@pytest.mark.parametrize("option, message", [
    (["--tc-tier", "huge"], "unknown tier 'huge'"),
    (["--tc-device", "tpu"], "unknown device 'tpu'"),
    (["--tc-dtype", "float16"], "unknown dtype 'float16'"),
    (["--tc-teir", "full"], "unknown option --tc-teir; did you mean --tc-tier?"),
    (["--tc-no-reports"], "unknown option --tc-no-reports; did you mean --tc-no-report?"),
])
def test_unknown_options_are_usage_errors(pytester, claim_file, option, message):
    claim_file(PASSING)
    run = pytester.runpytest("-p", "no:cacheprovider", *option)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    run.stderr.fnmatch_lines([f"*{message}*"])


def test_the_suggestion_list_is_the_plugins_own_options(pytestconfig):
    from theorycheck.plugin import OPTIONS

    group = next(g for g in pytestconfig._parser._groups if g.name == "theorycheck")
    assert sorted(OPTIONS) == sorted(name for option in group.options for name in option.names())


def test_cuda_without_a_gpu_is_a_usage_error(pytester, claim_file):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    claim_file(PASSING)
    run = pytester.runpytest("-p", "no:cacheprovider", "--tc-device", "cuda")
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    run.stderr.fnmatch_lines(["*torch.cuda.is_available() is False*"])


def test_results_json_has_the_documented_shape(pytester, claim_file):
    claim_file(PASSING)
    pytester.runpytest("-p", "no:cacheprovider")
    raw = json.loads((pytester.path / "reports/latest/results.json").read_text())
    for key in ("schema_version", "tier", "device", "seed", "started", "theorycheck_version",
                "papers", "claims"):
        assert key in raw
    assert raw["papers"] == {"toy": None}  # no claims/toy/__init__.py declared the paper
    entry = raw["claims"][0]
    for key in ("id", "paper", "source", "kind", "statement", "provenance", "outcome",
                "error_kind", "duration_s", "sizes", "seeds", "measurements", "decisions",
                "failed_conclusions", "failed_preconditions", "controls"):
        assert key in entry
    assert set(entry["controls"][0]) >= {"name", "outcome", "kind", "breaks",
                                         "failed_conclusions", "failed_preconditions",
                                         "error_kind", "sizes", "seeds"}
    assert all(d["role"] in ("precondition", "conclusion") for d in entry["decisions"])


def test_schema_rejects_a_malformed_results_file(tmp_path):
    from theorycheck.report import validate_results

    case = {"error_kind": None, "sizes": {}, "seeds": {}, "decisions": [], "failed_conclusions": [],
            "failed_preconditions": []}
    control = dict(case, name="c", description="d", kind="reference", breaks=["x"],
                   outcome="not_run")
    with pytest.raises(ValueError, match="does not fit the schema at claims/0/outcome"):
        validate_results({"schema_version": 5, "tier": "quick", "device": "cpu", "seed": 0,
                          "started": "x", "theorycheck_version": "0", "papers": {},
                          "summary": {"claims": 1, "controls": 1, "claim_outcomes": {},
                                      "control_outcomes": {}},
                          "claims": [dict(case, id="a.b.c", paper="a", source="s", kind="claim",
                                          statement="s", provenance="stated", outcome="great",
                                          duration_s=0, measurements={}, controls=[control])]})


def test_registered_paper_is_cited_in_results_and_report(pytester):
    pytester.mkpydir("claims")
    (pytester.path / "claims/toy").mkdir()
    (pytester.path / "claims/toy/__init__.py").write_text(
        'from theorycheck import paper\n'
        'paper("toy", authors="A. Author, B. Author", title="A Toy Theorem", arxiv="2401.00001",\n'
        '      year=2024, expected_ids=["thm1.square"])\n')
    (pytester.path / "claims/toy/test_toy.py").write_text(
        "from theorycheck import Control, claim\n" + PASSING)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "claims").assert_outcomes(passed=1,
                                                                                     xfailed=1)
    results = results_of(pytester)
    citation = 'A. Author, B. Author, "A Toy Theorem", arXiv 2401.00001, 2024.'
    assert results["papers"]["toy"]["citation"] == citation
    assert results["papers"]["toy"]["expected_ids"] == ["thm1.square"]
    assert citation in (pytester.path / "reports/latest/report.md").read_text()


@pytest.mark.parametrize("kwargs, message", [
    (dict(key="Toy"), "lower-case letters and digits"),
    (dict(arxiv="arXiv:2401.1"), "not an arXiv id"),
    (dict(expected_ids=[]), "non-empty list"),
    (dict(expected_ids=["toy.thm1.square"]), "without the paper key"),
    (dict(expected_ids=["thm1.a", "thm1.a"]), "lists an id twice"),
])
def test_bad_paper_declarations_name_the_problem(kwargs, message):
    from theorycheck import DeclarationError, paper

    args = dict(key="toy", authors="A. Author", title="T", arxiv="2401.00001",
                expected_ids=["thm1.square"])
    args.update(kwargs)
    with pytest.raises(DeclarationError, match=message):
        paper(args.pop("key"), **args)


def test_conformance_rules_name_each_violation():
    from theorycheck.claim import ClaimSpec
    from theorycheck.conformance import claim_problems, paper_problems
    from theorycheck.papers import Paper

    spec = ClaimSpec(id="other.thm1.x", paper="other", source="Theorem 1", statement="s",
                     provenance="stated", doc="too short", sizes={"quick": {}},
                     controls={"c": Control("reference", breaks=["x"], description="d")})
    problems = "\n".join(claim_problems(spec, {spec.id: spec}, papers={}))
    for expected in ("docstring (9 characters)", "paper 'other' is not registered",
                     "sizes must give the tiers"):
        assert expected in problems
    toy = Paper(key="other", authors="A", title="T", arxiv="2401.00001",
                expected_ids=("thm1.x", "thm2.y"))
    assert paper_problems(toy, {spec.id: spec}) == ["other: claims not encoded yet: ['thm2.y']"]


def test_a_claim_skips_under_a_dtype_it_is_not_written_for(pytester, claim_file):
    claim_file(PASSING + PASSING.replace("toy.thm1.square", "toy.thm1.square32")
               .replace("def test_square", "def test_square32")
               .replace('provenance="stated",', 'provenance="stated", dtypes=("float64", "float32"),'))
    run = pytester.runpytest("-p", "no:cacheprovider", "--tc-dtype", "float32", "-rs")
    run.assert_outcomes(passed=1, xfailed=1, skipped=2)
    run.stdout.fnmatch_lines(["*toy.thm1.square is written for float64*not --tc-dtype float32*"])


def test_constants_are_read_through_tc_with_the_controls_laid_over(pytester, claim_file):
    claim_file('''
@claim("toy.consts.read", source="L", statement="The square of p is below the bound.",
       provenance="stated", constants={"p": 2.0, "bound": 5.0},
       controls={"big_p": Control("statement", breaks=["p^2 below the bound"],
                                  description="p = 3", constants={"p": 3.0})})
def test_consts(tc):
    tc.record("p", tc.constants["p"])
    tc.record("declared", sorted(tc.constants))
    tc.conclusion.at_most("p^2 below the bound", tc.constants["p"] ** 2, tc.constants["bound"])
''')
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, xfailed=1)
    entry = results_of(pytester)["claims"][0]
    assert entry["measurements"] == {"p": 2.0, "declared": ["bound", "p"]}
    (control,) = entry["controls"]
    assert control["measurements"]["p"] == 3.0 and control["outcome"] == "failed_as_expected"


def test_an_undeclared_constant_names_the_declared_ones(pytester, claim_file):
    claim_file('''
@claim("toy.consts.missing", source="L", statement="s", provenance="stated",
       constants={"p": 2.0}, controls={"c": Control("reference", breaks=["x"], description="d")})
def test_missing(tc):
    tc.conclusion.holds("x", tc.constants["q"] > 0)
''')
    run = pytester.runpytest("-p", "no:cacheprovider")
    assert "declares no constant 'q' (declared: ['p'])" in run.stdout.str()
