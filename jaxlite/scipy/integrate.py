"""jaxlite.scipy.integrate: the trapezoidal rule."""
from jaxlite import numpy as _jnp
from jaxlite.scipy._util import as_inexact as _as_inexact


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of y along axis by the trapezoidal rule, at sample points x (or spacing dx)."""
    y = _jnp.moveaxis(_as_inexact(y)[0], axis, -1)
    if x is None:
        spacing = dx
    else:
        x = _jnp.asarray(x)
        if x.ndim == 1:
            spacing = _jnp.diff(x)
        else:
            spacing = _jnp.diff(_jnp.moveaxis(x, axis, -1), axis=-1)
    return 0.5 * _jnp.sum(spacing * (y[..., 1:] + y[..., :-1]), axis=-1)
