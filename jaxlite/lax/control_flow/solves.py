"""custom_linear_solve and custom_root: solvers differentiated implicitly.

The solver itself (an iteration, a factorization) is never differentiated. For
custom_linear_solve, x = A^{-1} b is linear in b and its derivative along A is
-A^{-1} (dA x): both are solves with the same operator, so the JVP binds the
primitive again on a new right-hand side, and the transpose (reverse mode)
solves the transposed system with `transpose_solve` on the transpose of
`matvec`. custom_root differentiates the root u*(m) of f(m, u) = 0 through the
implicit function theorem: du* = -(d_u f)^{-1} d_m f, the inverse applied by
the user's `tangent_solve` on f linearized at the root.

linear_solve_p holds four closure-converted jaxprs (matvec, vecmat, solve,
transpose_solve; the last two may be None), each taking its own consts then x.
Its operands are the four const lists, then b. The compiler computes it as its
solve jaxpr applied to b (a rewrite), so jit runs the solver natively.
"""
from typing import Any, NamedTuple

from jaxlite.core.primitive import Primitive, compiler_rewrites
from jaxlite.core.staging import jaxpr_as_fun
from jaxlite.core.array import as_array_argument
from jaxlite.core.tree_util import tree_flatten, tree_unflatten
from jaxlite.lax.control_flow.common import args_tree, flat_operands, split, trace_hoisted, type_text
from jaxlite.transforms import ad, batching
from jaxlite.transforms.custom_derivatives import custom_jvp


class _LinearSolveTuple(NamedTuple):
    matvec: Any
    vecmat: Any
    solve: Any
    transpose_solve: Any

    def transpose(self):
        """The same four pieces for the transposed system A^T y = c."""
        return _LinearSolveTuple(self.vecmat, self.matvec, self.transpose_solve, self.solve)


class _Argument:
    """The pytree argument (b, initial_guess) the user's functions are traced on."""

    def __init__(self, tree, name):
        self.flat, self.tree = flat_operands(tree)
        self.value, self.name = tree_unflatten(self.tree, self.flat), name
        self.avals = [x.aval for x in self.flat]

    def trace(self, fun, description):
        """fun(value)'s closure-converted jaxpr, its consts and its output structure."""
        return trace_hoisted(fun, args_tree(self.value), self.avals, description)

    def trace_like(self, fun, fun_name, description, has_aux=False):
        """trace() of a function whose output (with has_aux: its first) must be like the argument."""
        jaxpr, consts, out_tree = self.trace(fun, description)
        self.check_like(fun_name, out_tree, jaxpr.out_avals, has_aux)
        return jaxpr, consts, out_tree

    def check_like(self, fun_name, out_tree, out_avals, has_aux):
        if has_aux:
            if len(out_tree.children) != 2:
                raise TypeError(f"{fun_name}() with has_aux=True must return a pair (solution, aux), "
                                f"got output structure {out_tree}")
            out_tree, out_avals = out_tree.children[0], out_avals[:len(self.avals)]
        if out_tree != self.tree:
            raise TypeError(f"{fun_name}() output pytree structure must match {self.name}, "
                            f"got {out_tree} and {self.tree}.")
        for out, expected in zip(out_avals, self.avals):
            if out.shape != expected.shape or out.dtype != expected.dtype:
                raise ValueError(f"{fun_name}() output shapes must match {self.name}: it returned "
                                 f"{type_text(out)} where {self.name} is {type_text(expected)}")


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
    """solve(matvec, b), differentiated as the solution x of the linear system matvec(x) = b.

    `solve(matvec, x)` returns A^{-1} x and need not be differentiable; `transpose_solve`
    (defaulting to `solve` when `symmetric`) is needed for reverse mode.
    """
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b = _Argument(b, "b")
    matvec_jaxpr, matvec_consts, _ = b.trace_like(matvec, "matvec", "custom_linear_solve matvec")
    solve_jaxpr, solve_consts, solution_tree = b.trace_like(
        lambda x: solve(matvec, x), "solve", "custom_linear_solve solve", has_aux)
    vecmat_jaxpr, vecmat_consts, tr_solve_jaxpr, tr_solve_consts = None, [], None, []
    if transpose_solve is not None:
        vecmat = matvec if symmetric else _transpose_of(matvec, b.value)
        vecmat_jaxpr, vecmat_consts, _ = b.trace(vecmat, "custom_linear_solve vecmat")
        tr_solve_jaxpr, tr_solve_consts, _ = b.trace_like(
            lambda x: transpose_solve(vecmat, x), "transpose_solve", "custom_linear_solve transpose_solve",
            has_aux)
    all_consts = [matvec_consts, vecmat_consts, solve_consts, tr_solve_consts]
    outs = linear_solve_p.bind(
        *[c for consts in all_consts for c in consts], *b.flat,
        const_lengths=_LinearSolveTuple(*map(len, all_consts)),
        jaxprs=_LinearSolveTuple(matvec_jaxpr, vecmat_jaxpr, solve_jaxpr, tr_solve_jaxpr))
    return tree_unflatten(solution_tree, outs)


