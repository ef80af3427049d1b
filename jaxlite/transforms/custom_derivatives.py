"""custom_jvp and custom_vjp: user-supplied derivative rules, as primitives.

Calling a decorated function traces it into a jaxpr and binds a primitive
(custom_jvp_call / custom_vjp_call) holding that jaxpr and the user's rule, so
every transformation sees one equation: eager evaluation and vmap run the
jaxpr, differentiation calls the rule. The jaxpr is closure-converted: values
the function closes over become leading operands (`num_consts` of them). The
rule sees only the function's own arguments, so no tangent flows through a
closed-over value, as in JAX.

Reverse mode of custom_vjp: the JVP rule runs `fwd` at once and emits a
custom_lin equation on the tangents holding the residuals; partial evaluation
stages it into the linear jaxpr and its transpose rule calls `bwd`. Forward
mode reaching custom_lin on its own is the error JAX reports.
"""
import functools
import inspect

from jaxlite.core.array import as_array_argument
from jaxlite.core.primitive import Primitive, call_primitives
from jaxlite.core.ref import Ref
from jaxlite.core.trace import EVAL_TRACE, current_trace, set_current_trace
from jaxlite.core.tree_util import tree_flatten, tree_map, tree_unflatten
from jaxlite.transforms import ad, batching
from jaxlite.transforms.batching import bdim_at_front, vmap


def _resolve_args(fun, args, kwargs):
    """Keyword arguments moved into their positions, as the rules take positional arguments."""
    if not kwargs:
        return tuple(args)
    bound = inspect.signature(fun).bind(*args, **kwargs)
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(f"keyword-only arguments {sorted(bound.kwargs)} are not supported by "
                        "custom_jvp and custom_vjp functions")
    return tuple(bound.args)


class _Split:
    """Separate the nondiff arguments (fixed Python values for the rules) from the rest."""

    def __init__(self, args, nondiff_argnums):
        positions = {i % len(args) for i in nondiff_argnums}
        self.nondiff = [(i, args[i]) for i in sorted(positions)]
        self.diff = tuple(a for i, a in enumerate(args) if i not in positions)

    def nondiff_values(self):
        return [value for _, value in self.nondiff]

    def merge(self, diff):
        return _insert_at(diff, self.nondiff)


def _insert_at(values, positioned):
    """values with each (position, value) of `positioned` inserted, in increasing position."""
    full = list(values)
    for i, value in sorted(positioned, key=lambda pair: pair[0]):
        full.insert(i, value)
    return full


def _check_outputs(what, rule_name, got, expected):
    for position, (out, aval) in enumerate(zip(got, expected)):
        out_aval = ad.aval_of(out)
        if out_aval.shape != aval.shape or out_aval.dtype != aval.dtype:
            raise TypeError(f"Custom {what} rule {rule_name} must produce outputs with the same shapes "
                            f"and dtypes as the primal function, but output {position} has type "
                            f"{out_aval.str_short()} where {aval.str_short()} was expected")


def _call_abstract_eval(*avals, jaxpr, **params):
    return jaxpr.out_avals


def _call_batch_rule(primitive):
    """vmap of a custom_jvp/custom_vjp call: every operand gets a leading batch axis, so
    the batched rule needs no dims bookkeeping; the body and the rule are batched over
    the enclosing axis, its name included (for collectives inside)."""
    def batch_rule(axis, args, dims, jaxpr, rule, num_consts):
        size = axis.axis_size
        args = [bdim_at_front(x, d, size) for x, d in zip(args, dims)]
        body, _ = batching.batch_jaxpr(jaxpr, [0] * len(args), size, axis.axis_name, force_out=True)
        outs = primitive.bind(*args, jaxpr=body, rule=_BatchedRule(rule, axis.axis_name),
                              num_consts=num_consts)
        return outs, [0] * len(outs)
    return batch_rule


# ---------------------------------------------------------------- custom_jvp

