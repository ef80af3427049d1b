"""From a ClosedJaxpr to machine code: graph passes, fusion, code generation."""
import numpy as np

from jaxlite.core.config import config
from jaxlite.core.ir import pretty_print
from jaxlite.lower import epilogues, fusion, passes, quantized, runtime
from jaxlite.lower.fusion import KernelStep
from jaxlite.lower.kernel_ir import Reduce


class LoweredProgram:
    """The optimized jaxpr and its steps (fused kernels and equations run outside)."""

    def __init__(self, closed, steps):
        self.closed, self.steps = closed, steps

    def as_text(self):
        parts = [pretty_print(self.closed.jaxpr)]
        parts += [step.describe() for step in self.steps]
        return "\n\n".join(parts)

    def kernel_count(self):
        return sum(isinstance(step, KernelStep) for step in self.steps)


def lower_jaxpr(closed):
    optimized = passes.run_passes(closed)
    optimized = passes.run_passes(optimized, (_fuse_gemm_epilogues, _fold_low_precision_weights,
                                              _fuse_int8_matmuls, passes.dce))
    steps = fusion.partition(optimized.jaxpr, runtime.eqn_step_kind)
    runtime.log_fallbacks(steps)
    program = LoweredProgram(optimized, steps)
    if config.jaxlite_dump_passes:
        passes.logger.warning("after fusion:\n%s", program.as_text())
    return program


def _fuse_gemm_epilogues(closed):
    return epilogues.fuse_epilogues(closed, runtime.epilogue_fusable)


def _fold_low_precision_weights(closed):
    return passes.fold_constant_operands(closed, runtime.is_low_precision_gemm)


def _fuse_int8_matmuls(closed):
    return quantized.fuse_int8_matmuls(closed, runtime.is_int8_gemm)


def compile_program(program, name="jit_fn", donated=()):
    """`donated`: per argument, whether the caller gives its buffer up (see donation.py)."""
    return runtime.Executable(program.closed.jaxpr, program.closed.consts, program.steps, _symbol(name), donated)


def _symbol(name):
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "jit_fn"


# ---------------------------------------------------------------- cost analysis

_FREE_OPS = frozenset({"const", "loop", "load", "acc", "convert", "bitcast", "select_n"})


def cost_analysis(program):
    """Floating-point operations and bytes read and written, summed over the steps."""
    flops, accessed = 0, 0
    for step in program.steps:
        accessed += sum(v.aval.size * v.aval.dtype.itemsize for v in step.inputs + step.outputs)
        if isinstance(step, KernelStep):
            flops += _kernel_flops(step.kernel)
        elif step.eqn.primitive.name in runtime.GEMM_PRIMITIVES:
            m, n, k, batch = runtime._gemm_sizes(step.eqn)
            flops += 2 * m * n * k * batch
    return {"flops": float(flops), "bytes accessed": float(accessed)}


def _kernel_flops(kernel):
    outer = int(np.prod([loop.extent for loop in kernel.outer]))
    total = 0
    for stage in kernel.stages:
        points = outer * int(np.prod([loop.extent for loop in stage.loops]))
        roots = [stage.value] if isinstance(stage, Reduce) else [value for _, _, value in stage.writes]
        total += points * (_count_ops(roots) + isinstance(stage, Reduce))
    return total


def _count_ops(roots):
    seen, stack, count = set(), list(roots), 0
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        count += e.op not in _FREE_OPS and e.dtype != np.int64
        stack.extend(e.args)
    return count
