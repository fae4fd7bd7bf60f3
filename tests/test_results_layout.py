"""theorycheck.results_layout: the one owner of the results.json layout -- case and unit ids as
pytest names them, map records among the measurements, and the readers."""
import json

import pytest

from theorycheck.files import BadFileError
from theorycheck.errors import InvalidInputError
from theorycheck.results_layout import (CLAIM_VARIANT, MAP_PREFIX, RESULTS_FILE, cases_of, claim_unit,
                                        load_results, map_names, map_records, read_results,
                                        shared_runs_of, unit_of, variant_id)


def test_variant_ids_are_the_parametrization_ids_of_a_claims_cases(pytester):
    pytester.makepyfile(test_ids='''
from theorycheck import Control, claim


@claim("toy.ids.one", source="L", statement="1 is 1.", provenance="stated", single_evidence="a toy",
       controls={"two": Control("reference", breaks=["one"], description="compare with 2")})
def test_one(tc):
    tc.conclusion.close("one", 1.0, 2.0 if tc.control == "two" else 1.0)
''')
    result = pytester.runpytest("--collect-only", "-q", "--tc-no-report", "-p", "no:cacheprovider")
    ids = sorted(line.split("[", 1)[1].rstrip("]") for line in result.outlines if "::test_one[" in line)
    assert ids == sorted([variant_id(None), variant_id("two")]) == ["claim", "control-two"]
    assert variant_id(None) == CLAIM_VARIANT


def test_units_of_node_ids_and_of_results_entries_agree():
    """A results entry's unit is the node id of its function, as the shard plan sees it; a
    method's class is a node id part."""
    assert unit_of("claims/x/test_a.py::test_f[control-c]") == "claims/x/test_a.py::test_f"
    assert claim_unit({"module": "claims.x.test_a", "function": "test_f"}) == "claims/x/test_a.py::test_f"
    assert claim_unit({"module": "claims.x.test_a", "function": "TestA.test_f"}) == \
        unit_of("claims/x/test_a.py::TestA::test_f[claim]")
    assert claim_unit({"module": "claims.x.test_a"}) is None


def test_cases_shared_runs_and_maps_of_an_entry():
    claim = {"shared_runs": [{"key": "a"}], "measurements": {MAP_PREFIX + "m": {"map": "rate"},
                                                             MAP_PREFIX + "stub": {}, "x": 1},
             "controls": [{"name": "c", "shared_runs": [{"key": "b"}]}]}
    assert [case.get("name") for case in cases_of(claim)] == [None, "c"]
    assert [u["key"] for u in shared_runs_of(claim)] == ["a", "b"]
    assert map_names(claim) == ["m", "stub"]                  # the listing names every map key
    assert [name for name, _ in map_records(claim)] == ["m"]  # the report draws the records


def test_readers_name_the_file_and_the_problem(tmp_path):
    with pytest.raises(BadFileError, match="no such file"):
        load_results(tmp_path / RESULTS_FILE)
    (tmp_path / RESULTS_FILE).write_text(json.dumps({"claims": {}}))
    with pytest.raises(BadFileError, match="not a results document"):
        read_results(tmp_path)                                # a run folder names its file
    with pytest.raises(InvalidInputError, match="does not fit the schema"):
        load_results(tmp_path)
    (tmp_path / RESULTS_FILE).write_text(json.dumps({"claims": []}))
    assert read_results(tmp_path) == {"claims": []}
