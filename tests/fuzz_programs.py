"""A seeded differential fuzzer: random programs of jaxlite ops, each run several ways.

A program is a list of steps over a pool of values; step i reads values from the pool
and appends its result. Programs are drawn by running candidate steps eagerly on the
program's inputs (so every step's operand shapes and dtypes are known and a step that
eager rejects is simply not drawn), then replayed as a Python function of the inputs:

    eager vs jit          the same inputs, values compared within a tolerance per dtype
    vmap vs a loop        the inputs stacked along a new leading axis of size 3
    grad jit vs eager     of a scalar loss of the float outputs, when inputs are float32
    grad vs numerical     central differences in float64 (the program replayed under x64)

Values are compared within a tolerance per dtype; where eager and jit differ by more, both
are checked against the program replayed in float64, within the spread that float32's
rounding of each step produces there (see _within_rounding_envelope): a cancelling
expression magnifies last-bit differences (an FMA under jit, two roundings eagerly, as in
JAX), and that is not a finding, while a wrong rule lies outside the envelope.

The outputs are the values no later step reads, so nothing a program computes is dead.
Run from the command line for many seeds:

    PYTHONPATH=. python tests/fuzz_programs.py 0 1000        (seeds 0..999; failures printed)
"""
import contextlib
import sys
import time
import traceback

import numpy as np

import jaxlite
import jaxlite.lax as lax
import jaxlite.numpy as jnp
from jaxlite.core import dtypes
from jaxlite.core.array import Array
from jaxlite.core.trace import EVAL_TRACE, EvalTrace
from jaxlite.test_util import enable_x64

BF16 = np.dtype(dtypes.bfloat16)
DTYPES = [np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.bool_), BF16, np.dtype(np.float16)]
SHAPES = [(), (0,), (1,), (5,), (17,), (3, 4), (1, 7), (4, 1), (2, 0, 3), (2, 3, 5), (1, 1, 3)]
BATCH = 3


# ---------------------------------------------------------------- the ops

def _unary(fun, kinds="f"):
    return {"arity": 1, "kinds": kinds, "apply": lambda x: fun(x)}


UNARY = {
    "sin": _unary(jnp.sin), "cos": _unary(jnp.cos), "tanh": _unary(jnp.tanh),
    "exp": _unary(jnp.exp), "log": _unary(jnp.log), "sqrt": _unary(jnp.sqrt),
    "expm1": _unary(jnp.expm1), "log1p": _unary(jnp.log1p), "arctan": _unary(jnp.arctan),
    "logistic": _unary(jaxlite.nn.sigmoid), "erf": _unary(lax.erf), "sinc": _unary(jnp.sinc),
    "floor": _unary(jnp.floor), "round": _unary(jnp.round), "reciprocal": _unary(jnp.reciprocal),
    "abs": _unary(jnp.abs, "fi"), "neg": _unary(jnp.negative, "fi"), "sign": _unary(jnp.sign, "fi"),
    "square": _unary(jnp.square, "fi"), "not": _unary(jnp.logical_not, "b"),
    "invert": _unary(jnp.invert, "ib"), "isfinite": _unary(jnp.isfinite, "f"),
}

BINARY = {
    "add": (jnp.add, "fib"), "sub": (jnp.subtract, "fi"), "mul": (jnp.multiply, "fib"),
    "div": (jnp.divide, "f"), "max": (jnp.maximum, "fib"), "min": (jnp.minimum, "fib"),
    "pow": (jnp.power, "f"), "atan2": (jnp.arctan2, "f"), "floordiv": (jnp.floor_divide, "fi"),
    "mod": (jnp.remainder, "fi"), "lt": (jnp.less, "fib"), "eq": (jnp.equal, "fib"),
    "and": (jnp.bitwise_and, "ib"), "or": (jnp.bitwise_or, "ib"), "xor": (jnp.bitwise_xor, "ib"),
    "hypot": (jnp.hypot, "f"), "logaddexp": (jnp.logaddexp, "f"),
}

REDUCTIONS = {"sum": jnp.sum, "max": jnp.max, "min": jnp.min, "prod": jnp.prod, "mean": jnp.mean,
              "argmax": jnp.argmax, "any": jnp.any, "all": jnp.all}


