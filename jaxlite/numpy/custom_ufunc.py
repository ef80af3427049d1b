"""jnp.ufunc and jnp.frompyfunc: a scalar function made into a NumPy-style universal function
with outer, reduce, accumulate, at and reduceat. The call is vectorized with vmap; reduce and
accumulate fold along the axis with lax.scan (starting from the first slice, as JAX's do), so
every method runs under jit and differentiates like the function itself."""
import numpy as np

from jaxlite import lax
from jaxlite.core.abstract import canonicalize_axis
from jaxlite.lax.control_flow import scan
from jaxlite.numpy import creation, shape_ops
from jaxlite.numpy.indexing import _concrete
from jaxlite.numpy.util import broadcast_to, check_arraylike
from jaxlite.numpy.vectorization import vectorize


class ufunc:
    def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None, call=None,
                 reduce=None, accumulate=None, at=None, reduceat=None):
        self._func = func
        self.nin, self.nout = int(nin), int(nout)
        self.nargs = self.nin if nargs is None else int(nargs)
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self._call = call or vectorize(func)
        overrides = {"reduce": reduce, "accumulate": accumulate, "at": at, "reduceat": reduceat}
        self._overrides = {k: v for k, v in overrides.items() if v is not None}

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        if out is not None or where is not None:
            raise NotImplementedError(f"{self.__name__}: the 'out' and 'where' arguments are not "
                                      "supported (arrays are immutable)")
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} positional argument(s) but "
                            f"{len(args)} were given")
        return self._call(*args)

    def _binary_scalar(self, method):
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{method} only supported for binary ufuncs with a single output; "
                             f"{self.__name__} has nin={self.nin} and nout={self.nout}")

    def outer(self, A, B, /):
        self._binary_scalar("outer")
        check_arraylike("outer", A, B)
        A, B = creation.asarray(A), creation.asarray(B)
        return self(lax.reshape(A, A.shape + (1,) * B.ndim), B)

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=None):
        if "reduce" in self._overrides:
            return self._overrides["reduce"](a, axis, dtype, out, keepdims, initial, where)
        self._binary_scalar("reduce")
        if out is not None or where is not None:
            raise NotImplementedError(f"{self.__name__}.reduce: 'out' and 'where' are not supported")
        a = _operand(a, dtype)
        if axis is None:
            a, axis, kept_shape = shape_ops.ravel(a), 0, (1,) * a.ndim
        else:
            axis = canonicalize_axis(axis, a.ndim)
            kept_shape = a.shape[:axis] + (1,) + a.shape[axis + 1:]
        moved = shape_ops.moveaxis(a, axis, 0)
        if initial is not None:
            start, rest = broadcast_to(lax.convert_element_type(initial, a.dtype), moved.shape[1:]), moved
        elif moved.shape[0]:
            start, rest = moved[0], moved[1:]
        elif self.identity is not None:
            start, rest = lax.full(moved.shape[1:], self.identity, a.dtype), moved
        else:
            raise ValueError(f"zero-size array to reduction operation {self.__name__} which has "
                             "no identity")
        result, _ = scan(lambda carry, x: (self(carry, x), None), start, rest)
        return lax.reshape(result, kept_shape) if keepdims else result

    def accumulate(self, a, axis=0, dtype=None, out=None):
        if "accumulate" in self._overrides:
            return self._overrides["accumulate"](a, axis, dtype, out)
        self._binary_scalar("accumulate")
        a = _operand(a, dtype)
        axis = canonicalize_axis(axis, a.ndim)
        moved = shape_ops.moveaxis(a, axis, 0)
        if moved.shape[0] == 0:
            return a

        def step(carry, x):
            new = self(carry, x)
            return new, new
        _, rest = scan(step, moved[0], moved[1:])
        return shape_ops.moveaxis(shape_ops.concatenate([moved[:1], rest]), 0, axis)

    def at(self, a, indices, b=None, /, *, inplace=True):
        """self applied at `indices` one after another (repeated indices apply repeatedly)."""
        if "at" in self._overrides:
            return self._overrides["at"](a, indices, b, inplace=inplace)
        if inplace:
            raise NotImplementedError("jax.numpy.ufunc.at does not support inplace=True")
        a = creation.asarray(a)
        indices = shape_ops.ravel(creation.asarray(indices))
        if self.nin == 2:
            if b is None:
                raise ValueError(f"{self.__name__}.at needs b for a binary ufunc")
            values = broadcast_to(lax.convert_element_type(creation.asarray(b), a.dtype),
                                  indices.shape + a.shape[1:])
            apply = lambda current, value: self(current, value)
        else:
            values = lax.full(indices.shape, 0, a.dtype)
            apply = lambda current, value: self(current)

        def step(array, index_and_value):
            i, value = index_and_value
            return array.at[i].set(apply(array[i], value)), None
        result, _ = scan(step, a, (indices, values))
        return result

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """reduce over a[indices[i]:indices[i + 1]] along axis (numpy's rule: a[indices[i]]
        alone where the next index is not larger); indices must be concrete."""
        if "reduceat" in self._overrides:
            return self._overrides["reduceat"](a, indices, axis, dtype, out)
        self._binary_scalar("reduceat")
        a = _operand(a, dtype)
        axis = canonicalize_axis(axis, a.ndim)
        starts = _concrete(indices)
        if starts is None:
            raise TypeError(f"{self.__name__}.reduceat needs concrete indices")
        starts = np.asarray(starts).ravel()
        stops = list(starts[1:]) + [a.shape[axis]]
        pieces = []
        for start, stop in zip(starts, stops):
            stop = stop if stop > start else start + 1
            segment = lax.slice_in_dim(a, int(start), int(stop), axis=axis)
            pieces.append(self.reduce(segment, axis=axis, keepdims=True))
        return shape_ops.concatenate(pieces, axis=axis)


def _operand(a, dtype):
    check_arraylike("ufunc", a)
    a = creation.asarray(a)
    return a if dtype is None else lax.convert_element_type(a, dtype)


def frompyfunc(func, /, nin, nout, *, identity=None):
    return ufunc(func, nin, nout, identity=identity)
