"""jaxlite.typing: the annotations JAX code uses for array arguments and dtypes (as jax.typing)."""
from typing import Any as _Any
from typing import Protocol as _Protocol
from typing import Union as _Union

import numpy as _np

from jaxlite.core.array import Array as _Array


class _SupportsDType(_Protocol):
    @property
    def dtype(self) -> _np.dtype: ...


# What jaxlite.numpy functions accept as an array: arrays (and tracers), numpy values, Python scalars.
ArrayLike = _Union[_Array, _np.ndarray, _np.bool_, _np.number, bool, int, float, complex]
# What they accept as a dtype: a name, a scalar type, a numpy dtype, or anything with a .dtype.
DTypeLike = _Union[str, type[_Any], _np.dtype, _SupportsDType]