def _kind(dtype):
    if dtype == np.bool_:
        return "b"
    return "f" if dtypes.is_float(dtype) else "i"


def _broadcastable(*shapes):
    try:
        np.broadcast_shapes(*shapes)
        return True
    except ValueError:
        return False


# Each drawer takes (rng, pool of eager values) and returns (op name, operand indices, params)
# or None when the op does not apply to what the pool holds.

def _pick(rng, pool, accept=lambda v: True):
    candidates = [i for i, v in enumerate(pool) if accept(v)]
    return int(rng.choice(candidates)) if candidates else None


def _draw_unary(rng, pool):
    name = str(rng.choice(sorted(UNARY)))
    i = _pick(rng, pool, lambda v: _kind(v.dtype) in UNARY[name]["kinds"])
    return None if i is None else ("unary", [i], {"name": name})


def _draw_binary(rng, pool):
    name = str(rng.choice(sorted(BINARY)))
    kinds = BINARY[name][1]
    i = _pick(rng, pool, lambda v: _kind(v.dtype) in kinds)
    if i is None:
        return None
    j = _pick(rng, pool, lambda v: _kind(v.dtype) in kinds and _broadcastable(v.shape, pool[i].shape))
    if rng.random() < 0.25:                       # a weakly typed Python scalar operand
        return ("binary_scalar", [i], {"name": name, "scalar": _scalar_for(rng, pool[i].dtype),
                                       "left": bool(rng.random() < 0.5)})
    return ("binary", [i, j], {"name": name})


def _scalar_for(rng, dtype):
    kind = _kind(dtype)
    if kind == "b":
        return bool(rng.random() < 0.5)
    if kind == "i":
        return int(rng.integers(-3, 4))
    return float(rng.choice([0.5, -1.5, 2.0, 0.0, 3.25]))


def _draw_where(rng, pool):
    c = _pick(rng, pool, lambda v: v.dtype == np.bool_)
    if c is None:
        return None
    i = _pick(rng, pool, lambda v: _broadcastable(v.shape, pool[c].shape))
    j = _pick(rng, pool, lambda v: v.dtype == pool[i].dtype and _broadcastable(v.shape, pool[i].shape, pool[c].shape))
    return ("where", [c, i, j], {})


def _draw_reduce(rng, pool):
    name = str(rng.choice(sorted(REDUCTIONS)))
    i = _pick(rng, pool, lambda v: v.ndim > 0 or name != "argmax")
    if i is None:
        return None
    shape = pool[i].shape
    axis = None if not shape or rng.random() < 0.3 else int(rng.integers(len(shape)))
    if name in ("max", "min", "argmax"):
        if (axis is None and pool[i].size == 0) or (axis is not None and shape[axis] == 0):
            return None
        if name == "argmax" and axis is None:
            return ("reduce", [i], {"name": name, "axis": None, "keepdims": False})
    return ("reduce", [i], {"name": name, "axis": axis, "keepdims": bool(rng.random() < 0.3)})


def _draw_cumulative(rng, pool):
    i = _pick(rng, pool, lambda v: v.ndim > 0 and v.dtype != np.bool_)
    if i is None:
        return None
    name = str(rng.choice(["cumsum", "cumprod", "cummax"]))
    return ("cumulative", [i], {"name": name, "axis": int(rng.integers(pool[i].ndim)),
                                "reverse": bool(rng.random() < 0.3)})


def _draw_sort(rng, pool):
    i = _pick(rng, pool, lambda v: v.ndim > 0)
    if i is None:
        return None
    return ("sort", [i], {"axis": int(rng.integers(pool[i].ndim)), "arg": bool(rng.random() < 0.3)})


def _draw_cast(rng, pool):
    i = _pick(rng, pool)
    return ("cast", [i], {"dtype": DTYPES[int(rng.integers(len(DTYPES)))]})


