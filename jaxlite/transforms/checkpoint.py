"""checkpoint (remat): trade memory for recomputation in reverse mode.

`checkpoint(f)` binds a call primitive holding f's jaxpr. Its JVP is the same
primitive on the JVP of the body. When linearizing, the body is split by
`split_jaxpr` under the checkpoint's policy: values the policy does not let us
save are not kept as residuals; the staged (unknown) part recomputes them from
the checkpoint's inputs during the backward pass, where `backward_pass`
evaluates the non-linear equations of the body before transposing the rest.
"""
import functools
import inspect
import types

from jaxlite.core.array import as_array_argument
from jaxlite.core.primitive import Primitive, call_primitives, compiler_rewrites
from jaxlite.core.ir import Var
from jaxlite.core.staging import _split_static, _with_static, abstractify, flatten_fun, trace_to_jaxpr
from jaxlite.core.tree_util import tree_flatten, tree_map, tree_unflatten
from jaxlite.transforms import ad, batching
from jaxlite.transforms.partial_eval import call_partial_eval_rule, partial_eval_rules


# ---------------------------------------------------------------- names

name_p = Primitive("name")
name_p.def_impl(lambda x, name: x)
name_p.def_abstract_eval(lambda aval, name: aval)
ad.deflinear(name_p, lambda ct, x, name: [ct])
batching.batch_rules[name_p] = lambda args, dims, name: (name_p.bind(args[0], name=name), dims[0])
# Compiled code has no use for names: the program reads the operand itself.
compiler_rewrites[name_p] = lambda x, memory_orders, name: x


def checkpoint_name(x, name):
    """x, tagged `name` for the checkpoint policies that save or offload values by name."""
    return tree_map(lambda leaf: name_p.bind(as_array_argument(leaf), name=name), x)


# ---------------------------------------------------------------- policies
# As JAX spells them: policy(primitive, *input_avals, **params) -> may its output be saved?
# A policy may answer with a bool or with Saveable, Recompute or Offloadable(src, dst);
# offloading has nowhere to go on one device, so an offloadable value is saved.

class _Decision:
    def __init__(self, name, saved):
        self.name, self.saved = name, saved

    def __bool__(self):
        return self.saved

    def __repr__(self):
        return self.name


Saveable = _Decision("Saveable", True)
Recompute = _Decision("Recompute", False)


class Offloadable(_Decision):
    def __init__(self, src, dst):
        super().__init__(f"Offloadable(src={src!r}, dst={dst!r})", True)
        self.src, self.dst = src, dst


def nothing_saveable(primitive, *avals, **params):
    return False


def everything_saveable(primitive, *avals, **params):
    return True


def dots_saveable(primitive, *avals, **params):
    return primitive.name == "dot_general"


def dots_with_no_batch_dims_saveable(primitive, *avals, **params):
    return primitive.name == "dot_general" and not any(params["dimension_numbers"][1])


def offload_dot_with_no_batch_dims(offload_src, offload_dst):
    def policy(primitive, *avals, **params):
        if dots_with_no_batch_dims_saveable(primitive, *avals, **params):
            return Offloadable(offload_src, offload_dst)
        return Recompute
    return policy


def _is_named(primitive, params, names):
    return primitive is name_p and params["name"] in names


def save_only_these_names(*names):
    def policy(primitive, *avals, **params):
        return _is_named(primitive, params, names)
    return policy


def save_any_names_but_these(*names):
    def policy(primitive, *avals, **params):
        return primitive is name_p and params["name"] not in names
    return policy


def save_anything_except_these_names(*names):
    def policy(primitive, *avals, **params):
        return not _is_named(primitive, params, names)
    return policy


def save_from_both_policies(policy_1, policy_2):
    def policy(primitive, *avals, **params):
        return bool(policy_1(primitive, *avals, **params)) or bool(policy_2(primitive, *avals, **params))
    return policy


def save_and_offload_only_these_names(*, names_which_can_be_saved, names_which_can_be_offloaded,
                                      offload_src, offload_dst):
    def policy(primitive, *avals, **params):
        if _is_named(primitive, params, names_which_can_be_saved):
            return Saveable
        if _is_named(primitive, params, names_which_can_be_offloaded):
            return Offloadable(offload_src, offload_dst)
        return Recompute
    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable, nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable, checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these, save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names)


def _saveable(params):
    policy = params["policy"] or nothing_saveable

    def saveable(eqn):
        return bool(policy(eqn.primitive, *[v.aval for v in eqn.inputs], **eqn.params))
    return saveable


