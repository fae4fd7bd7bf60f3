"""glls24: J. Gu, C. Li, Y. Liang, Z. Shi, Z. Song, "Exploring the Frontiers of Softmax: Provable
Optimization, Applications in Diffusion Model, and Beyond", arXiv 2405.03251, 2024."""
from theorycheck import paper

paper(
    "glls24",
    authors="J. Gu, C. Li, Y. Liang, Z. Shi, Z. Song",
    title="Exploring the Frontiers of Softmax: Provable Optimization, Applications in Diffusion "
          "Model, and Beyond",
    arxiv="2405.03251",
    year=2024,
    note="reconstructed from a copy that lost almost every formula; the constants e^{10B}, "
         "e^{16B}, e^{18B}, the log powers of Table 1 and the final bound of Theorem 6.6 could "
         "not be recovered and are tested as shapes",
    expected_ids=[
        "eq2.gradient_closed_form", "def3_6.kernel_is_scaled_jacobian_gram",
        "def3_7.symmetric_init_zero_output", "def3_6.infinite_width_limit",
        "gd.one_step_kernel_dynamics", "lemB_1.softmax_perturbation_bounds", "lem5_3.kernel_drift_map_m",
        "lem5_1.kernel_perturbation", "lemD_1.gradient_bound", "lem5_3.induction",
        "thm4_2.linear_convergence", "thm4_2.lazy_regime_scaling", "cor4_3.one_dim",
        "thmF_2.nn_ntk_equivalence", "table1.activation_comparison", "sec6.dsm_identity",
        "claimG_1.loss_decomposition", "thm6_6.score_estimation", "factsA.elementary_inequalities",
    ],
)
