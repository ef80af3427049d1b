"""The high-level IR: a jaxpr is a typed list of equations in A-normal form.

Every transformation reads or writes this form. Variables are plain objects
compared by identity; names are given only when a jaxpr is printed.
"""
import enum

import numpy as np

from jaxlite.core.abstract import ShapedArray
from jaxlite.core.errors import JaxprTypeError


class Var:
    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"Var({self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in the IR (Python scalars become these)."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval):
        self.val, self.aval = val, aval

    def __repr__(self):
        return f"Literal({self.val})"


class Eqn:
    __slots__ = ("primitive", "inputs", "params", "outputs", "source_info")

    def __init__(self, primitive, inputs, params, outputs, source_info=None):
        self.primitive, self.inputs, self.params = primitive, list(inputs), dict(params)
        self.outputs, self.source_info = list(outputs), source_info

    # JAX's names for them, which code walking a jaxpr uses.
    invars = property(lambda self: self.inputs)
    outvars = property(lambda self: self.outputs)

    def replace(self, **changes):
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return Eqn(**fields)

    def __repr__(self):
        return pretty_print_eqn(self, _Namer())


class Jaxpr:
    """constvars are bound to the consts of a ClosedJaxpr; invars to the arguments."""

    __slots__ = ("constvars", "invars", "eqns", "outvars")

    def __init__(self, constvars, invars, eqns, outvars):
        self.constvars, self.invars = list(constvars), list(invars)
        self.eqns, self.outvars = list(eqns), list(outvars)

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])

    def __str__(self):
        return pretty_print(self)

    __repr__ = __str__


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars."""

    __slots__ = ("jaxpr", "consts", "__weakref__")

    def __init__(self, jaxpr, consts):
        assert len(jaxpr.constvars) == len(consts)
        self.jaxpr, self.consts = jaxpr, list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    literals = property(lambda self: self.consts)      # JAX's name for them

    def __str__(self):
        return pretty_print(self.jaxpr)

    __repr__ = __str__


# ---------------------------------------------------------------- printing

class _Namer:
    """Gives variables the short names JAX uses: a, b, ..., z, ba, bb, ..."""

    def __init__(self):
        self.names = {}
        self.unused = set()     # equation outputs nothing reads: printed `_`, as JAX prints them

    def __call__(self, var):
        if isinstance(var, Literal):
            return f"{_literal_text(var.val)}:{var.aval.str_short()}"
        if var not in self.names:
            self.names[var] = _base26(len(self.names))
        return self.names[var]

    def binder(self, var):
        name = "_" if var in self.unused else self(var)
        return f"{name}:{var.aval.str_short()}"


def _base26(n):
    letters = "abcdefghijklmnopqrstuvwxyz"
    name = letters[n % 26]
    while n >= 26:
        n //= 26
        name = letters[n % 26] + name
    return name


def _literal_text(val):
    val = np.asarray(val)
    return str(val.item()) if val.dtype != bool else str(bool(val))


# primitive -> eqn -> the params to print, in order (a list of pairs), where JAX prints
# others than the equation holds (dot_general's resolved output type, broadcast_in_dim
# without the shape its output shows, a jit's name first).
pp_params_rules = {}


def print_params_jaxlite_omits(primitive, **values):
    """Print `primitive`'s equations with params JAX's has and jaxlite's does not need (e.g.
    `out_sharding=None`: one CPU device), among its own in sorted order, as JAX prints them."""
    pp_params_rules[primitive] = lambda eqn: sorted({**values, **eqn.params}.items())


class FreshlyNamed:
    """A jaxpr param printed with names of its own (as JAX prints a jit's body)."""

    def __init__(self, jaxpr):
        self.jaxpr = jaxpr


def _param_text(value, namer, indent):
    if isinstance(value, FreshlyNamed):
        return _param_text(value.jaxpr, _Namer(), indent)
    if isinstance(value, (Jaxpr, ClosedJaxpr)):
        jaxpr = value.jaxpr if isinstance(value, ClosedJaxpr) else value
        return pretty_print(jaxpr, indent, namer)
    if isinstance(value, tuple) and value and all(isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value):
        inner = [(" " * (indent + 2)) + _param_text(v, namer, indent + 2) for v in value]
        return "(\n" + "\n".join(inner) + "\n" + " " * indent + ")"
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, enum.Enum):     # as JAX, str(): an IntEnum's number (fft_type=0), else Class.NAME
        return str(value)
    if isinstance(value, str):
        return value
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return repr(value)


