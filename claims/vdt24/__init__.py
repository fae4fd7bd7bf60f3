"""vdt24: B. Vasudeva, P. Deora, C. Thrampoulidis, "Implicit Bias and Fast Convergence Rates
for Self-attention", arXiv 2402.05738, 2024.

Layout: the claims are the ``test_*.py`` modules; the rest is the paper's set-up --
``setup`` (data generators and the paper's assumptions on the data), ``problems`` (data sets
with their SVM references and initializations, sizes, Condition 1's parameters), and the
shared runs of the fixed-decoder claims (``fixed_decoder``), the joint-training claims
(``joint``; Lemma 13's batches: ``lemma13``) and the figures (``figures``).  Everything that is
not specific to this paper is in the library (`theorycheck.models.score_coordinates`,
`theorycheck.comparison`, `theorycheck.patterns.per_instance`, ...)."""
from theorycheck import paper

paper(
    "vdt24",
    authors="B. Vasudeva, P. Deora, C. Thrampoulidis",
    title="Implicit Bias and Fast Convergence Rates for Self-attention",
    arxiv="2402.05738",
    year=2024,
    note="reconstructed from a copy that lost almost every formula; constants of the "
         "appendix theorems could not be recovered",
    expected_ids=[
        "def.wsvm_reference", "prop.grad_identity_and_stationarity", "lem4.small_init_near_uniform",
        "lem5.opt_softmax_nondecreasing", "lem6.grad_correlates_with_wmm", "lem7.ngd_norm_growth",
        "lem2.gradient_cone_condition", "thm1.ngd_global_direction_rate",
        "lem1.softmax_saturation_rate", "thm6.gd_global_asymptotic", "thm7.polyak_direction_rate",
        "lem8.example1_assumptions", "rem1.local_directions_without_assumptions",
        "def.usvm_reference", "lem11.dm_near_orthogonal", "lem12.joint_norm_growth",
        "lem13.joint_invariants", "lem13.success_map_d_over_n", "cond1.base_case_needs_n_log_n",
        "lem14.attended_features_separable",
        "lem3.loss_landscape_properties", "thm2.joint_loss_rate", "thm3.joint_W_direction_rate",
        "thm4.u_margin_rate", "fig2.fixed_decoder_optimizer_ordering", "fig5.antipodal_ordering",
        "fig3.joint_optimizer_ordering",
    ],
)
