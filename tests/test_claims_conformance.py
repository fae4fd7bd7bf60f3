"""Conformance of every registered claim (the benchopt lesson): each claim module under
claims/ is imported and every claim it declares is checked for what the framework
promises a reader -- identity, a stated source and statement, the math in its docstring,
negative controls, sizes for both tiers -- and each encoded paper for completeness."""
import importlib
from pathlib import Path

import pytest

from theorycheck.claim import ID_PATTERN, registry

ROOT = Path(__file__).resolve().parents[1]
CLAIM_MODULES = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "claims").rglob("test_*.py"))

#: every claim id of each encoded paper (from the claim index of its specification)
EXPECTED_IDS = {
    "vdt24": [
        "def.wsvm_reference", "prop.grad_identity_and_stationarity", "lem4.small_init_near_uniform",
        "lem5.opt_softmax_nondecreasing", "lem6.grad_correlates_with_wmm", "lem7.ngd_norm_growth",
        "lem2.gradient_cone_condition", "thm1.ngd_global_direction_rate",
        "lem1.softmax_saturation_rate", "thm6.gd_global_asymptotic", "thm7.polyak_direction_rate",
        "lem8.example1_assumptions", "rem1.local_directions_without_assumptions",
        "def.usvm_reference", "lem11.dm_near_orthogonal", "lem12.joint_norm_growth",
        "lem13.joint_invariants", "lem14.attended_features_separable",
        "lem3.loss_landscape_properties", "thm2.joint_loss_rate", "thm3.joint_W_direction_rate",
        "thm4.u_margin_rate", "fig2.fixed_decoder_optimizer_ordering", "fig5.antipodal_ordering",
        "fig3.joint_optimizer_ordering",
    ],
}


def _load_all():
    for name in CLAIM_MODULES:
        importlib.import_module(name)
    return {cid: spec for cid, spec in registry.items() if spec.module.startswith("claims.")}


CLAIMS = _load_all()


def test_claim_modules_exist():
    assert CLAIM_MODULES and CLAIMS


@pytest.mark.parametrize("claim_id", sorted(CLAIMS))
def test_claim_is_complete(claim_id):
    spec = CLAIMS[claim_id]
    assert ID_PATTERN.match(spec.id) and spec.paper == spec.id.split(".")[0]
    assert spec.source.strip() and spec.statement.strip()
    assert len(spec.doc) >= 200, "the docstring must state the math and the pass criterion"
    assert spec.controls and all(d.strip() for d in spec.controls.values())
    assert set(spec.sizes) == {"quick", "full"}, "sizes for both tiers"
    if spec.kind == "discrepancy":
        assert spec.corrected_by in CLAIMS, "a discrepancy names an existing corrected claim"


@pytest.mark.parametrize("paper", sorted(EXPECTED_IDS))
def test_every_claim_of_an_encoded_paper_is_there(paper):
    encoded = {cid.split(".", 1)[1] for cid in CLAIMS if cid.startswith(paper + ".")}
    missing = [i for i in EXPECTED_IDS[paper] if i not in encoded]
    assert not missing, f"{paper}: claims not encoded yet: {missing}"
