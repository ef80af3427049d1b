"""optimizers: first-order optimizers as (init_fun, update_fun, get_params) triples, as JAX's
example library has them.

An optimizer maker defines the update of one array; `optimizer` lifts it to pytrees of
parameters, keeping every leaf's state flat in an OptimizerState (a pytree itself, so it
crosses jit). Step sizes are constants or schedules: functions of the step number.
"""
import functools
from collections import namedtuple
from typing import Any, Callable, NamedTuple

import numpy as np

import jaxlite.numpy as jnp
from jaxlite.core.namespace import dir_of_all
from jaxlite.core.tree_util import register_pytree_node, tree_flatten, tree_map, tree_unflatten

__all__ = ["InitFn", "JoinPoint", "Optimizer", "OptimizerState", "Params", "ParamsFn", "Schedule",
           "State", "Step", "UpdateFn", "Updates", "adagrad", "adam", "adamax", "clip_grads", "constant",
           "exponential_decay", "inverse_time_decay", "l2_norm", "make_schedule", "momentum", "nesterov",
           "optimizer", "pack_optimizer_state", "piecewise_constant", "polynomial_decay", "rmsprop",
           "rmsprop_momentum", "sgd", "sm3", "unpack_optimizer_state"]
__dir__ = dir_of_all(globals())

Step = int
Schedule = Callable[[Step], float]
Params = Any
Updates = Params
State = Any
InitFn = Callable[[Params], "OptimizerState"]
UpdateFn = Callable[[Step, Updates, "OptimizerState"], "OptimizerState"]
ParamsFn = Callable[["OptimizerState"], Params]

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
# Only the leaves' states are data: the tree structures are static.
register_pytree_node(OptimizerState, lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
                     lambda defs, children: OptimizerState(children[0], defs[0], defs[1]))


class Optimizer(NamedTuple):
    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


def _flatten_states(states):
    """(each state's leaves, each state's structure), as tuples: the structures are static
    data of the OptimizerState pytree, so they must hash."""
    pairs = [tree_flatten(state) for state in states]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def optimizer(opt_maker):
    """Lift a maker of per-array (init, update, get_params) to one over pytrees of arrays."""
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, tree = tree_flatten(x0_tree)
            states_flat, subtrees = _flatten_states([init(x0) for x0 in x0_flat])
            return OptimizerState(states_flat, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, grad_tree_def = tree_flatten(grad_tree)
            if grad_tree_def != tree:
                raise TypeError("optimizer update function was passed a gradient tree that did not match "
                                f"the parameter tree structure with which it was initialized: parameter "
                                f"tree {tree} and grad tree {grad_tree_def}.")
            states = [tree_unflatten(s, leaves) for s, leaves in zip(subtrees, states_flat)]
            new_flat, new_subtrees = _flatten_states([update(i, g, s) for g, s in zip(grad_flat, states)])
            for before, after in zip(subtrees, new_subtrees):
                if before != after:
                    raise TypeError("optimizer update function produced an output structure that did not "
                                    f"match its input structure: input {before} and output {after}.")
            return OptimizerState(new_flat, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            params = [get_params(tree_unflatten(s, leaves)) for s, leaves in zip(subtrees, states_flat)]
            return tree_unflatten(tree, params)

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


def _params_first(state):
    return state[0]


def _init_with_zeros(count):
    """The init of a per-array state (x, and `count` accumulators starting at 0)."""
    return lambda x0: (x0,) + tuple(jnp.zeros_like(x0) for _ in range(count))


@optimizer
def sgd(step_size):
    """x <- x - step_size(i) * g."""
    step_size = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - step_size(i) * g), (lambda x: x)


@optimizer
def momentum(step_size, mass):
    """Heavy-ball momentum: v <- mass * v + g; x <- x - step_size(i) * v."""
    return _with_velocity(step_size, mass, look_ahead=False)


@optimizer
def nesterov(step_size, mass):
    """Nesterov's accelerated momentum: the step looks ahead along the new velocity."""
    return _with_velocity(step_size, mass, look_ahead=True)


def _with_velocity(step_size, mass, look_ahead):
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        direction = mass * velocity + g if look_ahead else velocity
        return x - step_size(i) * direction, velocity
    return _init_with_zeros(1), update, _params_first


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad (steps scaled by the root of the summed squared gradients), with momentum."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        inv_root = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * inv_root) + momentum * m
        return x - step_size(i) * m, g_sq, m
    return _init_with_zeros(2), update, _params_first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """Steps scaled by the root of a running mean of squared gradients."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq = state
        avg_sq = avg_sq * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq + eps), avg_sq
    return _init_with_zeros(1), update, _params_first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """rmsprop's scaled steps accumulated with momentum."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq, mom = state
        avg_sq = avg_sq * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq + eps)
        return x - mom, avg_sq, mom
    return _init_with_zeros(2), update, _params_first


