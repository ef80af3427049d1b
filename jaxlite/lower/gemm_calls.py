"""The GEMM steps native code calls: a float product on the generated GEMM (GemmCall,
planned once per compiled function) and a bf16 or int8 product as jobs of the worker pool
(LowPrecisionCall). Which product runs on which is step_policy's choice."""
import numpy as np

from jaxlite.lower import autotune, epilogues, gemm, gemm_lowp, native_pool
from jaxlite.lower.native_call import array_data
from jaxlite.lower import step_policy
from jaxlite.lower.step_policy import LOW_PRECISION_GEMMS, gemm_layouts, gemm_sizes, low_precision_gemm
from jaxlite.lower.quantized import int8_matmul_p
class GemmCall:
    """dot_general on the generated float GEMM, planned once per compiled function, for
    native code to call. Operands are read as stored, as (batch, m, k) and (batch, k, n),
    or (batch, k, m) and (batch, n, k) with the GEMM's transpose flags (any other layout
    got a transposed copy: passes.transpose_gemm_operands)."""

    def __init__(self, eqn, plan=None):
        m, n, k, batch = gemm_sizes(eqn)
        (_, trans_a), (_, trans_b) = gemm_layouts(eqn)
        self.kernel = gemm.compile_gemm(m, n, k, eqn.inputs[0].aval.dtype, trans_a, trans_b, batch,
                                        epilogue=_epilogue(eqn.params.get("epilogue", ())))
        self.plan = plan or autotune.plan_for(self.kernel, step_policy.GEMM_THREADS)

    def describe(self):
        spec = self.kernel.spec
        transposes = "".join(name for name, flag in (("A", spec.trans_a), ("B", spec.trans_b)) if flag)
        return (f"gemm {spec.m}x{spec.n}x{spec.k}" + (f" batch {spec.batch}" if spec.batch > 1 else "")
                + f" {spec.dtype}" + (f" transposed {transposes}" if transposes else "")
                + (f" epilogue {spec.epilogue.name}" if spec.epilogue else ""))


def _epilogue(names):
    """The GEMM epilogue chaining the named ones (a bf16 output, ROUND_BF16, is the low-precision
    GEMM's own option)."""
    names = [name for name in names if name != epilogues.ROUND_BF16]
    return gemm.chain(*(_EPILOGUES[name] for name in names)) if names else None


class LowPrecisionCall:
    """A bf16 or int8 product (what precision.bf16 and precision.int8 leave) as jobs of the
    native pool run one after another by one native call (native_pool.JobList): its operands
    quantized, rounded, padded or packed into the form the dot-product GEMM reads, in the
    call's scratch, then the GEMM's units. A constant B (weights closed over) is packed
    once, here. Operands are read as stored (passes.transpose_gemm_operands laid them out)."""

    def __init__(self, eqn, constants):
        m, n, k, _ = gemm_sizes(eqn)
        self.jobs, self.constants = native_pool.JobList(), constants
        count = len(eqn.inputs)
        if eqn.primitive is int8_matmul_p:
            self._int8_matmul(eqn, m, n, k, count)
        else:
            self._product(eqn, m, n, k, count)
        self.table = self.jobs.table()

    def _int8_matmul(self, eqn, m, n, k, count):
        """quantize x per row, w per column (or a quantized constant), then the GEMM, whose
        epilogue applies the scales, the bias and relu."""
        params, jobs, operand = eqn.params, self.jobs, native_pool.operand
        epilogue = gemm_lowp.DEQUANTIZE_RELU if params["relu"] else gemm_lowp.DEQUANTIZE
        self.kernel = LOW_PRECISION_GEMMS[("int8", "int32")](m, n, k, epilogue=epilogue)
        a, row_scales = self.kernel.quantize_a_job(jobs, operand(0), step_policy.GEMM_THREADS)
        if params["quantize_weights"]:
            b, correction, column_scales = self.kernel.quantize_b_job(jobs, operand(1), step_policy.GEMM_THREADS)
            rest = 2
        else:
            (b, correction), column_scales, rest = self._narrow_b(eqn, 1), operand(2), 3
        bias = operand(rest) if count > rest else self._constant(np.zeros(n, np.float32))
        self.plan = self.kernel.gemm_job(jobs, a, b, correction, [row_scales, column_scales, bias],
                                         operand(count), step_policy.GEMM_THREADS)

    def _product(self, eqn, m, n, k, count):
        """bf16 x bf16 -> float32 (float32 operands rounded as they are packed), or int8 x int8
        -> int32."""
        names = eqn.params.get("epilogue", ())
        rounded = eqn.params.get("rounded", ())
        # float32 weights rounded as the GEMM packs them are packed by every thread that
        # needs them (with C split by rows: all of B per thread); for a product shared among
        # threads, one pass rounds them into panels first (1024^3: 5.6 -> 5.4 ms).
        shared = gemm.threads_repaid(2 * m * n * k, step_policy.GEMM_THREADS) > 1
        options = {"bf16_output": names[-1:] == (epilogues.ROUND_BF16,), "float32_a": 0 in rounded,
                   "float32_b": 1 in rounded and k % 2 == 0 and not shared}
        self.kernel = low_precision_gemm(eqn)(m, n, k, epilogue=_epilogue(names),
                                               **{o: True for o, on in options.items() if on})
        operand = native_pool.operand
        a = operand(0) if options["float32_a"] else self.kernel.pad_a_job(self.jobs, operand(0), step_policy.GEMM_THREADS)
        if options["float32_b"]:
            b, correction = operand(1), None
        elif 1 in rounded:
            b, correction = self.kernel.round_b_job(self.jobs, operand(1), step_policy.GEMM_THREADS), None
        else:
            b, correction = self._narrow_b(eqn, 1)
        extra = [operand(index) for index in range(2, count)]
        self.plan = self.kernel.gemm_job(self.jobs, a, b, correction, extra, operand(count), step_policy.GEMM_THREADS)

    def _narrow_b(self, eqn, index):
        """(panels, int8 correction or None) of a narrow B: packed once if a constant."""
        value = self.constants.get(eqn.inputs[index])
        if value is None:
            return self.kernel.pack_b_job(self.jobs, native_pool.operand(index), step_policy.GEMM_THREADS)
        prepared = self.kernel.prepare_b(value)
        correction = prepared.column_correction
        return self._constant(prepared.words), None if correction is None else self._constant(correction)

    def _constant(self, array):
        self.jobs.keep.append(array)
        return array_data(array)

    def describe(self):
        kernel = self.kernel
        return f"gemm {kernel.m}x{kernel.n}x{kernel.k} {kernel.product.name}"


_EPILOGUES = {"bias": gemm.BIAS, "residual": gemm.RESIDUAL, "scale": gemm.SCALE, "relu": gemm.RELU,
              "subtract": gemm.SUBTRACT, "subtract_from": gemm.SUBTRACT_FROM, "relu_grad": gemm.RELU_GRAD}
