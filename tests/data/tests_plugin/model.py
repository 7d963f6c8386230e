"""A user's own performance model: a power law with pairwise interactions.

Scored on perfzoo's benchmark without editing perfzoo::

    PYTHONPATH=tests/data python -m perfzoo.bench --predictors tests_plugin.model:Mine \
        --datasets vtrain-a100 --splits random,scale
"""

from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

from perfzoo.zoo import EncodedPredictor


class Mine(EncodedPredictor):
    """Ridge on degree-2 polynomial features of perfzoo's standardised encoding, fitted to log
    throughput: the zoo's ``ridge`` plus every pairwise interaction of the knobs."""

    name = "mine"
    encoding = "scaled"

    def __init__(self, alpha: float = 10.0, target: str = "log"):
        self.alpha = alpha
        self.target = target

    def _make_model(self):
        return make_pipeline(PolynomialFeatures(2, include_bias=False), Ridge(alpha=self.alpha))
