"""jta24: A. K. Julistiono, D. A. Tarzanagh, N. Azizan, "Optimizing Attention with Mirror Descent:
Generalized Max-Margin Token Selection", arXiv 2410.14581, 2024.

Layout: the claims are the ``test_*.py`` modules; the rest is the paper's set-up -- ``setup``
(the synthetic instances, sizes and the l_p-AttSVM certificates), ``properties`` (the inputs of
the property claims), and by topic the shared runs with the helpers the claims read them with:
``direction`` (normalized l_p-AttGD for every p), ``cone`` (Lemmas 19-20), ``local`` (restarts
of the local theorem, the radius map), ``plain_descent`` (plain l_p-AttGD: per-step lemmas, norm
growth, dual progress), ``joint`` (joint training), ``regpath`` (the regularization path) and
``sparsity``."""
from theorycheck import paper

EXPECTED = [
    "alg.p2_is_gd", "svm.certificate", "svm.p2_is_frobenius", "thm.regpath_global",
    "thm.lp_direction", "thm.lp_direction_local", "thm.rate", "lem4.norm_increment", "thm.joint",
    "lem12.lp_vs_l2", "lem13.bregman_lower_bounds", "lem14.power_ratio", "lem15.power_mvt",
    "lem16.loss_bounds", "lem17.gradient", "lem18.gradient_bound", "lem19.cone_margins",
    "lem20.gradient_correlation", "lem21.gradient_alignment", "lem22.norm_monotone",
    "lem23.md_identities", "lem24.descent", "lem26.three_point", "lem27.dual_progress",
    "lem28.cone_invariance", "lem29.rate_in_norm", "lem30.norm_growth",
    "exp.synthetic_bregman_curves", "exp.sparsity_vs_p", "exp.joint_token_choice",
    "exp.synthetic_bregman_curves_authors_setting", "thm.lp_direction_local_map_radius",
]
ENCODED = ["alg.p2_is_gd", "svm.certificate", "svm.p2_is_frobenius", "thm.lp_direction", "thm.rate",
           "exp.synthetic_bregman_curves", "lem12.lp_vs_l2", "lem13.bregman_lower_bounds",
           "lem14.power_ratio", "lem15.power_mvt", "lem26.three_point", "lem16.loss_bounds",
           "lem17.gradient", "lem18.gradient_bound", "lem23.md_identities", "lem4.norm_increment",
           "lem22.norm_monotone", "lem24.descent", "exp.sparsity_vs_p", "thm.lp_direction_local",
           "lem28.cone_invariance", "lem30.norm_growth",
           "lem20.gradient_correlation", "thm.joint", "exp.joint_token_choice",
           "lem19.cone_margins", "lem21.gradient_alignment", "lem27.dual_progress",
           "lem29.rate_in_norm", "thm.regpath_global", "exp.synthetic_bregman_curves_authors_setting",
           "thm.lp_direction_local_map_radius"]

paper(
    "jta24",
    authors="A. K. Julistiono, D. A. Tarzanagh, N. Azizan",
    title="Optimizing Attention with Mirror Descent: Generalized Max-Margin Token Selection",
    arxiv="2410.14581",
    year=2024,
    note="only appendix Lemmas 12-30 survive in the copy (formulas stripped); the setting, the "
         "main-body theorems and the experiments are reconstructed; Lemma 25's statement is lost",
    expected_ids=EXPECTED,
    pending=[i for i in EXPECTED if i not in ENCODED],
)
