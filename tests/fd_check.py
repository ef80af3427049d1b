"""Small numerical-derivative checks shared by the lax API-breadth tests.

A local stand-in until the project-wide check_grads lands: JVPs against central
differences in float64, transposes by the inner-product identity
<ct, f(x)> = <f^T(ct), x>, and vmap against a Python loop.
"""
import contextlib

import numpy as np

import jaxlite
from jaxlite.core.config import config
from jaxlite.transforms import ad


@contextlib.contextmanager
def x64():
    previous = config.read("jax_enable_x64")
    config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        config.update("jax_enable_x64", previous)


def _is_float(x):
    return np.issubdtype(np.asarray(x).dtype, np.floating)


def _random_like(x, rng):
    return rng.standard_normal(np.shape(x)) if _is_float(x) else None


def check_jvp(f, args, eps=1e-6, rtol=1e-5, atol=1e-6, seed=0):
    """jvp(f) along random directions of the float arguments equals central differences."""
    rng = np.random.default_rng(seed)
    with x64():
        args = [np.asarray(a, np.float64) if _is_float(a) else np.asarray(a) for a in args]
        directions = [_random_like(a, rng) for a in args]
        float_positions = [i for i, d in enumerate(directions) if d is not None]

        def along(s):
            moved = [a + s * d if d is not None else a for a, d in zip(args, directions)]
            return np.asarray(f(*moved), np.float64)

        def f_of_floats(*floats):
            full = list(args)
            for i, v in zip(float_positions, floats):
                full[i] = v
            return f(*full)
        _, tangent = jaxlite.jvp(f_of_floats, tuple(args[i] for i in float_positions),
                                 tuple(directions[i] for i in float_positions))
        numeric = (along(eps) - along(-eps)) / (2 * eps)
        np.testing.assert_allclose(np.asarray(tangent, np.float64), numeric, rtol=rtol, atol=atol)


def check_transpose(primitive, ct, args, linear, params, rtol=1e-5, atol=1e-5):
    """The transpose rule of `primitive` in its linear argument positions `linear`
    satisfies <ct, f(x)> = sum_i <ct_i, x_i> for random x in those positions."""
    rng = np.random.default_rng(1)
    with x64():
        args = [np.asarray(a, np.float64) if _is_float(a) else np.asarray(a) for a in args]
        xs = {i: rng.standard_normal(np.shape(args[i])) for i in linear}
        filled = [xs.get(i, a) for i, a in enumerate(args)]
        out = np.asarray(primitive.bind(*map(jaxlite.numpy.asarray, filled), **params))
        ct = np.asarray(ct, np.float64)
        undefined = [ad.UndefinedPrimal(ad.aval_of(jaxlite.numpy.asarray(a))) if i in xs
                     else jaxlite.numpy.asarray(a) for i, a in enumerate(args)]
        cts = ad.transpose_rules[primitive](jaxlite.numpy.asarray(ct), *undefined, **params)
        lhs = float(np.sum(ct * out))
        rhs = float(sum(np.sum(np.asarray(cts[i]) * xs[i]) for i in linear))
        np.testing.assert_allclose(lhs, rhs, rtol=rtol, atol=atol)


def check_vmap(f, args, in_axes=0, rtol=1e-6):
    """vmap(f) over in_axes equals stacking f applied to each slice."""
    axes = in_axes if isinstance(in_axes, (tuple, list)) else [in_axes] * len(args)
    size = next(np.shape(a)[d] for a, d in zip(args, axes) if d is not None)
    batched = jaxlite.vmap(f, in_axes=tuple(axes))(*args)
    looped = [f(*[a if d is None else np.take(a, b, axis=d) for a, d in zip(args, axes)])
              for b in range(size)]
    if isinstance(batched, (tuple, list)):
        for k, out in enumerate(batched):
            np.testing.assert_allclose(np.asarray(out), np.stack([np.asarray(o[k]) for o in looped]),
                                       rtol=rtol, atol=rtol)
    else:
        np.testing.assert_allclose(np.asarray(batched), np.stack([np.asarray(o) for o in looped]),
                                   rtol=rtol, atol=rtol)


def transpose_jvp(f, x, ct):
    """x's cotangent for output cotangent ct, by staging t -> jvp(f, (x,), (t,))[1]
    (linear in t) and running each linear equation's transpose rule backwards.

    A minimal reverse pass for tests, so every transpose rule a JVP relies on is
    exercised before the project's own vjp exists.
    """
    from jaxlite.core.ir import Literal
    from jaxlite.core.staging import literal_value
    closed = jaxlite.make_jaxpr(lambda t: jaxlite.jvp(f, (x,), (t,))[1])(x)
    jaxpr = closed.jaxpr
    values = dict(zip(jaxpr.constvars, closed.consts))
    linear = set(jaxpr.invars)
    read = lambda v: literal_value(v) if isinstance(v, Literal) else values[v]
    for eqn in jaxpr.eqns:
        if any(v in linear for v in eqn.inputs if not isinstance(v, Literal)):
            linear.update(eqn.outputs)
            continue
        outs = eqn.primitive.bind(*map(read, eqn.inputs), **eqn.params)
        values.update(zip(eqn.outputs, outs if eqn.primitive.multiple_results else [outs]))
    cts = {jaxpr.outvars[0]: jaxlite.numpy.asarray(ct)}
    for eqn in reversed(jaxpr.eqns):
        if eqn.outputs[0] not in linear or eqn.outputs[0] not in cts:
            continue
        assert not eqn.primitive.multiple_results, f"{eqn.primitive} in the linear part"
        args = [ad.UndefinedPrimal(v.aval) if v in linear and not isinstance(v, Literal) else read(v)
                for v in eqn.inputs]
        for v, v_ct in zip(eqn.inputs, ad.transpose_rules[eqn.primitive](cts[eqn.outputs[0]], *args,
                                                                          **eqn.params)):
            if v_ct is not None and not ad.is_zero(v_ct) and v in linear:
                cts[v] = ad.add_tangents(cts[v], v_ct) if v in cts else v_ct
    return cts.get(jaxpr.invars[0], np.zeros(np.shape(x)))


def check_reverse_mode(f, x, seed=3, rtol=1e-6):
    """<ct, J t> from forward mode equals <J^T ct, t> from the transposed JVP."""
    rng = np.random.default_rng(seed)
    with x64():
        x = np.asarray(x, np.float64)
        t = rng.standard_normal(x.shape)
        out, jt = jaxlite.jvp(f, (x,), (t,))
        ct = rng.standard_normal(np.shape(out))
        x_ct = np.asarray(transpose_jvp(f, x, ct))
    np.testing.assert_allclose(np.sum(ct * np.asarray(jt)), np.sum(x_ct * t), rtol=rtol)
