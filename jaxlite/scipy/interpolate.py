"""jaxlite.scipy.interpolate: RegularGridInterpolator (linear and nearest), a pytree as in JAX."""
import functools as _functools
import itertools as _itertools
import operator as _operator

import numpy as _np

from jaxlite import numpy as _jnp
from jaxlite.scipy._util import as_inexact as _as_inexact
from jaxlite.tree_util import register_pytree_node_class as _register_pytree_node_class


@_register_pytree_node_class
class RegularGridInterpolator:
    """Interpolation on a rectilinear grid: values[i0, i1, ...] at (points[0][i0], points[1][i1], ...)."""

    def __init__(self, points, values, method="linear", bounds_error=False, fill_value=_np.nan):
        if method not in ("linear", "nearest"):
            raise ValueError(f"method {method!r} is not defined")
        if bounds_error:
            raise NotImplementedError("`bounds_error` takes no effect under JIT tracing and is not supported")
        self.method, self.bounds_error = method, bounds_error
        self.grid = tuple(_as_inexact(p)[0] for p in points)
        (self.values,) = _as_inexact(values)
        if len(self.grid) > self.values.ndim:
            raise ValueError(f"there are {len(self.grid)} point arrays, but values has {self.values.ndim} dimensions")
        self.fill_value = fill_value

    def __call__(self, xi, method=None):
        method = self.method if method is None else method
        if method not in ("linear", "nearest"):
            raise ValueError(f"method {method!r} is not defined")
        ndim = len(self.grid)
        xi = _jnp.stack(_jnp.broadcast_arrays(*xi), axis=-1) if isinstance(xi, tuple) else _jnp.asarray(xi)
        if xi.shape[-1] != ndim:
            raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, but this "
                             f"RegularGridInterpolator has dimension {ndim}")
        flat = xi.reshape(-1, ndim).astype(self.values.dtype)
        located = [self._locate(grid, flat[:, d]) for d, grid in enumerate(self.grid)]
        result = self._linear(located) if method == "linear" else self._nearest(located)
        if self.fill_value is not None:
            outside = _functools.reduce(_operator.or_, [out for _, _, out in located])
            outside = outside.reshape(outside.shape + (1,) * (result.ndim - 1))
            result = _jnp.where(outside, _jnp.asarray(self.fill_value, result.dtype), result)
        return result.reshape(xi.shape[:-1] + self.values.shape[ndim:])

    @staticmethod
    def _locate(grid, x):
        """(cell index, position within the cell from 0 to 1, outside the grid) along one axis."""
        cell = _jnp.clip(_jnp.searchsorted(grid, x, side="left") - 1, 0, grid.shape[0] - 2)
        fraction = (x - grid[cell]) / (grid[cell + 1] - grid[cell])
        return cell, fraction, (x < grid[0]) | (x > grid[-1])

    def _linear(self, located):
        terms = []
        for corner in _itertools.product((0, 1), repeat=len(located)):
            indices = tuple(cell + step for (cell, _, _), step in zip(located, corner))
            weight = _functools.reduce(_operator.mul, [f if step else 1 - f
                                                        for (_, f, _), step in zip(located, corner)])
            value = self.values[indices]
            terms.append(weight.reshape(weight.shape + (1,) * (value.ndim - 1)) * value)
        return _functools.reduce(_operator.add, terms)

    def _nearest(self, located):
        indices = tuple(_jnp.where(f <= 0.5, cell, cell + 1) for cell, f, _ in located)
        return self.values[indices]

    def tree_flatten(self):
        return (self.grid, self.values, self.fill_value), (self.method, self.bounds_error)

    @classmethod
    def tree_unflatten(cls, aux, children):
        grid, values, fill_value = children
        interpolator = object.__new__(cls)
        interpolator.grid, interpolator.values, interpolator.fill_value = grid, values, fill_value
        interpolator.method, interpolator.bounds_error = aux
        return interpolator
