"""anon20: anonymous authors, "Understanding Attention Mechanisms", ICLR 2020 submission
(OpenReview blind submission, not accepted; revised for ICLR 2021 as "Analyzing Attention
Mechanisms through Lens of Sample Complexity and Loss Landscape")."""
from theorycheck import paper

ENCODED = [
    "model.attention_equals_rowscaled_baseline", "model.gradient_formulas", "model.param_counts",
    "lemma.attended_input_norms", "thm1.bound_algebra", "thm2.selfattention_shapes_and_count",
    "table1.sample_complexity_ordering", "table1.DISCREPANCY_threshold_007",
    "thm3.montufar_lower_bound_with_bias", "thm3.exact_max_regions", "thm3.DISCREPANCY_bias_free",
    "thm3.DISCREPANCY_lower_bound_comparison", "fig1.region_curves",
    "thm4a.relu_scale_invariance", "thm4a.DISCREPANCY_softplus", "thm4a.jacobian_determinant",
    "thm4a.hessian_congruence_and_blowup", "thm4b.selfattention_scale_invariance",
    "thm4b.extra_symmetries", "sec53.DISCREPANCY_hessian_flatness_comparison",
    "thm5a.gradient_certificate", "thm5a.wide_training_interpolates",
    "thm5a.DISCREPANCY_rank_at_point", "appC4.DISCREPANCY_preactivation_rank",
    "thm5b.selfattention_interpolation",
    "thm7.DISCREPANCY_missing_gamma",
    # the corrected statement of Theorem 7 (no id of its own in the reconstruction's index)
    "thm7.sample_bound_gamma_exponent",
    "thm1.rate_stationary_near_truth", "thm1.s0_scaling_bound_not_tight",
    "prop1.known_mask", "fig7.regression_convergence",
    "thm6.param_count", "table2.selfattention_surrogate", "table2.advantage_map_n",
    "fig2.noisy_convergence",
]
#: ids of the reconstruction's index not encoded as claims of their own:
#: - table1.reported_values: merged into table1.sample_complexity_ordering (review of
#:   2026-11-26): the parameter counts are rebuilt in model.param_counts, the ordering at our n
#:   is decided by the ordering claim, and the printed magnitudes (lost setting) are recorded
#:   there beside ours as a finding; a claim of its own re-decided the same runs, and facts
#:   derived from the typed-in table checked against the same table test nothing;
#: - table2.reported_values: Table 2's accuracies need IMDB and GloVe-100, which no reachable
#:   registry ships (only 50-d GloVe vectors are packaged), and the text makes no quantitative
#:   statement about them to compare with (cited in docs/claims/anon20.md; see
#:   table2.selfattention_surrogate)
PENDING = [
    "table1.reported_values",
    "table2.reported_values",
]

paper(
    "anon20",
    authors="Anonymous",
    title="Understanding Attention Mechanisms",
    venue="ICLR 2020 submission (OpenReview, anonymous)",
    year=2020,
    note="no arXiv id; the copy lost most formulas, which were reconstructed; "
         "thm7.sample_bound_gamma_exponent is the "
         "corrected statement of Theorem 7 (no id in the reconstruction's index)",
    expected_ids=ENCODED + PENDING,
    pending=PENDING,
)