def _draw_reshape(rng, pool):
    i = _pick(rng, pool)
    size = pool[i].size
    options = [(size,), (1, size), (size, 1)]
    options += [(d, size // d) for d in (2, 3, 4, 5) if size and size % d == 0]
    return ("reshape", [i], {"shape": options[int(rng.integers(len(options)))]})


def _draw_transpose(rng, pool):
    i = _pick(rng, pool, lambda v: v.ndim > 1)
    if i is None:
        return None
    return ("transpose", [i], {"axes": tuple(int(a) for a in rng.permutation(pool[i].ndim))})


def _draw_slice(rng, pool):
    i = _pick(rng, pool, lambda v: v.ndim > 0)
    if i is None:
        return None
    axis = int(rng.integers(pool[i].ndim))
    n = pool[i].shape[axis]
    start, stop = sorted(int(s) for s in rng.integers(-n - 1, n + 2, size=2))
    step = int(rng.choice([1, 1, 2, 3, -1]))
    return ("slice", [i], {"axis": axis, "start": start, "stop": stop, "step": step})


def _draw_index(rng, pool):
    i = _pick(rng, pool, lambda v: v.ndim > 0 and v.shape[0] > 0)
    if i is None:
        return None
    n = pool[i].shape[0]
    if rng.random() < 0.5:
        return ("index", [i], {"index": int(rng.integers(-n, n))})
    return ("gather", [i], {"indices": tuple(int(k) for k in rng.integers(-n, n, size=int(rng.integers(1, 5))))})


def _draw_take(rng, pool):
    i = _pick(rng, pool, lambda v: v.ndim > 0 and _kind(v.dtype) != "b")
    if i is None:
        return None
    n = pool[i].shape[0]
    indices = tuple(int(k) for k in rng.integers(-n - 2, n + 3, size=int(rng.integers(1, 5))))
    return ("take", [i], {"indices": indices, "mode": str(rng.choice(["clip", "wrap", "fill"]))})


def _draw_dynamic_slice(rng, pool):
    i = _pick(rng, pool, lambda v: v.ndim > 0)
    j = _pick(rng, pool, lambda v: v.ndim == 0 and v.dtype == np.int32)
    if i is None:
        return None
    size = int(rng.integers(0, pool[i].shape[0] + 1))
    start = ("traced", j) if j is not None and rng.random() < 0.5 else ("static", int(rng.integers(-8, 9)))
    operands = [i] + ([j] if start[0] == "traced" else [])
    return ("dynamic_slice", operands, {"size": size, "start": start[1] if start[0] == "static" else None})


def _draw_at(rng, pool):
    i = _pick(rng, pool, lambda v: v.ndim > 0 and v.shape[0] > 0)
    if i is None:
        return None
    n = pool[i].shape[0]
    j = _pick(rng, pool, lambda v: v.dtype == pool[i].dtype and _broadcastable(v.shape, pool[i].shape[1:])
              and len(np.broadcast_shapes(v.shape, pool[i].shape[1:])) <= pool[i].ndim - 1)
    if j is None:
        return None
    method = str(rng.choice(["set", "add", "multiply", "min", "max"]))
    return ("at", [i, j], {"index": int(rng.integers(-n, n)), "method": method})


def _draw_concat(rng, pool):
    i = _pick(rng, pool, lambda v: v.ndim > 0)
    if i is None:
        return None
    axis = int(rng.integers(pool[i].ndim))
    rest = pool[i].shape[:axis] + pool[i].shape[axis + 1:]
    j = _pick(rng, pool, lambda v: v.ndim == pool[i].ndim and v.dtype == pool[i].dtype
              and v.shape[:axis] + v.shape[axis + 1:] == rest)
    return ("concat", [i, j], {"axis": axis})


def _draw_broadcast(rng, pool):
    i = _pick(rng, pool, lambda v: v.ndim < 3)
    if i is None:
        return None
    return ("broadcast", [i], {"shape": (int(rng.integers(0, 4)),) + pool[i].shape})


def _draw_dot(rng, pool):
    i = _pick(rng, pool, lambda v: v.ndim in (1, 2) and _kind(v.dtype) != "b")
    if i is None:
        return None
    k = pool[i].shape[-1]
    j = _pick(rng, pool, lambda v: v.ndim in (1, 2) and v.shape[0] == k and v.dtype == pool[i].dtype)
    if j is None:
        return ("einsum", [i, i], {"spec": "ij,kj->ik" if pool[i].ndim == 2 else "i,i->"})
    return ("dot", [i, j], {})


def _draw_cond(rng, pool):
    p = _pick(rng, pool, lambda v: v.dtype == np.bool_)
    i = _pick(rng, pool, lambda v: _kind(v.dtype) == "f")
    if p is None or i is None:
        return None
    return ("cond", [p, i], {"true": str(rng.choice(sorted(UNARY))), "false": "neg"})


def _draw_loop(rng, pool):
    # Bounded bodies: a squaring body iterated grows values until float32's rounding of
    # sin(large) or mod(large) is all that is compared.
    i = _pick(rng, pool, lambda v: _kind(v.dtype) == "f")
    if i is None:
        return None
    kind = str(rng.choice(["fori", "while", "scan"]))
    if kind == "scan" and pool[i].ndim == 0:
        return None
    return ("loop", [i], {"kind": kind, "trips": int(rng.integers(0, 4)), "body": str(rng.choice(["sin", "tanh", "cos"]))})


DRAWERS = [_draw_unary] * 5 + [_draw_binary] * 5 + [_draw_where, _draw_reduce, _draw_reduce, _draw_cumulative,
           _draw_sort, _draw_cast, _draw_reshape, _draw_transpose, _draw_slice, _draw_index, _draw_at,
           _draw_concat, _draw_broadcast, _draw_dot, _draw_cond, _draw_loop, _draw_take, _draw_dynamic_slice]


# ---------------------------------------------------------------- replaying a step

def _apply_unary_name(name, x):
    return UNARY[name]["apply"](x)


def _loop(x, kind, trips, body):
    step = UNARY[body]["apply"]
    if kind == "fori":
        return lax.fori_loop(0, trips, lambda i, v: step(v) + v * 0.5, x)
    if kind == "while":
        return lax.while_loop(lambda c: c[0] < trips, lambda c: (c[0] + 1, step(c[1])), (0, x))[1]
    return lax.scan(lambda carry, row: (carry + step(row), carry * row), jnp.zeros_like(x[0]), x)[1]


def _cumulative(x, name, axis, reverse):
    fun = {"cumsum": lax.cumsum, "cumprod": lax.cumprod, "cummax": lax.cummax}[name]
    return fun(x, axis=axis, reverse=reverse)


def _slice(x, axis, start, stop, step):
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, stop, step)
    return x[tuple(index)]


def _at(x, y, index, method):
    return getattr(x.at[index], method)(y)


def apply_step(op, args, params):
    if op == "unary":
        return _apply_unary_name(params["name"], args[0])
    if op == "binary":
        return BINARY[params["name"]][0](*args)
    if op == "binary_scalar":
        fun, scalar = BINARY[params["name"]][0], params["scalar"]
        return fun(scalar, args[0]) if params["left"] else fun(args[0], scalar)
    simple = {
        "where": lambda c, a, b: jnp.where(c, a, b),
        "reduce": lambda x: REDUCTIONS[params["name"]](x, axis=params["axis"], keepdims=params["keepdims"]),
        "cumulative": lambda x: _cumulative(x, **params),
        "sort": lambda x: (jnp.argsort if params["arg"] else jnp.sort)(x, axis=params["axis"]),
        "cast": lambda x: x.astype(params["dtype"]),
        "reshape": lambda x: x.reshape(params["shape"]),
        "transpose": lambda x: x.transpose(params["axes"]),
        "slice": lambda x: _slice(x, **params),
        "index": lambda x: x[params["index"]],
        "gather": lambda x: x[jnp.array(params["indices"], dtype=jnp.int32)],
        "at": lambda x, y: _at(x, y, **params),
        "take": lambda x: jnp.take(x, jnp.array(params["indices"], dtype=jnp.int32), axis=0, mode=params["mode"]),
        "dynamic_slice": lambda x, *start: lax.dynamic_slice_in_dim(
            x, start[0] if start else params["start"], params["size"], axis=0),
        "concat": lambda a, b: jnp.concatenate([a, b], axis=params["axis"]),
        "broadcast": lambda x: jnp.broadcast_to(x, params["shape"]),
        "dot": lambda a, b: jnp.dot(a, b),
        "einsum": lambda a, b: jnp.einsum(params["spec"], a, b),
        "cond": lambda p, x: lax.cond(jnp.any(p), UNARY[params["true"]]["apply"] if "f" in UNARY[params["true"]]["kinds"] else jnp.sin, jnp.negative, x),
        "loop": lambda x: _loop(x, **params),
    }
    return simple[op](*args)


# ---------------------------------------------------------------- programs

class Program:
    def __init__(self, inputs, steps):
        self.inputs, self.steps = inputs, steps
        read = {i for _, operands, _ in steps for i in operands}
        total = len(inputs) + len(steps)
        self.outputs = [i for i in range(len(inputs), total) if i not in read] or [total - 1]

    def __call__(self, *inputs):
        pool = [jnp.asarray(x) for x in inputs]
        for op, operands, params in self.steps:
            pool.append(apply_step(op, [pool[i] for i in operands], params))
        self.low_precision = any(v.dtype in (BF16, np.float16) for v in pool)
        return [pool[i] for i in self.outputs]

    def describe(self):
        lines = [f"inputs: {[(a.shape, str(a.dtype)) for a in self.inputs]}"]
        n = len(self.inputs)
        for k, (op, operands, params) in enumerate(self.steps):
            lines.append(f"  v{n + k} = {op}{tuple(f'v{i}' for i in operands)} {params}")
        lines.append(f"  outputs: {['v%d' % i for i in self.outputs]}")
        return "\n".join(lines)


def random_value(rng, shape, dtype):
    kind = _kind(dtype)
    if kind == "b":
        return rng.random(shape) < 0.5
    if kind == "i":
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return (rng.standard_normal(shape) * 2).astype(dtype)


def random_inputs(rng, float_only=False):
    n = int(rng.integers(1, 4))
    shapes = [SHAPES[int(rng.integers(len(SHAPES)))] for _ in range(n)]
    choices = [np.dtype(np.float32)] if float_only else DTYPES
    return [random_value(rng, s, choices[int(rng.integers(len(choices)))]) for s in shapes]


def random_program(seed):
    rng = np.random.default_rng(seed)
    float_only = rng.random() < 0.4                # these get gradient checks
    inputs = random_inputs(rng, float_only)
    pool = [jnp.asarray(x) for x in inputs]
    steps, target = [], int(rng.integers(3, 26))
    attempts = 0
    while len(steps) < target and attempts < 200:
        attempts += 1
        step = DRAWERS[int(rng.integers(len(DRAWERS)))](rng, pool)
        if step is None or (float_only and _breaks_float_only(step)):
            continue
        try:
            with np.errstate(all="ignore"):
                value = apply_step(step[0], [pool[i] for i in step[1]], step[2])
        except (TypeError, ValueError, IndexError):
            continue                               # not a valid program: eager refuses it as JAX does
        if value.size > 5000:
            continue
        pool.append(value)
        steps.append(step)
    return Program(inputs, steps)


def _breaks_float_only(step):
    op, _, params = step
    return op == "cast" and params["dtype"] != np.float32


# ---------------------------------------------------------------- the checks

class Mismatch(AssertionError):
    pass


def _tolerance(dtype, low_precision):
    """Relative tolerance. A value computed from 16-bit floats anywhere upstream gets theirs:
    jit fuses 16-bit chains in float32 without rounding each step (as XLA:CPU does for
    float16), eager rounds every op."""
    if low_precision or dtype in (BF16, np.dtype(np.float16)):
        return 5e-2
    return 2e-4


def assert_close(got, want, what, low_precision=False):
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.dtype != w.dtype or g.shape != w.shape:
            raise Mismatch(f"{what}: output {k} is {g.dtype}{g.shape}, expected {w.dtype}{w.shape}")
        if not dtypes.is_float(w.dtype):
            if not np.array_equal(g, w):
                raise Mismatch(f"{what}: output {k} differs:\n got {g}\nwant {w}")
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        if not np.array_equal(np.isnan(g64), np.isnan(w64)):
            raise Mismatch(f"{what}: output {k} NaNs differ:\n got {g}\nwant {w}")
        finite = np.isfinite(w64) & np.isfinite(g64)
        if not np.array_equal(g64[~finite & ~np.isnan(w64)], w64[~finite & ~np.isnan(w64)]):
            raise Mismatch(f"{what}: output {k} infinities differ:\n got {g}\nwant {w}")
        scale = np.max(np.abs(w64[finite]), initial=1.0)
        tol = _tolerance(w.dtype, low_precision)
        if np.any(np.abs(g64[finite] - w64[finite]) > tol * (np.abs(w64[finite]) + scale * 1e-2)):
            raise Mismatch(f"{what}: output {k} values differ:\n got {g}\nwant {w}")


# ---------------------------------------------------------------- float32's rounding, modelled

UNIT_ROUNDOFF = 2.0 ** -24
# The primitives whose float results are rounded; the rest (moves, comparisons, selection,
# max/min, floor) are exact, and noise there would only widen the envelope.
_ROUNDING = {"add", "add_any", "sub", "mul", "div", "square", "integer_pow", "pow", "sqrt", "rsqrt",
             "exp", "exp2", "expm1", "log", "log1p", "logistic", "tanh", "sin", "cos", "tan", "atan",
             "atan2", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "cbrt", "lgamma",
             "digamma", "erf", "erfc", "erf_inv", "reduce_sum", "reduce_prod", "cumsum", "cumprod",
             "cumlogsumexp", "dot_general", "scatter-add", "scatter-mul"}
# Sums and products of many terms round once per term: their operands get noise too.
_ACCUMULATING = {"reduce_sum", "reduce_prod", "cumsum", "cumprod", "dot_general", "scatter-add", "scatter-mul"}
NOISE_SAMPLES = 4
ENVELOPE_FACTOR = 8       # the spread of 4 samples of a sum of many roundings, with room


def _noisy(value, rng):
    if not (type(value) is Array and dtypes.is_float(value.dtype)):
        return value
    d = rng.uniform(-2 * UNIT_ROUNDOFF, 2 * UNIT_ROUNDOFF, value.shape)
    return Array(np.asarray(value._value * (1 + d), value.dtype), value.weak_type)


@contextlib.contextmanager
def _rounding_noise(rng):
    """Eager evaluation in which every rounding primitive's float results (and an accumulating
    one's operands) are multiplied by 1 + d, |d| <= 2u: float32's arithmetic errs by up to u,
    its libm calls and jit's polynomials by up to 2 ulp."""
    def process(primitive, args, params):
        if primitive.name not in _ROUNDING:
            return EvalTrace.process_primitive(EVAL_TRACE, primitive, args, params)
        if primitive.name in _ACCUMULATING:
            args = [_noisy(x, rng) for x in args]
        out = EvalTrace.process_primitive(EVAL_TRACE, primitive, args, params)
        return [_noisy(o, rng) for o in out] if primitive.multiple_results else _noisy(out, rng)
    EVAL_TRACE.process_primitive = process
    try:
        yield
    finally:
        del EVAL_TRACE.process_primitive


def in_float64(program):
    """The program with its casts to float32 cast to float64 instead, for a float64 replay
    (where they would pin float32: there a float32 value cast to float32 is unchanged)."""
    float32 = np.dtype(np.float32)
    steps = [(op, operands, {**params, "dtype": np.dtype(np.float64)} if op == "cast" and params["dtype"] == float32
              else params) for op, operands, params in program.steps]
    return Program(program.inputs, steps)


def _float64_replays(fun, inputs):
    """fun's outputs evaluated in float64, exactly and NOISE_SAMPLES times with rounding noise;
    None where a cast to a 16-bit float pins it (there is no float64 replay to compare with)."""
    rng = np.random.default_rng(0)
    with enable_x64(), np.errstate(all="ignore"):
        x64 = [np.asarray(x, np.float64) if dtypes.is_float(x.dtype) else x for x in inputs]
        exact = [np.asarray(o) for o in jaxlite.tree_util.tree_leaves(fun(*x64))]
        if any(dtypes.is_float(o.dtype) and o.dtype != np.float64 for o in exact):
            return None
        replays = []
        for _ in range(NOISE_SAMPLES):
            with _rounding_noise(rng):
                replays.append([np.asarray(o) for o in jaxlite.tree_util.tree_leaves(fun(*x64))])
    return exact, replays


def _within_rounding_envelope(values, exact, replays):
    """Every float value lies within ENVELOPE_FACTOR times the noisy replays' spread around
    the float64 value, or within the plain tolerance of it."""
    for k, value in enumerate(values):
        value = np.asarray(value)
        if not dtypes.is_float(value.dtype):
            continue
        v64, e64 = value.astype(np.float64), exact[k]
        spread = np.max([np.abs(r[k] - e64) for r in replays], axis=0)
        if not np.array_equal(np.isfinite(v64), np.isfinite(e64) & np.isfinite(spread)):
            return False
        finite = np.isfinite(v64)
        bound = ENVELOPE_FACTOR * spread + _tolerance(value.dtype, False) * np.abs(e64)
        if np.any(np.abs(v64 - e64)[finite] > bound[finite]):
            return False
    return True


def assert_close_or_rounding(fun64, inputs, got, want, what, low_precision=False):
    """assert_close, except that values farther apart pass where both are within float32's
    rounding envelope of fun64's float64 replay (never for 16-bit programs: the noise models
    float32)."""
    try:
        assert_close(got, want, what, low_precision)
    except Mismatch as mismatch:
        if low_precision or "values differ" not in str(mismatch):
            raise
        replays = _float64_replays(fun64, inputs)
        if replays is None or not all(_within_rounding_envelope(jaxlite.tree_util.tree_leaves(v), *replays)
                                      for v in (got, want)):
            raise Mismatch(f"{mismatch}\n(and outside float32's rounding envelope of the float64 replay)") from None


def check_jit(program):
    with np.errstate(all="ignore"):
        want = program(*program.inputs)
    got = jaxlite.jit(program)(*program.inputs)
    assert_close_or_rounding(in_float64(program), program.inputs, got, want, "jit vs eager", program.low_precision)


def check_vmap(program, rng):
    batched = [np.stack([x] + [random_value(rng, x.shape, x.dtype) for _ in range(BATCH - 1)])
               for x in program.inputs]
    with np.errstate(all="ignore"):
        rows = [program(*[b[k] for b in batched]) for k in range(BATCH)]
        want = [np.stack([np.asarray(row[o]) for row in rows]) for o in range(len(rows[0]))]
        got = jaxlite.vmap(program)(*batched)
    assert_close(got, want, "vmap vs a loop", program.low_precision)


def _loss(program, weights):
    def loss(*inputs):
        total = 0.0
        for out, w in zip(program(*inputs), weights):
            if w is not None:
                total = total + jnp.sum(out * w)
        return total
    return loss


def gradient_applies(program):
    """float32 inputs, and no while_loop (reverse mode refuses it, in JAX too)."""
    return (all(x.dtype == np.float32 for x in program.inputs)
            and not any(op == "loop" and params["kind"] == "while" for op, _, params in program.steps))


def check_grad(program, rng):
    with np.errstate(all="ignore"):
        outs = program(*program.inputs)
    weights = [rng.standard_normal(np.shape(o)).astype(np.float32) if o.dtype == np.float32 else None
               for o in outs]
    if all(w is None for w in weights):
        return
    loss = _loss(program, weights)
    argnums = tuple(range(len(program.inputs)))
    with np.errstate(all="ignore"):
        eager = jaxlite.grad(loss, argnums=argnums)(*program.inputs)
        if not all(np.all(np.isfinite(np.asarray(g))) for g in eager) or not np.isfinite(float(loss(*program.inputs))):
            return
    compiled = jaxlite.jit(jaxlite.grad(loss, argnums=argnums))(*program.inputs)
    loss64 = _loss(in_float64(program), weights)
    assert_close_or_rounding(jaxlite.grad(loss64, argnums=argnums), program.inputs, compiled, eager, "grad: jit vs eager")
    _check_numerical(loss64, program, eager, rng)


# Piecewise constant: AD gives 0, while in float64 floor(x) == x once |x| > 2**52.
_STEPS = {"floor", "round", "sign", "floordiv"}


def _check_numerical(loss64, program, gradient, rng):
    """<grad, u> against central differences of the loss replayed in float64 (loss64: the
    program's casts to float32 cast to float64). A cast to a 16-bit float is a step too: at
    the differences' scale it is constant, where AD passes the tangent through (as JAX)."""
    if any(params.get("name") in _STEPS or (op == "cast" and params["dtype"] in (BF16, np.float16))
           for op, _, params in program.steps):
        return
    with enable_x64():
        if any(o.dtype != np.float64 for o in in_float64(program)(*[jnp.asarray(x, np.float64) for x in program.inputs])
               if dtypes.is_float(o.dtype)):
            return                                  # no float64 replay
        u = [rng.standard_normal(np.shape(x)) for x in program.inputs]
        x64 = [np.asarray(x, np.float64) for x in program.inputs]
        predicted = sum(float(np.vdot(np.asarray(g, np.float64), d)) for g, d in zip(gradient, u))
        estimates = []
        for eps in (1e-4, 1e-6):
            with np.errstate(all="ignore"):
                up = float(loss64(*[x + eps * d for x, d in zip(x64, u)]))
                down = float(loss64(*[x - eps * d for x, d in zip(x64, u)]))
            estimates.append((up - down) / (2 * eps))
    if not np.all(np.isfinite(estimates)):
        return
    agree = abs(estimates[0] - estimates[1]) <= 1e-4 * (abs(estimates[0]) + 1)
    scale = sum(float(np.sum(np.abs(np.asarray(g, np.float64) * d))) for g, d in zip(gradient, u)) + 1e-3
    if agree and abs(predicted - estimates[1]) > 1e-2 * scale:
        raise Mismatch(f"grad vs numerical: <grad, u> = {predicted}, central differences {estimates}")


def run(seed, program=None):
    """Check one program; returns None or a text describing the failure."""
    program = program or random_program(seed)
    rng = np.random.default_rng(seed + 1_000_003)
    try:
        check_jit(program)
        check_vmap(program, rng)
        if gradient_applies(program):
            check_grad(program, rng)
    except Exception as err:         # noqa: BLE001 (a failure of any kind is a finding)
        kind = "mismatch" if isinstance(err, Mismatch) else f"error {type(err).__name__}"
        detail = str(err) if isinstance(err, Mismatch) else traceback.format_exc(limit=-4)
        return f"seed {seed}: {kind}\n{program.describe()}\n{detail}"
    return None


def _without(program, k):
    """The program with step k and every step that reads it (transitively) removed."""
    n = len(program.inputs)
    removed, renumber, steps = {n + k}, {i: i for i in range(n)}, []
    for j, (op, operands, params) in enumerate(program.steps):
        if n + j in removed or any(i in removed for i in operands):
            removed.add(n + j)
            continue
        renumber[n + j] = n + len(steps)
        steps.append((op, [renumber[i] for i in operands], params))
    return Program(program.inputs, steps)


def _failure_kind(report):
    return report.splitlines()[0].split(": ", 1)[1] if report else None


def shrink(seed):
    """A smallest program (removing steps one at a time) that fails the way seed's does."""
    program = random_program(seed)
    kind = _failure_kind(run(seed, program))
    changed = kind is not None
    while changed:
        changed = False
        for k in reversed(range(len(program.steps))):
            smaller = _without(program, k)
            if smaller.steps and _failure_kind(run(seed, smaller)) == kind:
                program, changed = smaller, True
                break
    return run(seed, program) if kind else None


def main(first, last):
    failures, slowest = 0, (0.0, None)
    for seed in range(first, last):
        start = time.perf_counter()
        report = run(seed)
        slowest = max(slowest, (time.perf_counter() - start, seed))
        if report:
            failures += 1
            print(report, flush=True)
            print("-" * 60, flush=True)
        if (seed - first + 1) % 100 == 0:
            print(f"progress: {seed - first + 1} programs, {failures} failing", flush=True)
    print(f"ran seeds {first}..{last - 1}: {last - first} programs, {failures} failing; "
          f"slowest: seed {slowest[1]}, {slowest[0]:.1f} s", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "shrink":
        for seed in sys.argv[2:]:
            print(shrink(int(seed)), flush=True)
    else:
        main(int(sys.argv[1]), int(sys.argv[2]))
