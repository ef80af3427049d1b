"""How each equation outside the fused kernels runs: the step kinds, and which products
run on which GEMM (with the operand layouts the GEMM reads).

`eqn_step_kind(eqn)` sorts an equation: "gemm" (a product on a generated GEMM), "native"
(a sequential primitive's hand-written routine, native_routines.py), "control" (while,
scan, cond: native loops and branches around their bodies, native_flow.py), "fallback"
(its numpy implementation, run from Python between kernels), or None: fused into a kernel
(fusion_rules). The graph passes ask the same questions before fusion (which products to
lay out for a GEMM, which take an epilogue, which run in low precision), so the answers
live here, apart from the Executable that runs the steps.
"""
import importlib
import logging

import numpy as np

from jaxlite.core import dtypes
from jaxlite.core.dtypes import is_narrow
from jaxlite.lax import process_collectives
from jaxlite.lower import complex_split, fft_kernels, native_pool
from jaxlite.lower import primitives as P
from jaxlite.lower.epilogues import dot_epilogue_p
from jaxlite.lower.fusion import EqnStep, is_fusible
from jaxlite.lower.fusion_rules import UNROLLED_CONTRACTION, dot_compute_dtype
from jaxlite.lower.quantized import int8_matmul_p

logger = logging.getLogger("jaxlite.jit")

# Primitives that run their numpy implementation between native kernels, and why.
# Anything without a lowering that is not listed here also falls back, with a warning.
_INT32_POSITIONS = "along an axis of 2**31 elements or more (the native routine's positions are int32)"
_COLLECTIVE = "named-axis collective: only meaningful under vmap, which removes it"
FALLBACKS = {
    # Lowered, except in these cases:
    P.cholesky_p: "in float16 (numpy's linalg rejects it: eager raises numpy's error)",
    P.svd_p: ("in float16 (numpy's LAPACK has no such routine: eager raises numpy's error), "
              "and where numpy's LAPACK is not a shared library exporting dgesdd (lapack.py)"),
    **{primitive: "in float16 (numpy's LAPACK has no such routine: eager raises numpy's error)"
       for primitive in (P.eigh_p, P.qr_p, P.geqrf_p)},
    P.qr_pivoted_p: ("in float16, and where numpy's LAPACK is not a library exporting dgeqp3 (lapack.py): "
                     "its numpy Householder loop runs"),
    P.eig_p: "in float16 (numpy's LAPACK has no such routine: eager raises numpy's error)",
    P.polygamma_p: ("for orders m above llvm_math.POLYGAMMA_MAX_ORDER (its series needs about m + 8 "
                    "shift steps: numpy's loop is as good)"),
    P.sort_p: _INT32_POSITIONS, P.top_k_p: _INT32_POSITIONS,
    fft_kernels.fft_pairs_p: "with a zero-sized operand or result (nothing to transform: eager gives the zeros)",
    # Not lowered:
    # complex_split computes every complex value with real ones; these remain only around an
    # operation it has no rule for (float16 complex linear algebra, ...).
    **{primitive: "around a complex operation complex_split computes whole (logged before)"
       for primitive in (P.real_p, P.imag_p, P.complex_p, P.conj_p)},
    complex_split.on_parts_p: "where its routine does not apply (the same cases as the primitive's own)",
    # Python callbacks (primitives marked runs_python) run between kernels by design, unlogged.
    **{primitive: "a Python callback" for primitive in (P.debug_callback_p, P.pure_callback_p, P.io_callback_p)},
    P.rng_uniform_p: "stateful draws from numpy's global generator (XLA leaves RngUniform's values to the backend)",
    **{primitive: _COLLECTIVE for primitive in (P.psum_p, P.pmax_p, P.pmin_p, P.all_gather_p, P.axis_index_p,
                                                P.ppermute_p, P.psum_scatter_p, P.all_to_all_p)},
}

# Lowered to native loops and branches around their bodies' steps (native_flow.py).
CONTROL_FLOW = (P.while_p, P.scan_p, P.cond_p)

# Equations that run on a GEMM (dot_general when gemm_applies; the fused forms always).
GEMM_PRIMITIVES = (P.dot_general_p, dot_epilogue_p, int8_matmul_p)

