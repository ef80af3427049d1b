"""jaxlite.experimental.hijax: primitives defined in Python by their rules (jax.experimental.hijax).

`VJPHiPrimitive` is JAX's class-based way to define an operation with its own
derivative and batching rules: a subclass sets `in_avals`, `out_aval` and `params`
in `__init__`, gives the implementation as `expand` and may add `vjp_fwd` with
`vjp_bwd_retval` (or `vjp_bwd`, with accumulators) for reverse mode, `jvp` for
forward mode, and `batch` or `batch_dim_rule` for vmap. Calling an instance binds
one equation, `call_hi_primitive[_prim=...]`, that every transformation sees:
eager evaluation runs `expand`, jit compiles `expand` in its place, differentiation
and vmap call the rules. Reverse mode (grad, vjp) uses `vjp_fwd`/`vjp_bwd` when
they are defined, forward mode (jvp, jacfwd) uses `jvp`.

`HiPrimitive` is the older form: a Primitive subclass with `impl`, `abstract_eval`,
`to_lojax`, `jvp` and `transpose` methods.

`HiType` defines a type of immutable values made of arrays (a quantized array, a tuple):
`lo_ty` lists its arrays' types, `lower_val`/`raise_val` convert a value to and from them,
`to_tangent_aval` names its tangent type (with `vspace_zero`/`vspace_add` when that is a
hi type too). `register_hitype(cls, typeof)` makes instances of `cls` values of that type:
they cross jit as arguments, results and intermediates, each one variable of its type in
jaxprs (core/hi_lowering.py turns them into their arrays when a program is compiled), and
grad/vjp/jvp take them, with cotangents of their tangent type. Not yet: vmap and control
flow (scan, cond, while) over hi values, and mutable hi types (`MutableHiType`, whose
classes are here so that code declaring its own types imports them).
"""
import dataclasses

import numpy as np

from jaxlite.core.abstract import AbstractValue, ShapedArray, hitype_typeof, is_hi
from jaxlite.core.array import Array, as_array_argument
from jaxlite.core.effects import control_flow_allowed_effects
from jaxlite.core.primitive import Primitive, compiler_rewrites, hi_lowerings
from jaxlite.core.ref import AbstractRef
from jaxlite.core.trace import EVAL_TRACE, current_trace
from jaxlite.core.tree_util import tree_flatten, tree_map, tree_unflatten
from jaxlite.transforms import ad, batching
from jaxlite.transforms.ad import Zero
from jaxlite.transforms.ad import instantiate as instantiate_zeros
from jaxlite.transforms.ad import is_undefined as is_undefined_primal
from jaxlite.transforms.custom_derivatives import _apply_vjp_rule
from jaxlite.transforms.partial_eval import PartialEvalTrace

__all__ = ["AbstractRef", "AbstractValue", "AvalMutableQDD", "AvalQDD", "HiPrimitive", "HiType",
           "MutableHiType", "ShapedArray", "VJPHiPrimitive", "Zero", "aval_method", "aval_property",
           "control_flow_allowed_effects", "instantiate_zeros", "is_undefined_primal", "register_hitype"]


def __dir__():
    """The public names only (not this module's imports and helpers)."""
    return sorted(__all__)


# ---------------------------------------------------------------- types

class HiType(AbstractValue):
    """The type of an immutable value made of arrays (its `lo_ty`), defined in Python."""

    is_high = True
    has_qdd = False

    def lo_ty(self):
        raise NotImplementedError(f"{type(self).__name__} must define lo_ty")

    def lower_val(self, hi_val):
        raise NotImplementedError(f"{type(self).__name__} must define lower_val")

    def raise_val(self, *lo_vals):
        raise NotImplementedError(f"{type(self).__name__} must define raise_val")

    def to_tangent_aval(self):
        raise NotImplementedError(f"{type(self).__name__} must define to_tangent_aval")

    def to_ct_aval(self):
        return self.to_tangent_aval()

    def str_short(self, short_dtypes=False, mesh_axis_types=False):
        return repr(self)