class _CustomFunction:
    """What custom_jvp and custom_vjp share: tracing the function and binding its primitive."""

    kind = "custom"

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun, self.nondiff_argnums = fun, tuple(nondiff_argnums)

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "fun")
        self._check_defined(name)
        split = _Split(_resolve_args(self.fun, args, kwargs), self.nondiff_argnums)
        trace = current_trace()
        if trace is EVAL_TRACE:
            return self.fun(*split.merge(split.diff))
        if _known_in_partial_eval(trace, split):
            with set_current_trace(trace.parent):
                return self(*args, **kwargs)
        differentiated = self._differentiate_directly(split)
        if differentiated is not None:
            return differentiated
        body, operands, out_tree = ad.trace_call(lambda *diff: self.fun(*split.merge(diff)),
                                                 split.diff, f"{self.kind} function {name}")
        flat_diff, in_tree = tree_flatten(split.diff)
        outs = self._bind(operands, body, split, in_tree, out_tree, len(operands) - len(flat_diff))
        return tree_unflatten(out_tree, outs)


    def _differentiate_directly(self, split):
        """Differentiated at once (a JVP trace, a nonzero tangent), apply the rule without
        tracing the function: as JAX, which calls the primal function only where it runs."""
        trace = current_trace()
        if not isinstance(trace, ad.JVPTrace):
            return None
        flat_diff, in_tree = tree_flatten(split.diff)
        pairs = [_ref_and_zero(x) if isinstance(x, Ref) else trace.primal_and_tangent(as_array_argument(x))
                 for x in flat_diff]
        if all(ad.is_zero(t) for _, t in pairs):
            return None
        rule = self._flat_rule(split, in_tree, None, None)
        with set_current_trace(trace.parent):
            outs, out_dots = self._rule_jvp([p for p, _ in pairs], [t for _, t in pairs], rule)
        return tree_unflatten(rule.out_tree, [trace.new_tracer(p, t) for p, t in zip(outs, out_dots)])


def _known_in_partial_eval(trace, split):
    """On the known side of reverse mode the call belongs to the parent trace, as a primitive's
    does: run eagerly there, the function itself runs on concrete values (so it may branch on
    them in Python, as in JAX); under an outer transformation its custom rule still applies."""
    from jaxlite.transforms.partial_eval import PartialEvalTrace
    return isinstance(trace, PartialEvalTrace) and not any(
        trace.is_unknown(x) for x in tree_flatten(split.diff)[0])


def _ref_and_zero(ref):
    """A Ref argument of a rule (a place for the rule to write, e.g. stashed gradients):
    passed as it is, with no tangent."""
    return ref, ad.Zero(ad.tangent_aval(ref.aval.inner_aval))


class custom_jvp(_CustomFunction):
    """A function with a custom JVP rule: `f.defjvp(rule)` with rule(primals, tangents)."""

    kind = "custom_jvp"

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.jvp = None
        self.symbolic_zeros = False

    def defjvp(self, jvp, symbolic_zeros=False):
        """rule(*nondiff_args, primals, tangents) -> (primal_out, tangent_out).

        With symbolic_zeros, the tangent of an argument that does not vary is a
        SymbolicZero instead of an array of zeros, and the rule may return
        SymbolicZero for an output tangent that is zero.
        """
        self.jvp, self.symbolic_zeros = jvp, symbolic_zeros
        return jvp

    def defjvps(self, *jvps):
        """One function per argument: jvp_i(tangent_i, primal_out, *primals); None means zero."""
        def jvp(*args):
            *nondiff, primals, tangents = args
            out = self.fun(*_insert_at(primals, zip(self.nondiff_argnums, nondiff)))
            out_dot = None
            for partial, t in zip(jvps, tangents):
                if partial is not None:
                    term = partial(t, out, *primals)
                    out_dot = term if out_dot is None else tree_map(_add, out_dot, term)
            return out, tree_map(_zeros_like, out) if out_dot is None else out_dot
        self.defjvp(jvp)

    def _check_defined(self, name):
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")

    def _flat_rule(self, split, in_tree, out_tree, out_avals):
        return _FlatJVP(self.jvp, split, in_tree, out_tree, out_avals, self.symbolic_zeros)

    @staticmethod
    def _rule_jvp(primals, tangents, rule):
        return _apply_jvp_rule(primals, tangents, rule)

    def _bind(self, operands, body, split, in_tree, out_tree, num_consts):
        rule = self._flat_rule(split, in_tree, out_tree, body.out_avals)
        return custom_jvp_call_p.bind(*operands, jaxpr=body, rule=rule, num_consts=num_consts)


