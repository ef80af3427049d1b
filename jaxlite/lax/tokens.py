"""Ordering tokens (lax.create_token, lax.after_all) and lax.dce_sink, as JAX has them.

A token carries no data: XLA threads them through side-effecting operations to order
them. jaxlite runs a program's effects in program order already, so a token only has
to be a value of its own type that jit, vmap and control flow carry: an array of the
extended dtype `token` (core/extended.py), typed `Tok` in jaxprs, whose physical form
is a boolean scalar that compiled code passes along and never reads.
"""
import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.abstract import ShapedArray
from jaxlite.core.extended import ExtendedArray, physical_rules
from jaxlite.core.primitive import Primitive
from jaxlite.transforms import ad, batching


class TokenDType(dtypes.ExtendedDType):
    name = "token"
    physical_shape = ()
    physical_dtype = np.dtype(np.bool_)
    itemsize = 0

    def __eq__(self, other):
        return isinstance(other, TokenDType)

    def __hash__(self):
        return hash("TokenDType")

    def wrap(self, data):
        return Token(self, data)


TOKEN = TokenDType()


class AbstractToken(ShapedArray):
    """The type of a token, printed `Tok` in jaxprs as JAX prints it."""

    __slots__ = ()

    def __init__(self):
        super().__init__((), TOKEN)

    def __eq__(self, other):
        return type(other) is AbstractToken

    def __hash__(self):
        return hash("AbstractToken")

    def update(self, shape=None, dtype=None, weak_type=None):
        return self

    def str_short(self):
        return "Tok"

    def __str__(self):
        return "AbstractToken()"

    __repr__ = __str__


class Token(ExtendedArray):
    """A concrete token (what lax.create_token returns outside a trace)."""

    __slots__ = ()
    aval = property(lambda self: AbstractToken())

    def __repr__(self):
        return f"<jaxlite Token object at {id(self):#x}>"


def _token_data(in_avals, *args, **params):
    from jaxlite.lax.shapes import full
    return full((), False, np.bool_)


def _check_tokens(*avals):
    for aval in avals:
        if not isinstance(aval, AbstractToken):
            raise TypeError(f"after_all requires token operands, got {aval.str_short()}")
    return AbstractToken()


def _unbatched_token(args, dims, **params):
    """A batch of tokens is one token: tokens order effects, they hold no values."""
    return create_token_p.bind(), batching.not_mapped


create_token_p = Primitive("create_token")
create_token_p.def_impl(lambda: np.array(False))
create_token_p.def_abstract_eval(lambda: AbstractToken())
physical_rules[create_token_p] = _token_data
ad.defjvp_zero(create_token_p)

after_all_p = Primitive("after_all")
after_all_p.def_impl(lambda *tokens: np.array(False))
after_all_p.def_abstract_eval(_check_tokens)
physical_rules[after_all_p] = _token_data
batching.batch_rules[after_all_p] = _unbatched_token
ad.defjvp_zero(after_all_p)


def create_token(*_):
    """A fresh token (any argument is ignored, as in JAX)."""
    return create_token_p.bind()


def after_all(*operands):
    """A token that comes after all the given tokens."""
    return after_all_p.bind(*operands)


# ---------------------------------------------------------------- dce_sink

def _dce_sink_batch(args, dims, prevent_mlir_dce):
    dce_sink_p.bind(*args, prevent_mlir_dce=prevent_mlir_dce)
    return [], []


# It has no results, so the compiler's dead-code elimination removes it (nothing in compiled
# code needs keeping alive); jaxprs show it, as JAX's do.
dce_sink_p = Primitive("dce_sink", multiple_results=True)
dce_sink_p.def_impl(lambda val, prevent_mlir_dce: [])
dce_sink_p.def_abstract_eval(lambda val, prevent_mlir_dce: [])
batching.batch_rules[dce_sink_p] = _dce_sink_batch
ad.defjvp_zero(dce_sink_p)


def dce_sink(val, *, prevent_mlir_dce=False):
    """Keep `val` (an array or a pytree of them) from being removed as dead code; returns None."""
    from jaxlite.core.tree_util import tree_leaves
    for leaf in tree_leaves(val):
        dce_sink_p.bind(leaf, prevent_mlir_dce=bool(prevent_mlir_dce))