class MutableHiType(AbstractValue):
    """The type of a mutable value whose contents' types (its quasi-dynamic data) may change."""

    is_high = True
    has_qdd = True
    is_writer = False

    def lo_ty_qdd(self, state, /):
        raise NotImplementedError(f"{type(self).__name__} must define lo_ty_qdd")

    def to_tangent_aval(self):
        raise NotImplementedError(f"{type(self).__name__} must define to_tangent_aval")

    def to_ct_aval(self):
        return self.to_tangent_aval()


@dataclasses.dataclass(frozen=True)
class AvalQDD:
    """A mutable type with its current quasi-dynamic data."""
    aval: AbstractValue
    qdd: object


@dataclasses.dataclass(frozen=True)
class AvalMutableQDD:
    """A mutable type with a box for its quasi-dynamic data, which an abstract eval may update."""
    aval: AbstractValue
    mutable_qdd: object


def register_hitype(val_cls, typeof_fn):
    """Make `jax.typeof(v)` of a `val_cls` instance `typeof_fn(v)`."""
    hitype_typeof[val_cls] = typeof_fn


class aval_method:
    """A method a type defines for values of that type: `fun(value, *args)`."""

    def __init__(self, fun):
        self.fun = fun


class aval_property:
    """A property a type defines for values of that type: `fget(value)`."""

    def __init__(self, fget):
        self.fget = fget


# ---------------------------------------------------------------- HiPrimitive

class HiPrimitive(Primitive):
    """A primitive given by methods: impl (eager, on arrays), abstract_eval (types, optionally
    with effects), to_lojax (its computation under jit), jvp and transpose."""

    multiple_results = False

    def __init__(self, name):
        self.name = name
        ad.jvp_rules[self] = lambda primals, tangents, **params: self.jvp(primals, tangents, **params)
        ad.transpose_rules[self] = lambda cts, *args, **params: self.transpose(cts, *args, **params)
        compiler_rewrites[self] = lambda *args, memory_orders, **params: self.to_lojax(*args, **params)
        hi_lowerings[self] = self.to_lojax

    def bind(self, *args, **params):
        if current_trace() is EVAL_TRACE:         # eager: impl runs on the arrays themselves
            return self.impl(*args, **params)
        return super().bind(*args, **params)

    def abstract_eval_list(self, avals, params):
        out = self.abstract_eval(*avals, **params)
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], (set, frozenset)):
            out = out[0]                          # (types, effects)
        return list(out) if self.multiple_results else [out]

    def is_high(self, *avals, **params):
        return True

    def impl(self, *args, **params):
        return self.to_lojax(*args, **params)

    def abstract_eval(self, *avals, **params):
        raise NotImplementedError(f"{self.name} must define abstract_eval")

    def to_lojax(self, *args, **params):
        raise NotImplementedError(f"{self.name} must define to_lojax")

    def jvp(self, primals, tangents, **params):
        raise NotImplementedError(f"{self.name} must define jvp")

    def transpose(self, *args, **params):
        raise NotImplementedError(f"{self.name} must define transpose")


# ---------------------------------------------------------------- VJPHiPrimitive