def _bias_correction(b, like, i):
    return 1 - jnp.asarray(b, like.dtype) ** (i + 1)


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba, 2015): bias-corrected running moments of the gradient."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        m_hat, v_hat = m / _bias_correction(b1, m, i), v / _bias_correction(b2, m, i)
        return x - step_size(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v
    return _init_with_zeros(2), update, _params_first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adamax: Adam with the infinity norm in place of the second moment."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        return x - (step_size(i) / _bias_correction(b1, m, i)) * m / (u + eps), m, u
    return _init_with_zeros(2), update, _params_first


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al., 2019): Adagrad with one accumulator per row/column of each axis,
    the minimum over axes standing in for the full second-moment table."""
    step_size = make_schedule(step_size)

    def along(ndim, v, axis):
        index = [None] * ndim
        index[axis] = slice(None)
        return v[tuple(index)]

    def init(x0):
        x = jnp.atleast_1d(x0)
        return x, jnp.zeros_like(x), [jnp.zeros(n, x.dtype) for n in x.shape], x0.shape

    def update(i, g, state):
        x, m, vs, shape = state
        accum = functools.reduce(jnp.minimum, [along(g.ndim, v, a) for a, v in enumerate(vs)]) + jnp.square(g)
        inv_root = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * inv_root) + momentum * m
        vs = [accum.max(tuple(b for b in range(x.ndim) if b != a)) for a in range(x.ndim)]
        return x - step_size(i) * m, m, vs, shape
    return init, update, lambda state: state[0].reshape(state[3])


# ---------------------------------------------------------------- schedules


def constant(step_size):
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate):
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    def schedule(step_num):
        fraction_left = 1 - jnp.minimum(step_num, decay_steps) / decay_steps
        return fraction_left ** power * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values):
    """values[j] for steps in (boundaries[j - 1], boundaries[j]]."""
    boundaries, values = jnp.array(boundaries), jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule):
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if np.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# ---------------------------------------------------------------- utilities


def l2_norm(tree):
    """The Euclidean norm of all leaves together."""
    leaves, _ = tree_flatten(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """The gradients scaled down to l2 norm max_norm where theirs is larger."""
    norm = l2_norm(grad_tree)
    return tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """Marks where a leaf's optimizer state begins in unpack_optimizer_state's tree."""
    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """The state as a pytree of JoinPoints shaped like the parameters (for saving)."""
    states_flat, tree, subtrees = opt_state
    return tree_unflatten(tree, [JoinPoint(tree_unflatten(s, leaves)) for s, leaves in zip(subtrees, states_flat)])


def pack_optimizer_state(marked_pytree):
    """The inverse of unpack_optimizer_state."""
    join_points, tree = tree_flatten(marked_pytree)
    if not all(isinstance(p, JoinPoint) for p in join_points):
        raise TypeError("pack_optimizer_state expects the tree unpack_optimizer_state returns")
    states_flat, subtrees = _flatten_states([p.subtree for p in join_points])
    return OptimizerState(states_flat, tree, subtrees)
