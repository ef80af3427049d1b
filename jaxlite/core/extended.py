"""Arrays of extended dtypes (typed PRNG keys, key<fry>) as values of the IR.

An extended-dtype array has a logical type, ShapedArray(S, key<fry>), which is what
jaxprs show and what transformations (vmap, grad, control flow) work with, and a
physical form: the uint32 array of shape S + dtype.physical_shape holding its elements.
Nothing below the IR knows extended dtypes: compiled code and numpy kernels only see
physical data. The two meet in one table:

  physical_rules[p](in_avals, *physical_operands, **params) -> physical results

which computes primitive p on physical operands with ordinary primitives (`in_avals` are
the logical operand types). Eager evaluation runs the rule at once (`evaluate`), and the
compiler first rewrites a jaxpr to physical form (`physicalize`). The structural
primitives (reshape, slicing, concatenate, select_n, ...) share one rule, `structural`:
the op is applied to each physical element component as vmap would apply it, which
needs no new code per primitive (transforms/physical.py: it builds on vmap). Call and
control-flow primitives need no entry: their rule rewrites their bodies.
"""
import weakref

from jaxlite.core.abstract import ShapedArray
from jaxlite.core.array import Array, as_array_argument, intern_signature
from jaxlite.core.dtypes import ExtendedDType
from jaxlite.core.ir import ClosedJaxpr, Literal, sub_jaxprs

physical_rules = {}


class ExtendedArray:
    """A concrete array of an extended dtype: the dtype and the Array of physical data."""

    __slots__ = ("dtype", "_physical", "_signature")   # _signature: see signature_of
    __array_priority__ = 100

    def __init__(self, dtype, physical):
        self.dtype, self._physical = dtype, physical

    @property
    def shape(self):
        return self._physical.shape[:self._physical.ndim - len(self.dtype.physical_shape)]

    ndim = property(lambda self: len(self.shape))
    aval = property(lambda self: ShapedArray(self.shape, self.dtype))
    weak_type = False

    def block_until_ready(self):
        return self


Array.virtual_instance_types += (ExtendedArray,)


def signature_of(array):
    """An extended array's interned signature for jit's fast path (array.signature_of's)."""
    try:
        return array._signature
    except AttributeError:
        physical = array._physical._value
        array._signature = intern_signature(array.shape, array.dtype, False, physical.flags.c_contiguous)
        return array._signature


class ExtendedOperand(Exception):
    """Raised by eager evaluation's fast path on meeting an extended operand."""


def is_extended(aval):
    return isinstance(aval.dtype, ExtendedDType)


def physical_aval(aval):
    dtype = aval.dtype
    if isinstance(dtype, ExtendedDType):
        return ShapedArray(aval.shape + dtype.physical_shape, dtype.physical_dtype)
    return aval


def physical_value(x):
    return x._physical if isinstance(x, ExtendedArray) else x


def wrap_physical(value, aval):
    """A physical result as the value of logical type `aval`."""
    return aval.dtype.wrap(value) if isinstance(aval.dtype, ExtendedDType) else value


def _aval(x):
    return x.aval if hasattr(x, "aval") else as_array_argument(x).aval


def evaluate(primitive, args, params):
    """Eager evaluation of a primitive with extended operands: its logical result types
    (with the type errors traced code gets), then its physical rule on the data."""
    in_avals = [_aval(x) for x in args]
    out_avals = primitive.abstract_eval_list(in_avals, params)
    outs = rule_of(primitive, in_avals, params)(in_avals, *map(physical_value, args), **params)
    outs = outs if primitive.multiple_results else [outs]
    wrapped = [wrap_physical(o, a) for o, a in zip(outs, out_avals)]
    return wrapped if primitive.multiple_results else wrapped[0]


def rule_of(primitive, in_avals, params):
    rule = physical_rules.get(primitive)
    if rule is not None:
        return rule
    if any(map(_holds_jaxprs, params.values())):
        return _call_rule(primitive)
    shown = ", ".join(a.dtype.name for a in in_avals)
    raise TypeError(f"{primitive.name} does not accept dtypes {shown}.")


def _call_rule(primitive):
    """The rule of a primitive whose params hold jaxprs (jit, cond, while, scan, custom
    derivatives): the same primitive on the physical forms of its bodies, which keep
    their numbers of inputs and outputs (each extended value is one physical value)."""
    def rule(in_avals, *operands, **params):
        params = {name: _physical_param(value) for name, value in params.items()}
        return primitive.bind(*operands, **params)
    return rule


def _holds_jaxprs(value):
    return isinstance(value, ClosedJaxpr) or (
        isinstance(value, tuple) and value and all(isinstance(v, ClosedJaxpr) for v in value))


def _physical_param(value):
    if not _holds_jaxprs(value):
        return value
    return tuple(map(physicalize, value)) if isinstance(value, tuple) else physicalize(value)


# ---------------------------------------------------------------- jaxprs to physical form

_physical_forms = weakref.WeakKeyDictionary()


def physicalize(closed):
    """`closed` with every extended value replaced by its physical data; `closed` itself
    when it has none (memoized: a jaxpr keeps one physical form, and so one executable)."""
    found = _physical_forms.get(closed)
    if found is None:
        found = _physicalize(closed) if has_extended(closed.jaxpr) else closed
        _physical_forms[closed] = found
    return found


def _physicalize(closed):
    from jaxlite.core.staging import trace_to_jaxpr
    jaxpr = closed.jaxpr
    consts = [physical_value(c) for c in closed.consts]

    def run(*args):
        return _eval_physical(jaxpr, consts, args)
    physical = trace_to_jaxpr(run, [physical_aval(v.aval) for v in jaxpr.invars], "physical form")
    # A rule may compute with extended values again (random_gamma on typed keys): repeat.
    return _physicalize(physical) if has_extended(physical.jaxpr) else physical


def _eval_physical(jaxpr, consts, args):
    from jaxlite.core.staging import literal_value
    env = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        return literal_value(v) if isinstance(v, Literal) else env[v]
    for eqn in jaxpr.eqns:
        ins = list(map(read, eqn.inputs))
        if _eqn_has_extended(eqn):
            in_avals = [v.aval for v in eqn.inputs]
            outs = rule_of(eqn.primitive, in_avals, eqn.params)(in_avals, *ins, **eqn.params)
        else:
            outs = eqn.primitive.bind(*ins, **eqn.params)
        env.update(zip(eqn.outputs, outs if eqn.primitive.multiple_results else [outs]))
    return [read(v) for v in jaxpr.outvars]


def has_extended(jaxpr):
    return any(is_extended(v.aval) for v in jaxpr.invars + jaxpr.constvars + jaxpr.outvars) or \
        any(map(_eqn_has_extended, jaxpr.eqns))


def _eqn_has_extended(eqn):
    return any(is_extended(v.aval) for v in eqn.inputs + eqn.outputs) or any(
        has_extended(j.jaxpr if isinstance(j, ClosedJaxpr) else j) for j in sub_jaxprs(eqn))