def pretty_print_eqn(eqn, namer, indent=4):
    """One equation; as JAX, its params go one a line when they hold a jaxpr or run long."""
    # An equation with no results (dce_sink, debug_print) has no left-hand side, as in JAX.
    lhs = "".join(f"{namer.binder(v)} " for v in eqn.outputs) + "= " if eqn.outputs else ""
    args = " ".join(namer(v) for v in eqn.inputs)
    rule = pp_params_rules.get(eqn.primitive)
    shown = rule(eqn) if rule is not None else sorted(eqn.params.items())
    params = [f"{k}={_param_text(v, namer, indent + 2)}" for k, v in shown]
    line = f"{lhs}{eqn.primitive.name}[{' '.join(params)}] {args}" if params else \
        f"{lhs}{eqn.primitive.name} {args}"
    # JAX keeps the space before an empty operand list (`a:Tok = create_token `).
    if not params or ("\n" not in line and len(line) + indent <= 80):
        return line
    pad = " " * indent
    listed = "".join(f"\n{pad}  {p}" for p in params)
    return f"{lhs}{eqn.primitive.name}[{listed}\n{pad}] {args}"


def pretty_print(jaxpr, indent=0, namer=None):
    """JAX's readable form: `{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }`. A jaxpr
    inside an equation's params continues its parent's names (`namer`), as JAX's do."""
    namer = _Namer() if namer is None else namer
    consts = " ".join(namer.binder(v) for v in jaxpr.constvars)
    args = " ".join(namer.binder(v) for v in jaxpr.invars)
    read = {v for e in jaxpr.eqns for v in e.inputs if isinstance(v, Var)} | set(jaxpr.outvars)
    namer.unused.update(v for e in jaxpr.eqns for v in e.outputs if v not in read)
    eqns = [pretty_print_eqn(e, namer, indent + 4) for e in jaxpr.eqns]
    names = [namer(v) for v in jaxpr.outvars]
    outs = f"({names[0]},)" if len(names) == 1 else "(" + ", ".join(names) + ")"
    one_line = f"{{ lambda {consts}; {args}. let {'; '.join(eqns)} in {outs} }}"
    if "\n" not in one_line and len(one_line) + indent <= 80:
        return one_line
    pad = " " * indent
    body = "".join(f"\n{pad}    {e}" for e in eqns) or f"\n{pad}    "    # JAX keeps an empty body's line
    return f"{{ lambda {consts}; {args}. let{body}\n{pad}  in {outs} }}"


# ---------------------------------------------------------------- typechecking

def _same_type(a, b):
    return a.shape == b.shape and a.dtype == b.dtype


def typecheck(jaxpr):
    """Re-derive every equation's output types; raise JaxprTypeError naming the equation."""
    if isinstance(jaxpr, ClosedJaxpr):
        jaxpr = jaxpr.jaxpr
    defined = set(jaxpr.constvars) | set(jaxpr.invars)
    namer = _Namer()
    for v in jaxpr.constvars + jaxpr.invars:
        namer(v)
    for index, eqn in enumerate(jaxpr.eqns):
        _check_eqn(eqn, index, defined, namer)
        defined.update(eqn.outputs)
    for v in jaxpr.outvars:
        if isinstance(v, Var) and v not in defined:
            raise JaxprTypeError(f"output variable {namer(v)} is never defined")
    return jaxpr


