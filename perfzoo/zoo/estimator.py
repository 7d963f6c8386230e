"""The estimator protocol of scikit-learn (``sklearn.base.BaseEstimator``'s), written here so that a
zoo member loads and predicts without importing scikit-learn: parameters are the constructor's,
``get_params`` / ``set_params`` read and write them, :func:`clone` makes a new, unfitted copy
(``sklearn.base.clone`` works on these estimators too), and :func:`build` makes one from a class or
factory with one-line errors.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any
from perfzoo.console import InputError


class Estimator:
    """scikit-learn's estimator protocol (``BaseEstimator``'s), without importing scikit-learn: the
    parameters are the constructor's, stored under their own names; ``get_params`` reads them (a
    nested estimator's as ``name__param`` where ``deep``), ``set_params`` writes them, the repr shows
    those that differ from their defaults, and :func:`clone` (or ``sklearn.base.clone``) makes a new,
    unfitted copy from them.

    >>> class Scaled(Estimator):
    ...     def __init__(self, factor=1.0, inner=None):
    ...         self.factor, self.inner = factor, inner
    >>> model = Scaled(inner=Scaled(3.0))
    >>> model.get_params()["inner__factor"], model.set_params(inner__factor=4.0).inner.factor
    (3.0, 4.0)
    >>> clone(model)
    Scaled(inner=Scaled(factor=4.0))
    """

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The constructor's parameter names, sorted (none for a class without its own)."""
        if cls.__init__ is object.__init__:
            return []
        found = [p for p in inspect.signature(cls.__init__).parameters.values()
                 if p.name != "self" and p.kind != p.VAR_KEYWORD]
        if any(p.kind == p.VAR_POSITIONAL for p in found):
            raise TypeError(f"{cls.__name__}: an estimator's constructor names each parameter (no *args)")
        return sorted(p.name for p in found)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters by name; with ``deep``, a nested estimator's too, as ``name__param``."""
        out: dict[str, Any] = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{key}__{k}", v) for k, v in value.get_params().items())
            out[key] = value
        return out

    def set_params(self, **params: Any) -> "Estimator":
        """Set parameters (a nested estimator's as ``name__param``); returns ``self``. An unknown
        name is a ``ValueError`` naming those it takes."""
        nested: dict[str, dict[str, Any]] = {}
        names = self._get_param_names()
        for key, value in params.items():
            key, nest, sub = key.partition("__")
            if key not in names:
                raise InputError(f"{type(self).__name__} takes no parameter {key!r}; it takes {names}")
            if nest:
                nested.setdefault(key, {})[sub] = value
            else:
                setattr(self, key, value)
        for key, sub in nested.items():
            getattr(self, key).set_params(**sub)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{k}={v!r}" for k, v in self.get_params(deep=False).items()
                   if k not in defaults or repr(defaults[k]) != repr(v)]
        return f"{type(self).__name__}({', '.join(changed)})"


def clone(estimator: Any) -> Any:
    """A new, unfitted estimator with ``estimator``'s parameters, each cloned in turn (scikit-learn's
    ``clone``: a scikit-learn estimator clones itself; a value that is no estimator is deep-copied).

    >>> from perfzoo.zoo.baselines import ConstantPredictor
    >>> clone(ConstantPredictor(statistic="mean"))
    ConstantPredictor(statistic='mean')
    """
    if isinstance(estimator, (list, tuple, set, frozenset)):
        return type(estimator)(clone(e) for e in estimator)
    if isinstance(estimator, type) or not hasattr(estimator, "get_params"):
        return copy.deepcopy(estimator)
    if hasattr(estimator, "__sklearn_clone__"):  # a scikit-learn estimator: its own protocol
        return estimator.__sklearn_clone__()
    return type(estimator)(**{k: clone(v) for k, v in estimator.get_params(deep=False).items()})


def build(obj: Any, params: dict[str, Any], label: str = "") -> Any:
    """``obj(**params)`` (a class or a factory), an unknown parameter or a constructor that raises a
    one-line ``ValueError`` naming ``label``.

    >>> from perfzoo.zoo.baselines import ConstantPredictor
    >>> build(ConstantPredictor, {"median": True}, "constant")
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: constant takes no parameter(s) ['median']; it takes ['statistic']
    """
    label = label or getattr(obj, "__qualname__", type(obj).__name__)
    if inspect.isclass(obj) and hasattr(obj, "_get_param_names"):
        valid = obj._get_param_names()
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise InputError(f"{label} takes no parameter(s) {unknown}; it takes {valid}")
    try:
        return obj(**params)
    except Exception as exc:
        call = ", ".join(f"{k}={v!r}" for k, v in params.items())
        name = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"
        raise InputError(f"{label}: {name}({call}) failed: {type(exc).__name__}: {exc}") from None


__all__ = ["Estimator", "build", "clone"]