class VJPHiPrimitive:
    """An operation defined by a subclass: see the module docstring."""

    effects = frozenset()

    def __init__(self):
        for required in ("in_avals", "out_aval", "params"):
            if not hasattr(self, required):
                raise AttributeError(f"subclass __init__ should set `self.{required}`")
        if _overrides(self, "vjp_bwd") and _overrides(self, "vjp_bwd_retval"):
            raise AttributeError(f"subclass {type(self)} should not override both `vjp_bwd` and "
                                 "`vjp_bwd_retval`")
        self.in_avals_flat, self.in_tree = tree_flatten(self.in_avals)
        self.out_avals_flat, self.out_tree = tree_flatten(self.out_aval)
        self.__dict__.update(self.params)
        self.check(*self.in_avals)

    def expand(self, *args):
        raise NotImplementedError(f"subclass {type(self)} must implement `expand`")

    def vjp_fwd(self, nzs_in, /, *args):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must implement `vjp_fwd`")

    def vjp_bwd(self, res, outgrad, /, *arg_accums):
        tree_map(lambda accum, ct: accum.accum(ct), arg_accums, self.vjp_bwd_retval(res, outgrad),
                 is_leaf=lambda x: isinstance(x, _GradAccum))

    def vjp_bwd_retval(self, res, outgrad, /):
        raise NotImplementedError(f"for grad support, subclass {type(self)} must implement `vjp_bwd` "
                                  "or `vjp_bwd_retval`")

    def jvp(self, primals, tangents):
        raise NotImplementedError(f"for jvp support, subclass {type(self)} must implement `jvp`")

    def lin(self, nzs_in, *primals):
        raise NotImplementedError(f"for linearize support, subclass {type(self)} must implement `lin` "
                                  "and `linearized`")

    def linearized(self, residuals, *tangents):
        raise NotImplementedError(f"for linearize support, subclass {type(self)} must implement `lin` "
                                  "and `linearized`")

    def batch(self, axis_data, args, dims):
        out_dim = self.batch_dim_rule(axis_data, dims)
        return VmapOf(self, axis_data, dims, out_dim)(*args), out_dim

    def batch_dim_rule(self, axis_data, dims, /):
        raise NotImplementedError(f"for vmap support, subclass {type(self)} must implement `batch` "
                                  "or `batch_dim_rule`")

    def check(self, *arg_tys):
        """Checks a subclass may make of its input types."""

    def __call__(self, *args):
        args_flat = [as_array_argument(x) for x in self.in_tree.flatten_up_to(args)]
        return tree_unflatten(self.out_tree, call_hi_primitive_p.bind(*args_flat, _prim=self))

    def __repr__(self):
        return f"{type(self).__name__}[{self.params}]"

    def __hash__(self):
        return hash((type(self).__name__, tuple(self.params.items()), self.effects))

    def __eq__(self, other):
        return type(self) is type(other) and self.params == other.params and self.effects == other.effects


def _overrides(prim, method):
    return getattr(type(prim), method) is not getattr(VJPHiPrimitive, method)


class AxisData:
    """The vmapped axis a batching rule sees: its name and size."""

    def __init__(self, name, size):
        self.name, self.size, self.spmd_name, self.explicit_mesh_axis = name, size, None, None

    def __repr__(self):
        return f"AxisData(name={self.name!r}, size={self.size}, spmd_name=None, explicit_mesh_axis=None)"


