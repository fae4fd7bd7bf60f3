"""Reference solvers: certified hard-margin programs (cvxpy) and their closed forms; NTK limits and
kernel gradient descent; scores of Gaussian mixtures under an Ornstein-Uhlenbeck process."""

from theorycheck.solvers.margin import (
    CERTIFICATE_TOL,
    INFEASIBILITY_TOL,
    InfeasibleProgramError,
    MarginCertificate,
    MarginSolution,
    SolverAccuracyError,
    certify,
    clear_cache,
    combine_constraints,
    constraint_values,
    gram_kernel,
    hull_distance,
    solve_margin_program,
)
from theorycheck.solvers.ntk import (
    LIMIT_KERNELS,
    exp_limit_kernel,
    kernel_gd_predictions,
    output_kernel,
    relu_limit_kernel,
    softmax_limit_kernel,
    spectral_filter,
)
from theorycheck.solvers.score import gaussian_mixture_score, ou_coefficients
from theorycheck.solvers.svm import (
    USVMSolution,
    solve_usvm,
    solve_usvm_batch,
    solve_wsvm,
    solve_wsvm_batch,
    wsvm_constraint_factors,
    wsvm_orthonormal_closed_form,
)

__all__ = [
    "CERTIFICATE_TOL",
    "INFEASIBILITY_TOL",
    "InfeasibleProgramError",
    "MarginCertificate",
    "MarginSolution",
    "SolverAccuracyError",
    "USVMSolution",
    "certify",
    "clear_cache",
    "combine_constraints",
    "constraint_values",
    "gram_kernel",
    "hull_distance",
    "solve_margin_program",
    "solve_usvm",
    "solve_usvm_batch",
    "solve_wsvm",
    "solve_wsvm_batch",
    "wsvm_constraint_factors",
    "wsvm_orthonormal_closed_form",
    "LIMIT_KERNELS",
    "exp_limit_kernel",
    "kernel_gd_predictions",
    "output_kernel",
    "relu_limit_kernel",
    "softmax_limit_kernel",
    "spectral_filter",
    "gaussian_mixture_score",
    "ou_coefficients",
]