def _transpose_of(linear_fun, b):
    transposed = ad.linear_transpose(linear_fun, b)
    return lambda x: transposed(x)[0]


def _split_args(args, const_lengths):
    *groups, b = split(list(args), *const_lengths)
    return _LinearSolveTuple(*groups), b


def _linear_solve_impl(*args, const_lengths, jaxprs):
    consts, b = _split_args(args, const_lengths)
    return jaxpr_as_fun(jaxprs.solve)(*consts.solve, *b)


def _linear_solve_abstract_eval(*avals, const_lengths, jaxprs):
    return list(jaxprs.solve.out_avals)


def _linear_solve_jvp(primals, tangents, const_lengths, jaxprs):
    """A x = b gives dA x + A dx = db, so dx = A^{-1} (db - dA x): one more solve."""
    x = linear_solve_p.bind(*primals, const_lengths=const_lengths, jaxprs=jaxprs)
    consts, _ = _split_args(primals, const_lengths)
    consts_dot, b_dot = _split_args(tangents, const_lengths)
    x_leaves = x[:len(b_dot)]
    rhs = b_dot
    if not all(ad.is_zero(t) for t in consts_dot.matvec):
        matvec_dot = _tangent_of_operator(jaxprs.matvec, consts.matvec, consts_dot.matvec, x_leaves)
        rhs = [ad.add_tangents(db, _negated(t)) for db, t in zip(b_dot, matvec_dot)]
    rhs = [ad.instantiate(t) for t in rhs]
    x_dot = linear_solve_p.bind(*[c for group in consts for c in group], *rhs,
                                const_lengths=const_lengths, jaxprs=jaxprs)
    aux_dots = [ad.Zero(ad.tangent_aval(aval)) for aval in jaxprs.solve.out_avals[len(b_dot):]]
    return x, x_dot[:len(b_dot)] + aux_dots


def _tangent_of_operator(matvec, consts, consts_dot, x):
    """dA x: matvec's JVP along its consts alone, at the solution."""
    zeros = [ad.Zero(ad.tangent_aval(ad.aval_of(v))) for v in x]
    _, out_dots = ad.jvp_flat(jaxpr_as_fun(matvec), list(consts) + list(x), list(consts_dot) + zeros)
    return out_dots


def _negated(t):
    from jaxlite.lax.elementwise import neg
    return t if ad.is_zero(t) else neg(t)


def _linear_solve_transpose(cts, *args, const_lengths, jaxprs):
    """x = A^{-1} b is linear in b: its transpose maps c to A^{-T} c, the transposed solve."""
    if jaxprs.transpose_solve is None:
        raise TypeError("transpose_solve required for backwards mode automatic differentiation "
                        "of custom_linear_solve")
    consts, b = _split_args(args, const_lengths)
    if any(ad.is_undefined(c) for group in consts for c in group):
        raise NotImplementedError("custom_linear_solve is linear in b only: reverse mode through "
                                  "its operator's consts goes through its JVP rule")
    x_cts = [ad.instantiate(ct) for ct in cts[:len(b)]]
    transposed = consts.transpose()
    b_cts = linear_solve_p.bind(*[c for group in transposed for c in group], *x_cts,
                                const_lengths=const_lengths.transpose(), jaxprs=jaxprs.transpose())
    return [None] * sum(const_lengths) + list(b_cts[:len(b)])