class VmapOf(VJPHiPrimitive):
    """`prim` vmapped: its rules are prim's, vmapped the same way."""

    def __init__(self, prim, axis_data, in_dims, out_dim):
        in_dims_flat = prim.in_tree.flatten_up_to(tuple(in_dims))
        out_dims_flat = prim.out_tree.flatten_up_to(out_dim)
        self.in_avals = tree_unflatten(prim.in_tree, list(map(_unmapped(axis_data.size), prim.in_avals_flat,
                                                              in_dims_flat)))
        self.out_aval = tree_unflatten(prim.out_tree, list(map(_unmapped(axis_data.size), prim.out_avals_flat,
                                                               out_dims_flat)))
        self.params = dict(prim=prim, axis_data=axis_data, in_dims=tuple(in_dims), out_dim=out_dim)
        super().__init__()

    def _vmap(self, fun, in_axes, out_axes):
        return batching.vmap(fun, in_axes=in_axes, out_axes=out_axes, axis_name=self.axis_data.name,
                             axis_size=self.axis_data.size)

    def expand(self, *args):
        return self._vmap(self.prim.expand, self.in_dims, self.out_dim)(*args)

    def jvp(self, primals, tangents):
        return self._vmap(self.prim.jvp, (self.in_dims, self.in_dims), (self.out_dim, self.out_dim))(
            tuple(primals), tuple(tangents))

    def vjp_fwd(self, nzs_in, *args):
        # Residuals batched at axis 0 (broadcast where they do not vary), so bwd knows their axes.
        fwd = lambda *a: self.prim.vjp_fwd(nzs_in, *a)[:2]
        return self._vmap(fwd, self.in_dims, (self.out_dim, 0))(*args)

    def vjp_bwd_retval(self, res, g):
        prim = self.prim
        cts = self._vmap(lambda res, g: _retval_cotangents(prim, res, g), (0, self.out_dim), 0)(res, g)
        cts = [_from_front(ct, d) for ct, d in zip(cts, prim.in_tree.flatten_up_to(self.in_dims))]
        return tuple(tree_unflatten(prim.in_tree, cts))

    def batch_dim_rule(self, axis_data, in_dims):
        outer = self.prim.in_tree.flatten_up_to(tuple(in_dims))
        mine = self.prim.in_tree.flatten_up_to(self.in_dims)
        inner = [d if d is None or m is None else d - (m < d) for d, m in zip(outer, mine)]
        out_dim = self.prim.out_tree.flatten_up_to(
            self.prim.batch_dim_rule(axis_data, tuple(tree_unflatten(self.prim.in_tree, inner))))
        mine_out = self.prim.out_tree.flatten_up_to(self.out_dim)
        return tree_unflatten(self.prim.out_tree, [d if d is None or m is None else d + (m < d)
                                                   for d, m in zip(out_dim, mine_out)])


def _unmapped(size):
    def unmapped(aval, dim):
        return aval if dim is None else aval.update(shape=aval.shape[:dim] + (size,) + aval.shape[dim:])
    return unmapped


def _from_front(ct, dim):
    """A cotangent batched at axis 0 moved to its input's batch axis (summed if it has none)."""
    from jaxlite import numpy as jnp
    return jnp.sum(ct, axis=0) if dim is None else jnp.moveaxis(ct, 0, dim)


class _GradAccum:
    """Where vjp_bwd adds the cotangent of one input."""

    def __init__(self, aval):
        self.aval, self.value = aval, None

    def accum(self, ct):
        if ct is None or isinstance(ct, Zero):
            return
        self.value = ct if self.value is None else ad.add_tangents(self.value, ct)


def _retval_cotangents(prim, res, g):
    """The flat input cotangents vjp_bwd gives (zeros where it gives none)."""
    accums = [_GradAccum(ad.tangent_aval(a)) for a in prim.in_avals_flat]
    prim.vjp_bwd(res, g, *tree_unflatten(prim.in_tree, accums))
    return [ad.zeros(a.aval) if a.value is None else a.value for a in accums]


class _HiVJPRule:
    """vjp_fwd/vjp_bwd as the flat forward/backward pair custom_vjp's reverse mode runs."""

    symbolic_zeros = False

    def __init__(self, prim):
        self.prim, self.res_tree, self.static = prim, None, {}

    def forward(self, primals, perturbed):
        prim = self.prim
        result = prim.vjp_fwd(tree_unflatten(prim.in_tree, perturbed), *tree_unflatten(prim.in_tree, primals))
        out, residuals = result[0], result[1]
        leaves, self.res_tree = tree_flatten(residuals)
        # Leaves that are not arrays (static values, Python objects) stay here, not in the jaxpr.
        self.static = {i: x for i, x in enumerate(leaves) if not _is_array_like(x)}
        return prim.out_tree.flatten_up_to(out), [x for x in leaves if _is_array_like(x)]

    def backward(self, residuals, cts):
        leaves = iter(residuals)
        total = len(residuals) + len(self.static)
        res = [self.static[i] if i in self.static else next(leaves) for i in range(total)]
        return _retval_cotangents(self.prim, tree_unflatten(self.res_tree, res),
                                  tree_unflatten(self.prim.out_tree, cts))

    def __repr__(self):
        return f"{type(self.prim).__name__}.vjp_bwd"


