"""The vocabulary of size names (theorycheck.sizes): one canonical word per concept, the
synonyms rejected at declaration."""
import pytest

from theorycheck.errors import DeclarationError
from theorycheck.sizes import SYNONYMS, VOCABULARY, check_size_names, synonym_problems


def test_each_word_is_one_concept_and_no_synonym_is_canonical():
    names = [entry.name for entry in VOCABULARY]
    synonyms = [s for entry in VOCABULARY for s in entry.synonyms]
    assert len(set(names)) == len(names) and len(set(synonyms)) == len(synonyms)
    assert not set(names) & set(synonyms)
    assert all(entry.meaning and entry.synonyms for entry in VOCABULARY)


@pytest.mark.parametrize("synonym", sorted(SYNONYMS))
def test_every_synonym_is_rejected_naming_the_canonical_word(synonym):
    with pytest.raises(DeclarationError, match=f"size {synonym!r} is a synonym: use .*'{SYNONYMS[synonym]}'"):
        check_size_names({"quick": {synonym: 1}, "full": {synonym: 2}}, "claim 'toy.a.b'")


def test_canonical_qualified_and_paper_names_pass():
    check_size_names({"quick": {"instances": 3, "small_step_instances": 2, "ns": [4, 8], "n_map": [1],
                                "s0": 2, "dq": 3, "m": 4, "t": 8, "T": 4, "eta": 0.1, "etas": [0.1]},
                      "full": {}}, "claim 'toy.a.b'")
    assert synonym_problems(["steps", "width", "draws", "n_test"]) == []