remat_p = Primitive("checkpoint", multiple_results=True)
remat_p.def_impl(ad.call_impl)
remat_p.def_abstract_eval(lambda *avals, jaxpr, **params: jaxpr.out_avals)
# Inlined under jit, where the recomputation may be merged with the forward pass (CSE):
# the same values, without the memory saving prevent_cse asks XLA for.
call_primitives.add(remat_p)
ad.jvp_rules[remat_p] = ad.call_jvp_rule(remat_p)
ad.transpose_rules[remat_p] = ad.call_transpose_rule
batching.axis_batch_rules[remat_p] = batching.call_batch_rule(remat_p)
partial_eval_rules[remat_p] = call_partial_eval_rule(remat_p, _saveable)


def checkpoint(fun=None, *, prevent_cse=True, policy=None, static_argnums=(), static_argnames=()):
    """fun, but reverse mode saves only what `policy` allows and recomputes the rest.

    The default policy saves nothing: only the inputs of the checkpointed call.
    """
    if fun is None:
        return functools.partial(checkpoint, prevent_cse=prevent_cse, policy=policy,
                                 static_argnums=static_argnums, static_argnames=static_argnames)
    static_argnames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)

    @functools.wraps(fun)
    def remat_fun(*args, **kwargs):
        dynamic, static = _split_static(args, static_argnums)
        static_kwargs = {k: v for k, v in kwargs.items() if k in static_argnames}
        dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
        body, operands, out_tree = ad.trace_call(
            lambda dyn, kw: _with_static(fun, static)(*dyn, **kw, **static_kwargs), (dynamic, dynamic_kwargs),
            f"checkpoint of {getattr(fun, '__name__', 'fun')}")
        outs = remat_p.bind(*operands, jaxpr=body, policy=policy, prevent_cse=prevent_cse)
        return tree_unflatten(out_tree, outs)
    return remat_fun


remat = checkpoint


# ---------------------------------------------------------------- which residuals are saved

def saved_residuals(fun, *args, **kwargs):
    """The values reverse mode keeps from fun's forward pass: [(ShapedArray, where from)]."""
    flat_args, in_tree = tree_flatten((args, kwargs))
    flat_fun, _ = flatten_fun(fun, in_tree)

    def residuals_of(*leaves):
        _, _, linear, _ = ad.linearize_flat(lambda *xs: (flat_fun(*xs), []), leaves)
        return linear.consts
    closed = trace_to_jaxpr(residuals_of, [abstractify(x) for x in flat_args], "saved_residuals")
    names = _argument_names(fun, args, kwargs)
    origins = [(v.aval, _origin(closed.jaxpr, v)) for v in closed.jaxpr.outvars if isinstance(v, Var)]
    # As JAX lists them: the arguments first, in order, then the computed values.
    origins.sort(key=lambda pair: pair[1][1] if pair[1][0] == "argument" else len(names))
    return [(aval, _describe(origin, names)) for aval, origin in origins]


def print_saved_residuals(fun, *args, **kwargs):
    """Print, one a line, the residuals reverse mode saves when differentiating fun at args."""
    for aval, where in saved_residuals(fun, *args, **kwargs):
        print(f"{aval.str_short()} {where}")


def _origin(jaxpr, var):
    """What computes `var`: ("argument", position), ("eqn", eqn), or ("constant",);
    looking through the calls (checkpoint, jit) that only pass a value on."""
    if var in jaxpr.invars:
        return "argument", jaxpr.invars.index(var)
    producer = next((eqn for eqn in jaxpr.eqns if var in eqn.outputs), None)
    if producer is None:
        return ("constant",)
    if producer.primitive not in call_primitives:
        return "eqn", producer
    body = producer.params["jaxpr"].jaxpr
    inner = body.outvars[producer.outputs.index(var)]
    origin = _origin(body, inner) if isinstance(inner, Var) else ("constant",)
    if origin[0] == "argument":
        outer = producer.inputs[origin[1] - len(body.constvars)] if origin[1] >= len(body.constvars) else None
        return _origin(jaxpr, outer) if isinstance(outer, Var) else ("constant",)
    return origin


def _describe(origin, argument_names):
    if origin[0] == "argument":
        return f"from the argument {argument_names[origin[1]]}"
    if origin[0] == "constant":
        return "from a constant"
    eqn = origin[1]
    info = eqn.source_info
    where = f" from {info.filename}:{info.lineno} ({info.function})" if info is not None else ""
    if eqn.primitive is name_p:
        return f"named {eqn.params['name']!r}{where}"
    return f"output of {eqn.primitive.name}{where}"


def _argument_names(fun, args, kwargs):
    """A name per flat argument: the parameter's, with the leaf's index in a pytree."""
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        bound = {f"args[{i}]": a for i, a in enumerate(args)} | kwargs
    names = []
    for name, value in bound.items():
        leaves = tree_flatten(value)[0]
        names += [name] if len(leaves) == 1 else [f"{name}[{i}]" for i in range(len(leaves))]
    return names