def _check_eqn(eqn, index, defined, namer):
    where = lambda: f"in equation {index} `{pretty_print_eqn(eqn, namer)}`"
    for v in eqn.inputs:
        if isinstance(v, Var) and v not in defined:
            raise JaxprTypeError(f"{where()}: variable {namer(v)} is used before it is defined")
    try:
        expected = eqn.primitive.abstract_eval_list([v.aval for v in eqn.inputs], eqn.params)
    except Exception as err:
        raise JaxprTypeError(f"{where()}: the inputs are invalid for {eqn.primitive.name}: {err}") from err
    if len(expected) != len(eqn.outputs):
        raise JaxprTypeError(f"{where()}: {eqn.primitive.name} produces {len(expected)} outputs, "
                             f"the equation binds {len(eqn.outputs)}")
    for out, aval in zip(eqn.outputs, expected):
        if not _same_type(out.aval, aval):
            raise JaxprTypeError(f"{where()}: output {namer(out)} is declared {out.aval.str_short()} "
                                 f"but {eqn.primitive.name} produces {aval.str_short()}")


def literal(val, dtype, weak_type=False):
    val = np.array(val, dtype=dtype)[()]
    return Literal(val, ShapedArray((), dtype, weak_type))


# ---------------------------------------------------------------- effects

def has_effects(eqn):
    """Does running eqn do more than compute its outputs?

    Primitives are pure except those marked `effectful` (debug callbacks); an
    equation holding a jaxpr (a call, a loop, a cond) has the effects of its body.
    Passes must never drop, merge or reorder effectful equations.
    """
    if getattr(eqn.primitive, "effectful", False):
        return True
    return any(jaxpr_has_effects(j) for j in sub_jaxprs(eqn))


def jaxpr_has_effects(jaxpr):
    if isinstance(jaxpr, ClosedJaxpr):
        jaxpr = jaxpr.jaxpr
    return any(has_effects(eqn) for eqn in jaxpr.eqns)


def sub_jaxprs(eqn):
    """The jaxprs an equation holds in its params (a body, or a tuple of branches)."""
    for value in eqn.params.values():
        values = value if isinstance(value, tuple) else (value,)
        yield from (v for v in values if isinstance(v, (Jaxpr, ClosedJaxpr)))


# ---------------------------------------------------------------- dead-code elimination

def dce(jaxpr, used_outputs=None, prune_invars=False, keep_effects=True):
    """Drop the equations no wanted output depends on.

    Returns (new_jaxpr, used_constvars, used_invars): the masks say which
    constvars and invars the remaining equations read. Unused constvars are
    always removed (the caller drops the matching consts with the mask); unused
    invars only when `prune_invars`, since callers usually keep the signature.
    An equation is dead when none of its outputs is needed and it has no effect
    (see `has_effects`); a higher-order equation is kept or dropped whole.
    `keep_effects=False` is for extracting a pure part of a jaxpr whose effects
    run elsewhere.
    """
    if used_outputs is None:
        used_outputs = [True] * len(jaxpr.outvars)
    outvars = [v for v, used in zip(jaxpr.outvars, used_outputs) if used]
    live = {v for v in outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in live for v in eqn.outputs) or keep_effects and has_effects(eqn):
            kept.append(eqn)
            live.update(v for v in eqn.inputs if isinstance(v, Var))
    used_constvars = [v in live for v in jaxpr.constvars]
    used_invars = [v in live for v in jaxpr.invars]
    constvars = [v for v, used in zip(jaxpr.constvars, used_constvars) if used]
    invars = [v for v, used in zip(jaxpr.invars, used_invars) if used] if prune_invars else jaxpr.invars
    return Jaxpr(constvars, invars, kept[::-1], outvars), used_constvars, used_invars


def dce_closed(closed, used_outputs=None, keep_effects=True):
    """dce for a ClosedJaxpr: keeps every invar, drops the consts nothing reads."""
    jaxpr, used_consts, _ = dce(closed.jaxpr, used_outputs, keep_effects=keep_effects)
    return ClosedJaxpr(jaxpr, [c for c, used in zip(closed.consts, used_consts) if used])


def constvars_as_invars(closed):
    """Closure conversion: the consts become leading arguments of a const-free jaxpr.

    A higher-order primitive binds the consts as ordinary operands, so tracers of
    enclosing transformations that a function closes over flow through the
    transformations' rules instead of hiding inside a parameter.
    """
    jaxpr = closed.jaxpr
    converted = Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.eqns, jaxpr.outvars)
    return ClosedJaxpr(converted, []), list(closed.consts)