def _imported_at_first_use(module, name):
    """`jaxlite.lower.<module>.<name>`, a function, imported when first called: the code
    generators of sorts, linear algebra, collectives and low-precision GEMMs took ~20 ms CPU
    to import, paid by every process's first compile, also of programs that use none."""
    def call(*args, **kwargs):
        return getattr(importlib.import_module(f"jaxlite.lower.{module}"), name)(*args, **kwargs)
    call.__name__ = call.__qualname__ = name
    return call


# Sequential primitives run as hand-written native routines (native_routines.py): each
# entry gives the routine's spec for an equation, or None where the routine does not apply.
NATIVE_ROUTINES = {
    P.sort_p: _imported_at_first_use("sort_kernels", "sort_spec"),
    P.top_k_p: _imported_at_first_use("sort_kernels", "top_k_spec"),
    P.cholesky_p: _imported_at_first_use("linalg_kernels", "cholesky_spec"),
    P.triangular_solve_p: _imported_at_first_use("linalg_kernels", "triangular_solve_spec"),
    P.lu_p: _imported_at_first_use("linalg_kernels", "lu_spec"),
    P.svd_p: _imported_at_first_use("linalg_kernels", "svd_spec"),
    P.eigh_p: _imported_at_first_use("linalg_kernels", "eigh_spec"),
    P.eig_p: _imported_at_first_use("linalg_kernels", "eig_spec"),
    P.qr_p: _imported_at_first_use("linalg_kernels", "qr_spec"),
    P.qr_pivoted_p: _imported_at_first_use("linalg_kernels", "qr_pivoted_spec"),
    P.geqrf_p: _imported_at_first_use("linalg_kernels", "geqrf_spec"),
    fft_kernels.fft_pairs_p: fft_kernels.fft_spec,
    P.cumprod_p: _imported_at_first_use("complex_products", "cumprod_spec"),     # (complex only: a real one is a fused kernel)
    P.reduce_prod_p: _imported_at_first_use("complex_products", "reduce_prod_spec"),
    complex_split.on_parts_p: lambda eqn: native_spec(complex_split.inner_eqn(eqn)),
    **{primitive: _imported_at_first_use("collectives", "eqn_spec")     # mesh collectives (MPI)
       for primitive in process_collectives.ALL},
}

# Linear algebra on 16-bit floats: the float32 routine between conversions (a graph pass,
# pipeline.widen_narrow_floats), where eager computes it (its implementations work in
# float32 or wider; numpy's linalg rejects float16, so float16 cholesky and svd raise).
_WIDENED_LINALG = {P.lu_p: ("float16", "bfloat16"), P.triangular_solve_p: ("float16", "bfloat16"),
                   **{primitive: ("bfloat16",) for primitive in (P.cholesky_p, P.svd_p, P.eigh_p, P.qr_p, P.geqrf_p)}}


def computes_widened(eqn):
    dtypes = _WIDENED_LINALG.get(eqn.primitive)
    return dtypes is not None and eqn.inputs[0].aval.dtype.name in dtypes


def native_spec(eqn):
    spec_for = NATIVE_ROUTINES.get(eqn.primitive)
    return spec_for(eqn) if spec_for is not None else None


def eqn_step_kind(eqn):
    """How an equation runs if not inside a fused kernel: "gemm", "native", "control",
    "fallback" or None (fused)."""
    if eqn.primitive is P.dot_general_p and gemm_applies(eqn) or eqn.primitive in GEMM_PRIMITIVES[1:]:
        return "gemm"
    if native_spec(eqn) is not None:
        return "native"
    if is_fusible(eqn):
        return None
    return "control" if eqn.primitive in CONTROL_FLOW else "fallback"


def log_fallbacks(steps):
    for step in steps:
        if isinstance(step, EqnStep) and step.kind == "fallback" and not getattr(step.eqn.primitive, "runs_python", False):
            if _on_narrow_dtypes(step.eqn):     # by design, as eager computes them: not worth a warning
                logger.debug("jit: running %s on ml_dtypes' kernels between kernels (a float8/int4 "
                             "operand)", step.eqn.primitive)
                continue
            reason = FALLBACKS.get(step.eqn.primitive, "no lowering for this primitive yet")
            logger.warning("jit: running %s with its numpy implementation between kernels (%s)",
                           step.eqn.primitive, reason)


