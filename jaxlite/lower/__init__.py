"""Lowering: graph passes, fusion, kernel IR, LLVM code generation and the runtime.

The compiler is one named list of stages (pipeline.STAGES): jaxpr passes (passes.py),
compiler rewrites (rewrites.py), the GEMM passes (epilogues.py, quantized.py), fusion
(fusion.py, its per-primitive rules in fusion_rules.py, its kernel rewrites in
kernel_rewrites.py, the step kinds of what is not fused in step_policy.py), the memory plan
(buffers.py, donation.py) and code generation (codegen.py for kernels, gemm.py and
gemm_lowp.py for products, native_flow.py for control flow, native_routines.py for sorts
and factorizations, entry_points.py, all on the LLVM helpers of llvm_helpers.py), ending in
the Executable (runtime.py). Set config "jaxlite_dump_passes" to see every stage's result.

The op vocabulary is declared once. kernel_ir.OPS lists the kernel ops, each with its
group (arithmetic, comparison, bitwise, selection, conversion, math, ...) and properties;
llvm_math declares the math group, the functions it emits. A primitive's lax block declares
how fusion computes it, keyed by the primitive object (fusion_rules.LOWERINGS): one kernel
op, a reduction kind, or a rule building kernel-IR expressions. Passes that match particular
primitives compare objects (primitives.py); no table is keyed by a primitive's name.

Adding a unary elementwise primitive, end to end (eager, abstract eval, JVP, vmap, jit):

1. In its lax block (e.g. jaxlite/lax/elementwise.py), next to its other rules:

       foo_p = unary_primitive("foo", numpy_foo, FLOAT)   # eager impl, abstract eval, vmap
       foo = _bind_unary(foo_p)
       defjvp(foo_p, lambda t, x: mul(t, foo_derivative(x)))
       fusion_rules.elementwise(foo_p, "foo")             # jit: kernel op "foo"

   If the kernel op exists already (kernel_ir.OPS), or the primitive is a composition of
   existing ops, that is all: `fusion_rules.fused(foo_p, rule)` takes a rule
   `rule(lw, eqn, index)` that builds the result from operands `lw.operand(v, index)` with
   `lw.eb.node(op, dtype, args)` and `lw.eb.const(value, dtype)`.
2. If it needs a new function (a polynomial approximation), add its emitter to
   llvm_math.EMITTERS (an `_Ops`-level implementation through `_emitter`, tested in ulps
   in tests/test_llvm_math.py); llvm_math declares every emitter as a kernel op of the math
   group, and codegen computes that group through llvm_math (half precision in float32).

lax.reduce_precision was added this way: its lax block (jaxlite/lax/elementwise.py) holds
one bit-level algorithm run on numpy arrays for eager and on kernel-IR expressions for jit
(existing kernel ops only); no file of lower/ changed.
"""
