"""Members from outside perfzoo: an import path, an installed package's entry point, any
scikit-learn regressor.

Besides the registry's names, :func:`perfzoo.zoo.get` and :func:`perfzoo.zoo.make` (and so
``python -m perfzoo.bench --predictors``) take

``module:attr``
    an import path to a :class:`~perfzoo.zoo.base.Predictor` subclass
    (``mypkg.models:MyPredictor``), to a scikit-learn regressor class
    (``sklearn.ensemble:ExtraTreesRegressor``: :class:`SklearnRegressor` gives it perfzoo's
    feature encoding and log target, as the zoo's ``random_forest`` has), or to a factory
    function that returns either;
an entry-point name
    an installed package that declares, in its ``pyproject.toml``::

        [project.entry-points."perfzoo.predictors"]
        mine = "mypkg.models:MyPredictor"

    registers ``mine`` (group :data:`GROUP`; :func:`installed` lists them). Installed members run
    when named; a default bench run covers the registry only, so the shipped leaderboard does
    not depend on what a machine has installed.

What the bench needs of a member, without data (:func:`problems`, one line per problem): it
builds without arguments; it is a ``Predictor`` subclass (``save``/``load`` and metadata come with
it, and :class:`~perfzoo.zoo.interval.Interval` gives it the 80% interval) that sets ``name`` and valid ``output``/``encoding``/``fit_cost`` tags and
implements ``_fit``/``_predict`` (an ``EncodedPredictor``: ``_make_model``), or a scikit-learn
regressor; its constructor stores its parameters (``get_params``, ``clone``).
:func:`perfzoo.testing.predictor_failures` checks the rest on data.

>>> model = make_member(resolve("sklearn.ensemble:ExtraTreesRegressor"), {"n_estimators": 20})
>>> model.name, model.get_params()["estimator__n_estimators"]
('ExtraTreesRegressor', 20)
>>> problems(resolve("sklearn.linear_model:Ridge"), "sklearn.linear_model:Ridge")
[]
"""

from __future__ import annotations

import importlib
import inspect
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Optional

from sklearn.base import RegressorMixin, is_regressor as _sklearn_is_regressor

from perfzoo.console import InputError
from perfzoo.zoo.base import EncodedPredictor, Predictor
from perfzoo.zoo.estimator import build, clone
from perfzoo.zoo.features import ENCODINGS

GROUP = "perfzoo.predictors"  # the entry-point group of installed members
OUTPUTS = ("throughput", "score", "probability")  # a member's ``output`` tag (perfzoo.zoo.base)


