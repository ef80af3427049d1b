"""jaxlite.scipy.optimize: minimize with BFGS, as JAX offers it.

BFGS and its line search (Nocedal and Wright's algorithms 3.5 and 3.6: bracket a step
satisfying the strong Wolfe conditions, then zoom into the bracket) are while_loops over
fixed-shape state, so minimize runs under jit and vmap. Each trial step costs one
evaluation of the function and its gradient.
"""
from typing import Any as _Any, NamedTuple as _NamedTuple

import numpy as _np

from jaxlite import lax as _lax
from jaxlite import numpy as _jnp
from jaxlite.transforms.ad import value_and_grad as _value_and_grad

_ARMIJO = 1e-4       # sufficient decrease: phi(a) <= phi(0) + c1 a phi'(0)
_CURVATURE = 0.9     # strong curvature: |phi'(a)| <= c2 |phi'(0)|

# status codes, as JAX's BFGS reports them
_CONVERGED, _MAX_ITERATIONS, _LINE_SEARCH_FAILED = 0, 1, 3


class OptimizeResults(_NamedTuple):
    """The result of minimize: the minimizer x and the solver's state when it stopped."""
    x: _Any
    success: _Any
    status: _Any
    fun: _Any
    jac: _Any
    hess_inv: _Any
    nfev: _Any
    njev: _Any
    nit: _Any


class _Search(_NamedTuple):
    i: _Any
    trial: _Any
    lo: _Any
    phi_lo: _Any
    dphi_lo: _Any
    hi: _Any
    phi_hi: _Any
    zooming: _Any
    done: _Any
    step: _Any
    phi: _Any
    grad: _Any


def _interpolate(s):
    """The minimizer of the quadratic through (lo, phi_lo, dphi_lo) and (hi, phi_hi), kept
    inside the middle 80% of the bracket (else its midpoint)."""
    width = s.hi - s.lo
    curvature = s.phi_hi - s.phi_lo - s.dphi_lo * width
    safe = _jnp.where(curvature > 0, curvature, 1.0)
    candidate = s.lo - s.dphi_lo * width * width / (2 * safe)
    low, high = _jnp.minimum(s.lo, s.hi), _jnp.maximum(s.lo, s.hi)
    margin = 0.1 * (high - low)
    inside = (curvature > 0) & (candidate > low + margin) & (candidate < high - margin)
    return _jnp.where(inside, candidate, s.lo + width / 2)


def _line_search(value_and_grad, x, p, f0, g0, maxiter):
    """A step a along p meeting the strong Wolfe conditions: (found, a, f(x + a p), grad, evaluations)."""
    dphi0 = _jnp.dot(g0, p)

    def search(s):
        phi, grad = value_and_grad(x + s.trial * p)
        dphi = _jnp.dot(grad, p)
        insufficient = (phi > f0 + _ARMIJO * s.trial * dphi0) | ((s.i > 0) & (phi >= s.phi_lo)) \
            | ~_jnp.isfinite(phi)
        flat = _jnp.abs(dphi) <= -_CURVATURE * dphi0
        uphill = dphi * (s.hi - s.lo) >= 0
        # bracketing: an insufficient trial closes the bracket above it; an uphill one closes it
        # with the old low end above. zooming: it replaces hi, or lo (hi moving to lo if uphill).
        to_hi = insufficient
        swap = ~insufficient & ~flat & _jnp.where(s.zooming, uphill, dphi >= 0)
        new_hi = _jnp.where(to_hi, s.trial, _jnp.where(swap, s.lo, s.hi))
        new_phi_hi = _jnp.where(to_hi, phi, _jnp.where(swap, s.phi_lo, s.phi_hi))
        keep_lo = to_hi
        new_lo = _jnp.where(keep_lo, s.lo, s.trial)
        new_phi_lo = _jnp.where(keep_lo, s.phi_lo, phi)
        new_dphi_lo = _jnp.where(keep_lo, s.dphi_lo, dphi)
        zooming = s.zooming | to_hi | swap
        done = ~insufficient & flat
        moved = _Search(s.i + 1, s.trial, new_lo, new_phi_lo, new_dphi_lo, new_hi, new_phi_hi,
                        zooming, done, _jnp.where(done, s.trial, s.step), _jnp.where(done, phi, s.phi),
                        _jnp.where(done, grad, s.grad))
        next_trial = _jnp.where(zooming, _interpolate(moved), 2 * s.trial)
        return moved._replace(trial=next_trial)

    def searching(s):
        return ~s.done & (s.i < maxiter)

    zero = _jnp.zeros_like(f0)
    init = _Search(_jnp.asarray(0), zero + 1, zero, f0, dphi0, zero, f0, _jnp.asarray(False),
                   _jnp.asarray(False), zero, f0, g0)
    s = _lax.while_loop(searching, search, init)
    return s.done, s.step, s.phi, s.grad, s.i