def _add(a, b):
    from jaxlite import lax
    return lax.add(a, b)


def _zeros_like(x):
    from jaxlite import lax
    return lax.full(ad.aval_of(x).shape, 0, ad.aval_of(x).dtype)


class _FlatJVP:
    """The user's JVP rule on flat lists: (primals, tangents) -> primal outs + tangent outs."""

    def __init__(self, rule, split, in_tree, out_tree, out_avals, symbolic_zeros):
        self.rule, self.split, self.in_tree = rule, split, in_tree
        self.out_tree, self.out_avals, self.symbolic_zeros = out_tree, out_avals, symbolic_zeros

    def __call__(self, primals, tangents):
        name = getattr(self.rule, "__name__", "jvp")
        result = self.rule(*self.split.nondiff_values(), tree_unflatten(self.in_tree, primals),
                           tree_unflatten(self.in_tree, tangents))
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise TypeError(f"Custom JVP rule {name} must produce a pair (list or tuple of length two) "
                            f"representing primal and tangent outputs, got {result!r}")
        outs, primal_tree = tree_flatten(result[0])
        out_dots, tangent_tree = tree_flatten(result[1])
        if primal_tree != tangent_tree:
            raise TypeError(f"Custom JVP rule {name} must produce primal and tangent outputs with "
                            f"equal container (pytree) structures, but got {primal_tree} and "
                            f"{tangent_tree} respectively.")
        if self.out_tree is None:       # applied directly: the rule's tree is the function's
            self.out_tree, self.out_avals = primal_tree, [ad.aval_of(o) for o in outs]
        if primal_tree != self.out_tree:
            raise TypeError(f"Custom JVP rule {name} must produce primal outputs with the same "
                            f"container (pytree) structure as the primal function, got {primal_tree} "
                            f"where {self.out_tree} was expected")
        _check_outputs("JVP", name, outs, self.out_avals)
        _check_outputs("JVP", name, out_dots, [ad.tangent_aval(a) for a in self.out_avals])
        return outs + out_dots

    def __repr__(self):
        return getattr(self.rule, "__name__", "jvp")


custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.def_impl(ad.call_impl)
custom_jvp_call_p.def_abstract_eval(_call_abstract_eval)
call_primitives.add(custom_jvp_call_p)     # under jit the rule is used up: its value is its body's


def _custom_jvp_call_jvp(primals, tangents, jaxpr, rule, num_consts):
    return _apply_jvp_rule(primals[num_consts:], tangents[num_consts:], rule)


def _apply_jvp_rule(primals, tangents, rule):
    if getattr(rule, "symbolic_zeros", False):   # (a vmapped rule gets arrays)
        tangents = [SymbolicZero(t.aval) if ad.is_zero(t) else t for t in tangents]
    else:
        tangents = [ad.instantiate(t) for t in tangents]
    results = rule(primals, tangents)
    num_outs = len(results) // 2
    return results[:num_outs], [_as_zero(t) for t in results[num_outs:]]


class SymbolicZero:
    """A zero tangent or cotangent known by its type only, handed to rules defined with
    symbolic_zeros=True (they can skip work for it); a rule may return one too."""

    def __init__(self, aval):
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)

    def __repr__(self):
        return f"SymbolicZero({self.aval.str_short()})"


class CustomVJPPrimal:
    """A primal argument as a custom_vjp fwd rule defined with symbolic_zeros=True sees it:
    its value, and whether it is perturbed (has a nonzero tangent)."""

    def __init__(self, value, perturbed):
        self.value, self.perturbed = value, perturbed

    def __repr__(self):
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


