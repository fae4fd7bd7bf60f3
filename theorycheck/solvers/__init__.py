"""Reference solvers: certified hard-margin programs (cvxpy) and their closed forms."""

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
]