class _State(_NamedTuple):
    k: _Any
    x: _Any
    f: _Any
    g: _Any
    h: _Any
    converged: _Any
    failed: _Any
    evaluations: _Any


def _bfgs(fun, x0, maxiter=None, norm=_np.inf, gtol=1e-5, line_search_maxiter=10):
    value_and_grad = _value_and_grad(fun)
    x0 = _jnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"minimize: x0 must be one-dimensional, got shape {x0.shape}")
    maxiter = x0.shape[0] * 200 if maxiter is None else maxiter
    f0, g0 = value_and_grad(x0)
    eye = _jnp.eye(x0.shape[0], dtype=x0.dtype)

    def step(state):
        p = -_jnp.matmul(state.h, state.g)
        found, a, f, g, evaluations = _line_search(value_and_grad, state.x, p, state.f, state.g,
                                                   line_search_maxiter)
        s = a * p
        y = g - state.g
        curvature = _jnp.dot(y, s)
        rho = _jnp.where(curvature == 0, 1000.0, 1 / _jnp.where(curvature == 0, 1.0, curvature))
        left = eye - rho * s[:, None] * y[None, :]
        h = _jnp.matmul(_jnp.matmul(left, state.h), left.T) + rho * s[:, None] * s[None, :]
        return _State(state.k + 1, _jnp.where(found, state.x + s, state.x), _jnp.where(found, f, state.f),
                      _jnp.where(found, g, state.g), _jnp.where(found, h, state.h),
                      _jnp.linalg.norm(g, ord=norm) < gtol, ~found, state.evaluations + evaluations)

    def running(state):
        return ~state.converged & ~state.failed & (state.k < maxiter)

    init = _State(_jnp.asarray(0), x0, f0, g0, eye, _jnp.linalg.norm(g0, ord=norm) < gtol,
                  _jnp.asarray(False), _jnp.asarray(1))
    return _lax.while_loop(running, step, init)


def minimize(fun, x0, args=(), *, method, tol=None, options=None):
    """Minimize fun(x, *args) over a 1-d x from x0; method "BFGS" (the gradient by autodiff).

    options: maxiter, norm (of the gradient, for the stopping test), gtol, line_search_maxiter.
    tol is accepted and, as in JAX, not used."""
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, got {args}")
    if method.lower() != "bfgs":
        raise ValueError(f"Method {method} not recognized")
    state = _bfgs(lambda x: fun(x, *args), x0, **(options or {}))
    status = _jnp.where(state.converged, _CONVERGED,
                        _jnp.where(state.failed, _LINE_SEARCH_FAILED, _MAX_ITERATIONS)).astype(_jnp.int32)
    return OptimizeResults(x=state.x, success=state.converged & ~state.failed, status=status,
                           fun=state.f, jac=state.g, hess_inv=state.h, nfev=state.evaluations,
                           njev=state.evaluations, nit=state.k)
