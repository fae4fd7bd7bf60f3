"""The results.json layout is published: the JSON Schema ships with the package, `theorycheck
schema` prints it, docs/results-schema.md is generated from it and up to date, and a fresh
run's results.json fits it."""
import json
from pathlib import Path

import jsonschema

from theorycheck.cli import main
from theorycheck.report.schema_doc import load_schema, schema_markdown, type_of

DOC = Path(__file__).resolve().parents[1] / "docs" / "results-schema.md"


def test_the_docs_page_is_the_schema_rendered():
    assert DOC.read_text() == schema_markdown(), (
        "docs/results-schema.md is stale: regenerate it with `theorycheck schema --markdown > "
        "docs/results-schema.md`")


def test_every_field_of_the_page_has_a_meaning():
    blank = [line for line in schema_markdown().splitlines()
             if line.startswith("| `") and line.rstrip().endswith("|  |")]
    assert blank == [], f"fields without a description in schema.json: {blank[:5]}"


def test_the_command_prints_the_schema_and_the_page(capsys):
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == load_schema()
    assert main(["schema", "--markdown"]) == 0
    assert capsys.readouterr().out == schema_markdown()


def test_types_read_as_a_person_would_write_them():
    assert type_of({"type": ["string", "null"]}) == "string or null"
    assert type_of({"enum": ["quick", "full"]}) == 'one of "quick", "full"'
    assert type_of({"type": "array", "items": {"$ref": "#/$defs/decision"}}) == "array of decision"
    assert type_of({"type": "object", "additionalProperties": {"type": "number"}}) == "map to number"


def test_a_fresh_runs_results_fit_the_published_schema(pytester, claim_file):
    claim_file('''
@claim("toy.schema.fits", source="L", statement="2 + 2 is 4.", provenance="stated",
       constants={"four": 4.0},
       controls={"five": Control("reference", breaks=["sum"], description="compare with 5",
                                 constants={"four": 5.0})})
def test_fits(tc):
    tc.record("sum", 2.0 + 2.0)
    tc.conclusion.close("sum", 2.0 + 2.0, tc.constants["four"], rtol=1e-12)
''')
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1, xfailed=1)
    results = json.loads((pytester.path / "reports" / "latest" / "results.json").read_text())
    jsonschema.validate(results, load_schema())