class ContractError(InputError):
    """Members that break the contract; ``problems`` says how, one line each (:func:`problems`)."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = list(problems)


def installed() -> dict[str, EntryPoint]:
    """The members installed packages register (entry-point group :data:`GROUP`), by name."""
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def resolve(name: str) -> Optional[Any]:
    """The class or factory ``name`` means: an import path ``module:attr`` or an installed
    entry point's name; None for a name that is neither. A path or entry point that cannot be
    loaded is a one-line ``ValueError`` saying why.

    >>> resolve("sklearn.linear_model:Ridge").__name__
    'Ridge'
    """
    if ":" in name:
        return _import(name, name)
    found = installed().get(name)
    return None if found is None else _import(found.value, f"entry point {name!r} ({GROUP})")


def _import(path: str, what: str) -> Any:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise InputError(f"{what}: an import path is module:attr, e.g. mypkg.models:MyPredictor")
    try:
        obj = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise InputError(f"{what}: no module {exc.name!r} (install the package or put its folder on "
                             "PYTHONPATH)") from None
        raise InputError(f"{what}: importing {module_name} failed: {type(exc).__name__}: {exc}") from None
    except Exception as exc:  # the user's module raised while importing
        raise InputError(f"{what}: importing {module_name} failed: {type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InputError(f"{what}: {module_name} has no {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise InputError(f"{what}: {attr} is a {type(obj).__name__}, not a class or a factory")
    return obj


def make_member(obj: Any, params: dict[str, Any], label: str = "") -> Predictor:
    """A new, unfitted member from ``obj`` (a class or factory :func:`resolve` gave): a
    ``Predictor`` as it is, a scikit-learn regressor wrapped in :class:`SklearnRegressor`;
    ``params`` go to the class (the regressor's) or the factory. Unknown parameters and a
    result of neither kind are one-line ``ValueError`` s."""
    label = label or _qualname(obj)
    est = build(obj, params, label)
    if isinstance(est, Predictor):
        return est
    if is_regressor(est):
        return SklearnRegressor(est)
    found = instance_problems(est, label)
    raise InputError(found[0])


def problems(obj: Any, label: str) -> list[str]:
    """What ``obj`` (a class or factory :func:`resolve` gave) lacks to be benchmarked, one line
    each naming ``label`` (the name it was given by); ``[]`` when nothing does."""
    try:
        est = obj()
    except Exception as exc:
        return [f"{label}: {_qualname(obj)}() failed ({type(exc).__name__}: {exc}); the bench builds a member "
                "without arguments, so every constructor parameter needs a default"]
    return instance_problems(est, label)


def instance_problems(est: Any, label: str) -> list[str]:
    """:func:`problems` of a built member ``est``."""
    if is_regressor(est) and not isinstance(est, Predictor):
        return _parameter_problems(est, label)
    if isinstance(est, RegressorMixin) and not isinstance(est, Predictor):  # a mixin scikit-learn does not see
        bases = ", ".join(b.__name__ for b in type(est).__bases__)
        return [f"{label}: {_qualname(type(est))}({bases}) derives from RegressorMixin, but scikit-learn >= 1.6 "
                "tags a class a regressor only with the mixin before BaseEstimator: write class "
                f"{type(est).__name__}(RegressorMixin, BaseEstimator)"]
    if not isinstance(est, Predictor):
        found = [f"{label}: {_qualname(type(est))} is neither a perfzoo.zoo.Predictor (derive from "
                 "perfzoo.zoo.EncodedPredictor or Predictor: save, load and metadata come with it, and "
                 "perfzoo.zoo.interval.Interval wraps it with the 80% interval) nor a scikit-learn regressor (sklearn.base.RegressorMixin: perfzoo encodes its features)"]
        return found + [f"{label}: has no {m}()" for m in ("fit", "predict", "get_params", "set_params")
                        if not callable(getattr(est, m, None))]
    cls, found = type(est), []
    if not isinstance(est.name, str) or not est.name or est.name == Predictor.name:
        found.append(f"{label}: sets no name (a class attribute, e.g. name = 'mine': saved metadata and "
                     "artifact folders use it)")
    if est.output not in OUTPUTS:
        found.append(f"{label}: output = {est.output!r} is not one of {', '.join(OUTPUTS)}")
    if est.encoding is not None and est.encoding not in ENCODINGS:
        found.append(f"{label}: encoding = {est.encoding!r} is not None or one of {', '.join(ENCODINGS)}")
    if not isinstance(est.fit_cost, (int, float)) or not est.fit_cost > 0:
        found.append(f"{label}: fit_cost = {est.fit_cost!r} is not a positive number (fit time per row relative "
                     "to ridge's 1)")
    if isinstance(est, EncodedPredictor):
        if cls._make_model is EncodedPredictor._make_model and cls._fit is EncodedPredictor._fit:
            found.append(f"{label}: implements no _make_model() (an EncodedPredictor returns its model there)")
    else:
        found += [f"{label}: implements no {method}() (a Predictor subclass implements _fit(X, y, groups) and "
                  "_predict(X))" for method in ("_fit", "_predict") if getattr(cls, method) is getattr(Predictor, method)]
    if est.output == "probability" and not callable(getattr(est, "predict_proba", None)):
        found.append(f"{label}: output = 'probability' but has no predict_proba(X)")
    return found + _parameter_problems(est, label)


def _parameter_problems(est: Any, label: str) -> list[str]:
    try:
        params = est.get_params()
        twin = clone(est)
    except Exception as exc:
        return [f"{label}: get_params or clone failed ({type(exc).__name__}: {exc}); __init__ must store each "
                "parameter as an attribute of the same name, and do nothing else"]
    if twin.get_params().keys() != params.keys():
        return [f"{label}: clone changed the parameters"]
    return []


def source_files(est: Any) -> list[str]:
    """The source files of every class ``est`` is made of (its class's bases, and a wrapped
    regressor's): what the bench's cache fingerprints a member by."""
    classes = list(type(est).__mro__)
    if isinstance(est, SklearnRegressor) and est.estimator is not None:
        classes += type(est.estimator).__mro__
    files = []
    for cls in classes:
        try:
            files.append(inspect.getsourcefile(cls))
        except TypeError:  # a built-in class
            continue
    return sorted(set(filter(None, files)))


def is_regressor(obj: Any) -> bool:
    """Whether ``obj`` is a scikit-learn regressor (False for an object scikit-learn cannot tag)."""
    try:
        return bool(_sklearn_is_regressor(obj))
    except Exception:  # not a scikit-learn estimator at all
        return False


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"


class SklearnRegressor(EncodedPredictor):
    """Any scikit-learn regressor as a zoo member: it is fitted on perfzoo's feature encoding
    (``encoding``, default ``numeric``: numbers, log sizes and the analytic estimates, categories
    one-hot) and a transformed target (``target``, default ``log``), like the zoo's
    ``random_forest``; ``random_state`` and ``n_jobs`` reach the regressor where it takes them.
    Give ``encoding='scaled'`` to a linear or distance-based regressor.

    >>> from sklearn.neighbors import KNeighborsRegressor
    >>> model = SklearnRegressor(KNeighborsRegressor(n_neighbors=3), encoding="scaled")
    >>> model.name, model.encoding
    ('KNeighborsRegressor', 'scaled')
    """

    encoding = "numeric"

    def __init__(self, estimator: Any, encoding: str = "numeric", target: str = "log", random_state: int = 0,
                 n_jobs: int = 1):
        self.estimator = estimator
        self.encoding = encoding
        self.target = target
        self.random_state = random_state
        self.n_jobs = n_jobs

    @property
    def name(self) -> str:  # type: ignore[override]
        """The regressor's class name (saved metadata)."""
        return type(self.estimator).__name__

    def _validate_params(self) -> None:
        super()._validate_params()
        if not is_regressor(self.estimator):
            raise InputError(f"SklearnRegressor: estimator={self.estimator!r} is not a scikit-learn regressor")
        if self.encoding not in ENCODINGS:
            raise InputError(f"SklearnRegressor: encoding={self.encoding!r} is not one of {ENCODINGS}")

    def _make_model(self):
        model = clone(self.estimator)
        own = model.get_params(deep=False)
        model.set_params(**{k: getattr(self, k) for k in ("random_state", "n_jobs") if k in own})
        return model
