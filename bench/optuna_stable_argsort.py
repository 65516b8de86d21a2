"""Makes Optuna's Parzen estimator order equal values as tune does.

Optuna's `_ParzenEstimator` finds each kernel's neighbours with
`np.argsort`, which is not stable (numpy's SIMD sorts order ties by CPU and
build). In multivariate mode that order decides which of several equal
observations gets the wide kernel. `make_stable()` patches the estimator
module's `np` so its argsort is stable: ties by observation index, as in
tune. Used by bench/tpe_optuna.py (--stable-argsort) and by
tests/search/golden/make_parzen_golden.py.
"""
import numpy as np


class _NumpyWithStableArgsort:
    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def argsort(a, *args, **kwargs):
        kwargs.setdefault("kind", "stable")
        return np.argsort(a, *args, **kwargs)


def make_stable():
    from optuna.samplers._tpe import parzen_estimator as pe
    pe.np = _NumpyWithStableArgsort()
