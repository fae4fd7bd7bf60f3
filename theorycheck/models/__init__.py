"""Models on one protocol (`theorycheck.models.base`): the softmax token-selection attention model,
softmax self-attention regression (`attention_regression`), two-layer networks with global or
self-attention masks (`attention_nets`), two-layer softmax / ReLU / exp networks (`two_layer`), and
linear classifiers with the logistic, exponential and squared losses (`linear`)."""

from theorycheck.models import attention_nets, attention_regression, base, linear, token_selection, two_layer
from theorycheck.models.attention_nets import *  # noqa: F401,F403  (the names in each __all__)
from theorycheck.models.attention_regression import *  # noqa: F401,F403
from theorycheck.models.base import *  # noqa: F401,F403
from theorycheck.models.linear import *  # noqa: F401,F403
from theorycheck.models.token_selection import *  # noqa: F401,F403
from theorycheck.models.two_layer import *  # noqa: F401,F403

__all__ = [*base.__all__, *attention_regression.__all__, *attention_nets.__all__,
           *token_selection.__all__, *two_layer.__all__, *linear.__all__]