def _as_zero(t):
    return ad.Zero(ad.tangent_aval(t.aval)) if isinstance(t, SymbolicZero) else t


class _BatchedRule:
    """A rule vmapped over the leading axis of every operand (see _broadcast_all)."""

    def __init__(self, rule, axis_name):
        self.rule, self.axis_name = rule, axis_name

    def __call__(self, *lists):
        return vmap(self.rule, axis_name=self.axis_name)(*lists)

    def forward(self, args, perturbed=None):
        return vmap(lambda a: self.rule.forward(a, perturbed), axis_name=self.axis_name)(args)

    def backward(self, residuals, cts):
        return vmap(self.rule.backward, axis_name=self.axis_name)(residuals, cts)

    def __repr__(self):
        return f"vmap({self.rule!r})"


ad.jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp
batching.axis_batch_rules[custom_jvp_call_p] = _call_batch_rule(custom_jvp_call_p)


# ---------------------------------------------------------------- custom_vjp

class custom_vjp(_CustomFunction):
    """A function with a custom VJP: `f.defvjp(fwd, bwd)`.

    fwd(*args) -> (output, residuals); bwd(*nondiff_args, residuals, output_cotangent)
    -> a tuple with one cotangent per (differentiable) argument, None meaning zero.
    """

    kind = "custom_vjp"

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = self.bwd = None
        self.symbolic_zeros = False

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        """With symbolic_zeros, fwd gets each array argument as a CustomVJPPrimal and bwd gets
        SymbolicZero for a zero output cotangent. (optimize_remat is accepted; it changes
        only how JAX schedules fwd, not the values.)"""
        self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros

    def _check_defined(self, name):
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")

    def _flat_rule(self, split, in_tree, out_tree, out_avals):
        return _FlatVJP(self, split, in_tree, out_tree, out_avals)

    @staticmethod
    def _rule_jvp(primals, tangents, rule):
        return _apply_vjp_rule(primals, tangents, rule)

    def _bind(self, operands, body, split, in_tree, out_tree, num_consts):
        rule = self._flat_rule(split, in_tree, out_tree, body.out_avals)
        return custom_vjp_call_p.bind(*operands, jaxpr=body, rule=rule, num_consts=num_consts)


class _FlatVJP:
    """fwd and bwd on flat lists; fwd records the residuals' structure for bwd."""

    def __init__(self, custom, split, in_tree, out_tree, out_avals):
        self.custom, self.split, self.in_tree = custom, split, in_tree
        self.out_tree, self.out_avals = out_tree, out_avals
        self.res_tree, self.res_refs = None, {}

    symbolic_zeros = property(lambda self: self.custom.symbolic_zeros)

    def forward(self, primals, perturbed=None):
        fwd = self.custom.fwd
        name = getattr(fwd, "__name__", "fwd")
        if self.symbolic_zeros:
            primals = [CustomVJPPrimal(p, d) for p, d in zip(primals, perturbed or [True] * len(primals))]
        result = fwd(*self.split.merge(tree_unflatten(self.in_tree, primals)))
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise TypeError(f"Custom VJP fwd rule {name} must produce a pair (list or tuple of length "
                            f"two) where the first element represents the primal output and the "
                            f"second element represents residuals, got {result!r}")
        outs, out_tree = tree_flatten(result[0])
        if self.out_tree is None:       # applied directly: the rule's tree is the function's
            self.out_tree, self.out_avals = out_tree, [ad.aval_of(o) for o in outs]
        if out_tree != self.out_tree:
            raise TypeError(f"Custom VJP fwd rule {name} must produce a pair (list or tuple of length "
                            f"two) where the first element has the same pytree structure as the "
                            f"primal function's output, {self.out_tree}, but got {out_tree}")
        _check_outputs("VJP fwd", name, outs, self.out_avals)
        residuals, self.res_tree = tree_flatten(result[1])
        # Refs among the residuals are places for bwd to write, not values: kept here.
        self.res_refs = {i: r for i, r in enumerate(residuals) if isinstance(r, Ref)}
        return outs, [r for r in residuals if not isinstance(r, Ref)]

    def backward(self, residuals, cts):
        residuals = _insert_at(residuals, self.res_refs.items())
        result = self.custom.bwd(*self.split.nondiff_values(), tree_unflatten(self.res_tree, residuals),
                                 tree_unflatten(self.out_tree, cts))
        diff = self.split.diff
        if not isinstance(result, (tuple, list)) or len(result) != len(diff):
            raise TypeError(
                "Custom VJP bwd rule must produce an output with the same container (pytree) structure "
                "as the args tuple of the primal function, and in particular must produce a tuple of "
                "length equal to the number of arguments to the primal function, but got bwd output "
                f"structure {tree_flatten(result)[1]} for primal input structure {self.in_tree}.")
        result = tuple(tree_map(_zeros_like, arg) if ct is None else ct for ct, arg in zip(result, diff))
        if self.symbolic_zeros:
            result = tree_map(lambda ct: _zeros_like(ct) if isinstance(ct, SymbolicZero) else ct, result,
                              is_leaf=lambda x: isinstance(x, SymbolicZero))
        flat_cts, ct_tree = tree_flatten(result)
        if ct_tree != self.in_tree:
            raise TypeError(
                "Custom VJP bwd rule must produce an output with the same container (pytree) structure "
                f"as the args tuple of the primal function, but got bwd output structure {ct_tree} "
                f"for primal input structure {self.in_tree}.")
        for position, (ct, arg) in enumerate(zip(flat_cts, tree_flatten(diff)[0])):
            _check_cotangent_shape(position, ct, arg)
        return flat_cts

    def __repr__(self):
        return getattr(self.custom.bwd, "__name__", "bwd")