def _linear_solve_batch(axis, args, dims, const_lengths, jaxprs):
    """Batch every right-hand side and solution once anything is batched: then the four
    jaxprs agree on which of x and b carry the axis without a fixed-point search (an
    unbatched b is broadcast, which costs memory only when the operator alone varies)."""
    consts_dims, b_dims = _split_args(dims, const_lengths)
    size = axis.axis_size
    if all(d is None for d in dims):
        return linear_solve_p.bind(*args, const_lengths=const_lengths, jaxprs=jaxprs), [None] * len(
            jaxprs.solve.out_avals)
    consts, b = _split_args(args, const_lengths)
    b = [batching.bdim_at_front(x, d, size) for x, d in zip(b, b_dims)]
    batched = _LinearSolveTuple(*[
        None if jaxpr is None else
        batching.batch_jaxpr(jaxpr, list(group_dims) + [0] * len(b), size, axis.axis_name, True)[0]
        for jaxpr, group_dims in zip(jaxprs, consts_dims)])
    outs = linear_solve_p.bind(*[c for group in consts for c in group], *b,
                               const_lengths=const_lengths, jaxprs=batched)
    return outs, [0] * len(outs)


linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)
linear_solve_p.def_impl(_linear_solve_impl)
linear_solve_p.def_abstract_eval(_linear_solve_abstract_eval)
ad.jvp_rules[linear_solve_p] = _linear_solve_jvp
ad.transpose_rules[linear_solve_p] = _linear_solve_transpose
batching.axis_batch_rules[linear_solve_p] = _linear_solve_batch
compiler_rewrites[linear_solve_p] = lambda *args, memory_orders, **params: _linear_solve_impl(*args, **params)


# ---------------------------------------------------------------- custom_root

class _RootProblem:
    """What custom_root traced: f and the solver as jaxprs, with the user's tangent_solve."""

    def __init__(self, f_jaxpr, solve_jaxpr, tangent_solve, guess_tree):
        self.f_jaxpr, self.solve_jaxpr, self.tangent_solve = f_jaxpr, solve_jaxpr, tangent_solve
        self.guess_tree = guess_tree

    def __repr__(self):
        return "custom_root"


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """solve(f, initial_guess), a root of f, differentiated implicitly: assuming
    f(solution) == 0, the tangent of the solution is -(df/dx)^{-1} (df/dparams dparams),
    with the inverse applied by tangent_solve(g, y) on g, f linearized at the solution."""
    guess = _Argument(initial_guess, "initial_guess")
    f_jaxpr, f_consts, _ = guess.trace_like(f, "f", "custom_root f")
    solve_jaxpr, solve_consts, solution_tree = guess.trace_like(
        lambda x: solve(f, x), "solve", "custom_root solve", has_aux)
    problem = _RootProblem(f_jaxpr, solve_jaxpr, tangent_solve, guess.tree)
    outs = _root(problem, list(f_consts), list(solve_consts), guess.flat)
    return tree_unflatten(solution_tree, outs)


def _root_solution(problem, f_consts, solve_consts, guess):
    return jaxpr_as_fun(problem.solve_jaxpr)(*solve_consts, *guess)


_root = custom_jvp(_root_solution, nondiff_argnums=(0,))


@_root.defjvp
def _root_jvp(problem, primals, tangents):
    """f(m, u*(m)) = 0 along m: d_m f dm + d_u f du* = 0, so du* = -(d_u f)^{-1} (d_m f dm)."""
    f_consts, solve_consts, guess = primals
    f_consts_dot = tangents[0]
    outs = _root(problem, f_consts, solve_consts, guess)
    solution, aux = outs[:len(guess)], outs[len(guess):]
    f = jaxpr_as_fun(problem.f_jaxpr)
    _, rhs = ad.jvp_flat(lambda *consts: f(*consts, *solution), f_consts, f_consts_dot)
    rhs = [ad.instantiate(t) for t in rhs]
    tree = problem.guess_tree
    _, f_at_solution = ad.linearize(lambda *x: f(*f_consts, *x), *solution)
    g = lambda x: tree_unflatten(tree, f_at_solution(*tree_flatten(x)[0]))
    solution_dot = tree_flatten(problem.tangent_solve(g, tree_unflatten(tree, rhs)))[0]
    solution_dot = [_negated(as_array_argument(t)) for t in solution_dot]
    aux_dots = [ad.zeros(ad.tangent_aval(ad.aval_of(a))) for a in aux]
    return outs, solution_dot + aux_dots