def _is_array_like(x):
    return isinstance(x, (Array, np.ndarray, np.generic, int, float, bool, complex))


def _call_hi_primitive_impl(*values, _prim):
    """expand on the values: arrays (as Arrays, with their declared weak types) and hi values."""
    args = [v if is_hi(a) else Array(np.asarray(v), a.weak_type) for v, a in zip(values, _prim.in_avals_flat)]
    outs = _call_hi_primitive_expanded(*args, _prim=_prim)
    return [o if is_hi(a) else np.asarray(o._value if type(o) is Array else o)
            for o, a in zip(outs, _prim.out_avals_flat)]


def _call_hi_primitive_abstract_eval(*avals, _prim):
    for position, (aval, expected) in enumerate(zip(avals, _prim.in_avals_flat)):
        if is_hi(aval) or is_hi(expected):
            mismatch = aval != expected
        else:
            mismatch = aval.shape != expected.shape or aval.dtype != expected.dtype
        if mismatch:
            raise TypeError(f"input type mismatch for {_prim}: argument {position} has type "
                            f"{aval.str_short()} where in_avals declares {expected.str_short()}")
    return list(_prim.out_avals_flat)


def _call_hi_primitive_expanded(*args, _prim):
    return _prim.out_tree.flatten_up_to(_prim.expand(*tree_unflatten(_prim.in_tree, list(args))))


def _call_hi_primitive_jvp(primals, tangents, _prim):
    """Reverse mode (grad, vjp, linearize: a partial-evaluation trace below) prefers vjp_fwd,
    then lin, then jvp; forward mode prefers jvp, then lin, then vjp_fwd (which then
    refuses forward evaluation, as a custom_vjp does)."""
    reverse_mode = isinstance(current_trace(), PartialEvalTrace)
    order = ("vjp_fwd", "lin", "jvp") if reverse_mode else ("jvp", "lin", "vjp_fwd")
    rule = next((r for r in order if _overrides(_prim, r)), "jvp")
    if rule == "vjp_fwd":
        return _apply_vjp_rule(primals, tangents, _HiVJPRule(_prim))
    args = tree_unflatten(_prim.in_tree, primals)
    tangents = tree_unflatten(_prim.in_tree, [instantiate_zeros(t) for t in tangents])
    if rule == "lin":
        out, residuals = _prim.lin(tree_unflatten(_prim.in_tree, [True] * len(primals)), *args)[:2]
        out_dot = _prim.linearized(residuals, *tangents)
    else:
        out, out_dot = _prim.jvp(args, tangents)
    return _prim.out_tree.flatten_up_to(out), _prim.out_tree.flatten_up_to(out_dot)


def _call_hi_primitive_batch(axis, args, dims, _prim):
    if all(d is None for d in dims):
        return call_hi_primitive_p.bind(*args, _prim=_prim), [None] * len(_prim.out_avals_flat)
    axis_data = AxisData(axis.axis_name, axis.axis_size)
    out, out_dims = _prim.batch(axis_data, tree_unflatten(_prim.in_tree, args),
                                tree_unflatten(_prim.in_tree, dims))
    return _prim.out_tree.flatten_up_to(out), _prim.out_tree.flatten_up_to(out_dims)


call_hi_primitive_p = Primitive("call_hi_primitive", multiple_results=True)
call_hi_primitive_p.def_impl(_call_hi_primitive_impl)
call_hi_primitive_p.def_abstract_eval(_call_hi_primitive_abstract_eval)
compiler_rewrites[call_hi_primitive_p] = lambda *args, memory_orders, _prim: _call_hi_primitive_expanded(*args, _prim=_prim)
hi_lowerings[call_hi_primitive_p] = _call_hi_primitive_expanded
ad.jvp_rules[call_hi_primitive_p] = _call_hi_primitive_jvp
batching.axis_batch_rules[call_hi_primitive_p] = _call_hi_primitive_batch