def _check_cotangent_shape(position, ct, arg):
    ct_aval, arg_aval = ad.aval_of(ct), ad.aval_of(arg)
    if ct_aval.shape != arg_aval.shape:
        raise ValueError(
            "Custom VJP bwd rule must produce an output with the same type as the args tuple of the "
            f"primal function, but at output leaf {position} the bwd rule produced an output of type "
            f"{ct_aval.str_short()} corresponding to an input of type {arg_aval.str_short()}, so the "
            "shapes do not match")


custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.def_impl(ad.call_impl)
custom_vjp_call_p.def_abstract_eval(_call_abstract_eval)
call_primitives.add(custom_vjp_call_p)


def _custom_vjp_call_jvp(primals, tangents, jaxpr, rule, num_consts):
    return _apply_vjp_rule(primals[num_consts:], tangents[num_consts:], rule)


def _apply_vjp_rule(primals, arg_tangents, rule):
    outs, residuals = rule.forward(primals, [not ad.is_zero(t) for t in arg_tangents])
    if all(ad.is_zero(t) for t in arg_tangents):
        return outs, [ad.zero_like(o) for o in outs]
    out_avals = tuple(ad.tangent_aval(ad.aval_of(o)) for o in outs)
    out_dots = custom_lin_p.bind(*residuals, *map(ad.instantiate, arg_tangents),
                                 num_res=len(residuals), rule=rule, out_avals=out_avals)
    return outs, out_dots


ad.jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp
batching.axis_batch_rules[custom_vjp_call_p] = _call_batch_rule(custom_vjp_call_p)


def _forward_mode_error(*args, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


# The tangent map of a custom_vjp function: known only through its transpose, bwd.
custom_lin_p = Primitive("custom_lin", multiple_results=True)
custom_lin_p.def_impl(_forward_mode_error)
custom_lin_p.def_abstract_eval(lambda *avals, num_res, rule, out_avals: list(out_avals))


def _custom_lin_transpose(cts, *args, num_res, rule, out_avals):
    if getattr(rule, "symbolic_zeros", False):
        cts = [SymbolicZero(ct.aval) if ad.is_zero(ct) else ct for ct in cts]
    else:
        cts = [ad.materialize(ct) for ct in cts]
    return [None] * num_res + rule.backward(list(args[:num_res]), cts)


ad.transpose_rules[custom_lin_p] = _custom_lin_transpose
