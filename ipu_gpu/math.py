"""``ipu_gpu.math``: the ``tf.math`` names (many also exported at the top level)."""

from .ops.math import (abs, add, ceil, divide, equal, erf, erfc, exp, expm1, floor, floordiv,
                       floormod, greater, greater_equal, is_finite, is_inf, is_nan, less,
                       less_equal, log, log1p, logical_and, logical_not, logical_or, maximum,
                       minimum, multiply, negative, not_equal, pow, reciprocal, round, rsqrt,
                       sigmoid, sign, softplus, sqrt, square, subtract, tanh, truediv)
from .ops.math_extra import cumsum, segment_sum, unsorted_segment_mean, unsorted_segment_sum
from .ops.nn import l2_normalize, log_softmax, softmax
from .ops.segment_reduce import (unsorted_segment_max, unsorted_segment_min,
                                 unsorted_segment_prod)
from .ops.reduction import (argmax, argmin, count_nonzero, reduce_all, reduce_any,
                            reduce_logsumexp, reduce_max, reduce_mean, reduce_min, reduce_prod,
                            reduce_std, reduce_sum, reduce_variance)
from .ops.sort import top_k
from .tf2_names import add_n
from .ops.cumprod import cumprod
from .ops.special import digamma, lgamma
from .ops.trig import (acos, acosh, asin, asinh, atan, atan2, atanh, cos, cosh, sin, sinh,
                       tan)

__all__ = ["acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cos", "cosh", "sin",
           "sinh", "tan", "cumprod", "digamma", "lgamma",  # issue 17
           "abs", "add", "argmax", "argmin", "ceil", "count_nonzero", "cumsum", "divide",
           "equal", "erf", "erfc", "exp", "expm1", "floor", "floordiv", "floormod", "greater",
           "greater_equal", "is_finite", "is_inf", "is_nan", "l2_normalize", "less",
           "less_equal", "log", "log1p", "log_softmax", "logical_and", "logical_not",
           "logical_or", "maximum", "minimum", "multiply", "negative", "not_equal", "pow",
           "reciprocal", "reduce_all", "reduce_any", "reduce_logsumexp", "reduce_max",
           "reduce_mean", "reduce_min", "reduce_prod", "reduce_std", "reduce_sum",
           "reduce_variance", "round", "rsqrt", "segment_sum", "sigmoid", "sign", "softmax",
           "softplus", "sqrt", "square", "subtract", "tanh", "top_k", "truediv",
           "unsorted_segment_sum", "add_n", "unsorted_segment_mean",
           "unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod"]
