"""jax._src.lib.mlir.dialects.hlo's elementwise operations, on jaxlite's values.

jaxlite has no MLIR: a lowering rule registered with jax.interpreters.mlir.register_lowering
is called with jaxlite's traced values, and these operations compute on them with lax,
so a rule written with them (as JAX's "primitives" tutorial writes one) compiles natively.
"""
from jaxlite import lax


class _Operation:
    """An operation's view: `.result` (and `.results`) is its value."""

    compute = None

    def __init__(self, *operands):
        self.result = type(self).compute(*[x.result if isinstance(x, _Operation) else x for x in operands])
        self.results = [self.result]


def _operation(name, fun):
    return type(name, (_Operation,), {"compute": staticmethod(fun), "__doc__": f"hlo.{name}: lax's {fun.__name__}"})


AddOp = _operation("AddOp", lax.add)
SubtractOp = _operation("SubtractOp", lax.sub)
MulOp = _operation("MulOp", lax.mul)
DivOp = _operation("DivOp", lax.div)
NegOp = _operation("NegOp", lax.neg)
MaxOp = _operation("MaxOp", lax.max)
MinOp = _operation("MinOp", lax.min)
ExpOp = _operation("ExpOp", lax.exp)
LogOp = _operation("LogOp", lax.log)
SqrtOp = _operation("SqrtOp", lax.sqrt)
TanhOp = _operation("TanhOp", lax.tanh)
SineOp = _operation("SineOp", lax.sin)
CosineOp = _operation("CosineOp", lax.cos)
AbsOp = _operation("AbsOp", lax.abs)
PowOp = _operation("PowOp", lax.pow)