def _on_narrow_dtypes(eqn):
    """float8/6/4 and int4/2/1 values are computed by ml_dtypes' numpy kernels under jit too
    (the fused kernels hold numpy's own types and bfloat16)."""
    return any(is_narrow(v.aval.dtype) for v in eqn.inputs + eqn.outputs)


# Narrow operands with a wide accumulator (what precision.bf16/int8 produce) run on the
# dot-product-instruction GEMMs; they take one matrix per call, so no batch dimensions.
LOW_PRECISION_GEMMS = {("bfloat16", "float32"): _imported_at_first_use("gemm_lowp", "compile_gemm_bf16"),
                        ("int8", "int32"): _imported_at_first_use("gemm_lowp", "compile_gemm_int8")}


def low_precision_gemm(eqn):
    lhs, rhs = operand_dtypes(eqn)
    if lhs != rhs:
        return None
    accumulator = eqn.params.get("preferred_element_type") or eqn.outputs[0].aval.dtype
    return LOW_PRECISION_GEMMS.get((np.dtype(lhs).name, np.dtype(accumulator).name))


def operand_dtypes(eqn):
    """The dtypes a product's operands multiply in: bf16 for the float32 operands a bf16 GEMM
    step rounds itself (quantized.round_bf16_operands_in_gemms), else their own."""
    rounded = eqn.params.get("rounded", ()) if eqn.primitive is dot_epilogue_p else ()
    return [dtypes.bfloat16 if i in rounded else v.aval.dtype for i, v in enumerate(eqn.inputs[:2])]


def is_low_precision_gemm(eqn):
    return eqn.primitive in GEMM_PRIMITIVES[:2] and low_precision_gemm(eqn) is not None and gemm_applies(eqn)


def is_int8_gemm(eqn):
    return is_low_precision_gemm(eqn) and operand_dtypes(eqn)[0] == np.int8


def is_bf16_gemm(eqn):
    return is_low_precision_gemm(eqn) and dtypes.is_bfloat16(operand_dtypes(eqn)[0])


def epilogue_fusable(eqn):
    """A dot_general whose GEMM can apply bias/residual/scale/relu: the float GEMMs and the
    bf16 one, which also rounds its result to bf16 when the next product reads it so
    (epilogues.ROUND_BF16). int8 products fuse their dequantization, bias and relu in
    quantized.int8_matmul."""
    return gemm_applies(eqn) and (low_precision_gemm(eqn) is None or dtypes.is_bfloat16(operand_dtypes(eqn)[0]))


def gemm_applies(eqn):
    lhs, rhs = eqn.inputs[:2]
    out = eqn.outputs[0]
    dtype = lhs.aval.dtype
    if low_precision_gemm(eqn) is not None:
        m, n, k, batch = gemm_sizes(eqn)
        return batch == 1 and min(m, n, k) >= 1 and m * n * k >= 4096
    if dtype not in (np.float32, np.float64) or out.aval.dtype != dtype or rhs.aval.dtype != dtype:
        return False
    if dot_compute_dtype(dtype, out.aval.dtype) != dtype:
        return False
    m, n, k, batch = gemm_sizes(eqn)
    # A matrix-vector product (n = 1) stays a fused reduction: the GEMM's vectors run
    # along n, so it would use one lane of each (64x64 in a loop body: ~0.2 us fused,
    # ~1.5 us on the GEMM; 1024x1024 at top level: ~0.12 ms fused, ~2 ms on the GEMM).
    # A short contraction stays fused too (see fusion_rules.UNROLLED_CONTRACTION).
    # Up to SMALL_PRODUCT multiply-adds (batch included) a product is a fused loop, above it
    # a GEMM call (see SMALL_PRODUCT).
    return min(m, batch) >= 1 and k > UNROLLED_CONTRACTION and n > 1 and batch * m * n * k > SMALL_PRODUCT


