r"""Linear classifiers on separable data: the base case of the implicit-bias family.

Data x_i in R^d with labels y_i in {-1, +1}, i = 1..n, a linear predictor and a margin loss:

    prediction   f(x)  = <w, x>  (+ b with a bias)
    margin       m_i   = y_i f(x_i)
    loss         L     = (1/n) sum_i l(m_i),

with l one of `LINEAR_LOSSES`:

    "logistic"     l(m) = log(1 + exp(-m)),   |l'(m)| = sigma(-m) = 1/(1 + e^m)
    "exponential"  l(m) = exp(-m),            |l'(m)| = exp(-m)
    "squared"      l(m) = (1 - m)^2 / 2,      l'(m) = m - 1         (least squares on y: y_i^2 = 1)

On separable data the logistic and exponential losses have infimum 0, approached only as
||w|| -> inf: gradient descent converges in direction to the L2 hard-margin SVM (Soudry,
Hoffer, Nacson, Gunasekar, Srebro 2018, "The implicit bias of gradient descent on separable
data", JMLR 19, arXiv 1710.10345), at rate 1/log t in direction, and l_p mirror descent to the
l_p one (Sun, Ahn, Thrampoulidis, Azizan 2022, arXiv 2205.12808).  The references are
`theorycheck.solvers.solve_hard_margin_svm` and `theorycheck.solvers.solve_lp_hard_margin_svm`.
The squared loss has a finite minimizer (least squares) and is the control case: its limit
is not the SVM.

Numerics.  With s_i = -m_i = <a_i, theta> for the signed data a_i = -y_i x_i (kept once),
the gradient is

    grad L = (1/n) sum_i |l'(m_i)| a_i,   log|l'(m_i)| = s_i (exponential),  log sigma(s_i) (logistic),

formed in the log domain: |l'(m_i)| = exp(c) w_i with weights w_i of order one
(`theorycheck.models.base.rescale` for the exponential loss, `logistic_weights` for the logistic
one), M = c - log n and G = sum_i w_i a_i, so the direction G is exact when every |l'(m_i)|
lies far below the float range (margins 1e3 and beyond), where the plainly written gradient is 0.
log L is a logsumexp of log l(m_i) (log l = -m for the exponential loss, the exact log form
`token_selection.log_logistic` for the logistic one).  The step costs two matrix-vector products per trial,
an exponential and a reciprocal per sample: no pass over the gradient beyond forming it.

With a bias the features are augmented, x -> (x, 1), and the blocks are ("w", "b") with b of
shape (K, 1); every formula above holds for theta = (w, b).

Shapes: X (K, n, d), y (K, n), w (K, d), b (K, 1); trials are independent problems computed
together.  float64 throughout (the dtype of X).
"""
from __future__ import annotations

import math

import torch

from theorycheck.errors import DeclarationError, InvalidInputError
from theorycheck.models.base import Instance, Model, Scaled, register_model, rescale, scaled
from theorycheck.models.token_selection import log_logistic

__all__ = ["LinearClassifier", "LINEAR_LOSSES", "logistic_weights", "separable_data"]

#: the losses of a margin m: "logistic" log(1 + e^-m), "exponential" e^-m, "squared" (1 - m)^2 / 2
LINEAR_LOSSES = ("logistic", "exponential", "squared")


def logistic_weights(s: torch.Tensor, dim=-1):
    r"""(c, w) with sigma(s_i) = exp(c) w_i along ``dim`` (c kept as size 1) and max w in [1/2, 1],
    exact for every s: the logistic loss's slopes |l'(m_i)| = sigma(-m_i) in the log domain.

    With c = min(max_i s_i, 0),

        exp(c) / (exp(c) + exp(c - s_i)) = 1 / (1 + exp(-s_i)) = sigma(s_i),

    so w_i = 1 / (exp(c - s_i) + exp(c)): exp(c) <= 1 never overflows, the largest weight is
    1 / (1 + exp(c)) >= 1/2 (c = max s <= 0) or sigma(max s) > 1/2 (c = 0), and a weight whose
    exp(c - s_i) overflows is 0 where its true value is below exp(-709) of the largest.  Deep in
    saturation (every s_i -> -inf) w_i = exp(s_i - c) to rounding, exact where sigma(s_i) itself
    is 0.  One exponential and one reciprocal per sample, no logarithm (log1p and log-sigmoid are
    several times slower than exp on the CPU), each in place on the difference's tensor."""
    c = s.amax(dim, keepdim=True).clamp_max(0.0)
    return c, torch.reciprocal_(torch.sub(c, s).exp_() + torch.exp(c))


class LinearClassifier(Model):
    r"""A linear classifier f(x) = <w, x> (+ b) on the model protocol (module docstring).

    Parameters
    ----------
    X : torch.Tensor
        Features, (K, n, d).
    y : torch.Tensor
        Labels in {-1, +1}, (K, n).
    loss : str
        "logistic" (default), "exponential" or "squared"; another name raises DeclarationError.
    bias : bool
        Whether the predictor has a bias b (a second block "b" of shape (K, 1)).

    ``infimum``: 0 for the logistic and exponential losses (on separable data, approached as
    ||w|| -> inf), so ``log_excess_loss`` = ``log_loss`` and Polyak steps work; the squared loss
    declares none (its infimum is the least-squares residual).
    """

    def __init__(self, X: torch.Tensor, y: torch.Tensor, *, loss: str = "logistic", bias: bool = False):
        if loss not in LINEAR_LOSSES:
            raise DeclarationError(f"linear classifier: unknown loss {loss!r}; use one of {LINEAR_LOSSES}")
        if X.dim() != 3 or y.shape != X.shape[:2]:
            raise InvalidInputError(f"linear classifier: need X (K, n, d) and y (K, n), got X "
                                    f"{tuple(X.shape)} and y {tuple(y.shape)}")
        if not bool(((y == 1) | (y == -1)).all()):  # host: construction (validating the labels)
            raise InvalidInputError("linear classifier: labels y must be -1 or +1 (a 0/1 label "
                                    "would make every margin of class 0 zero)")
        self.X, self.y, self.loss_name, self.bias = X, y, loss, bias
        self.blocks = ("w", "b") if bias else ("w",)
        self.infimum = None if loss == "squared" else 0.0
        features = torch.cat([X, torch.ones_like(X[..., :1])], -1) if bias else X
        self.signed = -y[..., None] * features                  # a_i = -y_i x_i, (K, n, d [+1])
        # log n as a tensor: subtracting a Python number would wrap it into a new one every step
        self._log_n = torch.tensor(math.log(X.shape[1]), dtype=X.dtype, device=X.device)

    def restrict(self, trials):
        return LinearClassifier(self.X[trials], self.y[trials], loss=self.loss_name, bias=self.bias)

    def _theta(self, params) -> torch.Tensor:
        return torch.cat([params["w"], params["b"]], -1) if self.bias else params["w"]

    def negative_margins(self, params) -> torch.Tensor:
        r"""s_i = -m_i = -y_i f(x_i), shape (K, n)."""
        return torch.bmm(self.signed, self._theta(params).unsqueeze(-1)).squeeze(-1)

    def margins(self, params) -> torch.Tensor:
        r"""m_i = y_i f(x_i), shape (K, n)."""
        return -self.negative_margins(params)

    def log_loss(self, params):
        s = self.negative_margins(params)
        if self.loss_name == "squared":
            return torch.log(0.5 * ((1 + s) ** 2).mean(-1))
        log_terms = s if self.loss_name == "exponential" else log_logistic(-s)
        return log_terms.logsumexp(-1) - self._log_n

    def log_excess_loss(self, params):
        """log(L - 0) = log L for the logistic and exponential losses (separable data: inf L = 0);
        the squared loss declares no infimum (DeclarationError)."""
        if self.infimum is None:
            return super().log_excess_loss(params)
        return self.log_loss(params)

    def reference_loss(self, params):
        r"""L written plainly: mean of log1p(exp(-m)), exp(-m) or (1 - m)^2 / 2 (autograd checks;
        it underflows to 0 at large margins)."""
        m = self.margins(params)
        plain = {"logistic": lambda: torch.log1p(torch.exp(-m)), "exponential": lambda: torch.exp(-m),
                 "squared": lambda: 0.5 * (1 - m) ** 2}
        return plain[self.loss_name]().mean(-1)

    def scaled_gradient(self, params):
        r"""grad L = exp(M) G (module docstring): log-domain weights for the logistic and
        exponential losses; the squared loss, which does not saturate, scales the plain
        gradient (`scaled`)."""
        if self.loss_name == "squared":     # grad L = (1/n) sum_i (1 + s_i) a_i
            s = self.negative_margins(params)
            M, G = scaled(torch.bmm((1 + s)[:, None, :], self.signed).squeeze(1) / s.shape[1])
        else:   # s as the column bmm gives, (K, n, 1), and the weights as a row: two reshapes, not three
            s = torch.bmm(self.signed, self._theta(params).unsqueeze(-1))
            c, weights = (rescale if self.loss_name == "exponential" else logistic_weights)(s, dim=1)
            M = c.view(-1) - self._log_n
            G = torch.bmm(weights.view(s.shape[0], 1, -1), self.signed).squeeze(1)
        if not self.bias:
            return {"w": Scaled(M, G)}
        return {"w": Scaled(M, G[:, :-1]), "b": Scaled(M, G[:, -1:])}

    def metrics(self):
        r""""log_loss" and "min_margin" min_i m_i / ||theta|| per trial (the normalized margin,
        which tends to the SVM's 1/||theta_svm|| along GD on separable data)."""
        def min_margin(it):
            theta = self._theta(it.params)
            return self.margins(it.params).amin(-1) / torch.linalg.vector_norm(theta, dim=-1)

        return {"log_loss": lambda it: self.log_loss(it.params), "min_margin": min_margin}


def separable_data(K: int, n: int, d: int, *, margin: float = 0.5, generator=None,
                   dtype=torch.float64):
    r"""(X (K,n,d), y (K,n)): standard Gaussian features whose first one is replaced by
    y_i (margin + |g_i|), g_i standard Gaussian, so that e_1 separates every trial with margin
    at least ``margin`` (a test and example data set, not a paper's)."""
    X = torch.randn(K, n, d, generator=generator, dtype=dtype)
    y = torch.randint(0, 2, (K, n), generator=generator).to(dtype) * 2 - 1
    X[..., 0] = y * (margin + X[..., 0].abs())
    return X, y


def _instance(loss, bias):
    def factory(K, seed):
        g = torch.Generator().manual_seed(seed)
        X, y = separable_data(K, 8, 3, generator=g)
        params = {"w": 0.3 * torch.randn(K, 3, generator=g, dtype=torch.float64)}
        if bias:
            params["b"] = 0.3 * torch.randn(K, 1, generator=g, dtype=torch.float64)
        saturated = None
        if loss != "squared":   # exp(-m) far below the float range
            saturated = {b: torch.zeros_like(v) for b, v in params.items()}
            saturated["w"][:, 0] = 4e3   # margins >= 2e3
        return Instance(LinearClassifier(X, y, loss=loss, bias=bias), params, saturated)
    return factory


for _loss in LINEAR_LOSSES:
    register_model(f"linear_{_loss}")(_instance(_loss, False))
register_model("linear_logistic_bias")(_instance("logistic", True))