# A small product runs as a fused loop so that its program compiles no GEMM family (a
# float32 family is ~68 KB of IR, ~70-90 ms CPU the first time on a machine, ~3 ms to load
# from the kernel directory). Steady state, us per call, GEMM / fused loop
# (benchmarks/bench_small_products.py): a @ b 16x32x64 1.9 / 2.1, 32x32x32 1.7 / 2.1,
# 32x64x64 3.9 / 4.7, 64x64x64 6.0 / 7.9, 128x128x128 55 / 68; a @ b.T (the fused loop sums
# along k per output element) 32x32x32 2.4 / 3.2, 64x64x64 5.3 / 15, 128x128x128 53 / 216.
# Up to 32^3 the loop stays within ~1 us of the GEMM; past it the GEMM's register tiles pull
# away. A first call compiles the loop: ~8 ms CPU more than binding a family the kernel
# directory holds (a first jit(grad) of a 32-64-10 MLP, batch 16: 141 -> 195 ms), and a
# family's compile less where it holds none (each epilogue and transposition is a family:
# the same MLP 480 -> 260 ms on an empty kernel directory; JAX takes 316).
SMALL_PRODUCT = 32 ** 3


def gemm_sizes(eqn):
    lhs, rhs = eqn.inputs[:2]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    shape_l, shape_r = lhs.aval.shape, rhs.aval.shape
    batch = int(np.prod([shape_l[d] for d in lb]))
    k = int(np.prod([shape_l[d] for d in lc]))
    m = int(np.prod([shape_l[d] for d in range(len(shape_l)) if d not in lc and d not in lb]))
    n = int(np.prod([shape_r[d] for d in range(len(shape_r)) if d not in rc and d not in rb]))
    return m, n, k, batch


# Every GEMM step may use the CPUs this process may run on; its plan (autotune.py) says
# how many threads it takes and how it splits C among them.
GEMM_THREADS = native_pool.available_cpus()


def _free_dims(eqn):
    """The dimensions of each operand that are neither contracted nor batch."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.inputs[:2]
    return ([d for d in range(lhs.aval.ndim) if d not in lc and d not in lb],
            [d for d in range(rhs.aval.ndim) if d not in rc and d not in rb])


def gemm_layouts(eqn):
    """((permutation or None, transpose flag) for A, the same for B) of a GEMM equation."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs_free, rhs_free = _free_dims(eqn)
    return (_operand_layout(list(lb) + lhs_free + list(lc), list(lb) + list(lc) + lhs_free),
            _operand_layout(list(rb) + list(rc) + rhs_free, list(rb) + rhs_free + list(rc)))


def gemm_operand_permutations(eqn):
    """(permutation or None per operand) that lays a GEMM's operands out so it reads them as
    stored; None when the product does not run on a GEMM."""
    if not gemm_applies(eqn):
        return None
    if low_precision_gemm(eqn) is not None:
        return _row_major_permutations(eqn)
    return tuple(permutation for permutation, _ in gemm_layouts(eqn))


def gemm_reads_in_place(eqn):
    """Whether a GEMM step reads both operands as stored (so native code calls its kernels
    directly), known without compiling."""
    if eqn.primitive is int8_matmul_p:
        return True
    if low_precision_gemm(eqn) is not None:
        return _row_major_permutations(eqn) == (None, None)
    (a_perm, _), (b_perm, _) = gemm_layouts(eqn)
    return a_perm is None and b_perm is None


def runs_as_jobs(eqn):
    """Whether a GEMM step is a low-precision product (LowPrecisionCall)."""
    return eqn.primitive is int8_matmul_p or low_precision_gemm(eqn) is not None


def _row_major_permutations(eqn):
    """The dot-product GEMMs read A as (m x k) and B as (k x n), row-major: (permutation or
    None per operand) that lays them out so."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs_free, rhs_free = _free_dims(eqn)
    layouts = (list(lb) + lhs_free + list(lc), list(rb) + list(rc) + rhs_free)
    return tuple(None if order == sorted(order) else order for order in layouts)


def _operand_layout(plain, transposed):
    """(permutation to copy with or None, transpose flag) for one GEMM operand."""
    identity = list(range(len(plain)))
    if plain == identity:
        return None, False
    if transposed == identity:
        return None, True
    return plain, False
