"""From a ClosedJaxpr to machine code: graph passes, fusion, code generation."""
import numpy as np

from jaxlite.core.config import config
from jaxlite.core.ir import pretty_print
from jaxlite.lower import epilogues, fusion, passes, quantized, rewrites, runtime
from jaxlite.lower.fusion import EqnStep, KernelStep
from jaxlite.lower.native_flow import control_programs
from jaxlite.lower.kernel_ir import Reduce


class LoweredProgram:
    """The optimized jaxpr and its steps (fused kernels and equations run outside)."""

    def __init__(self, closed, steps):
        self.closed, self.steps = closed, steps

    def as_text(self):
        parts = [pretty_print(self.closed.jaxpr)]
        parts += [_describe(step) for step in self.steps]
        return "\n\n".join(parts)

    def kernel_count(self):
        return sum(isinstance(step, KernelStep) for step in self.steps)


def _describe(step):
    """A step's text; a control-flow step adds its native loop or branch and its bodies'
    steps, indented."""
    text = step.describe()
    if not _is_control(step):
        return text
    roles = [role for role, _ in control_programs(step.eqn)]
    for role, program in zip(roles, step.programs):
        body = program.as_text().replace("\n", "\n    ")
        text += f"\n  native {step.eqn.primitive.name} {role}:\n    {body}"
    return text


def _is_control(step):
    return isinstance(step, EqnStep) and step.kind == "control"


def lower_jaxpr(closed):
    optimized = passes.run_passes(closed)
    rewritten = rewrites.apply_rewrites(optimized)
    if rewritten is not optimized:    # (the passes merge the rewrites' transposes with their neighbours')
        optimized = passes.run_passes(rewritten)
    optimized = passes.run_passes(optimized, (epilogues.swap_transposed_products, _transpose_gemm_operands,
                                              _fuse_gemm_epilogues, _fold_low_precision_weights,
                                              _fuse_int8_matmuls, _round_bf16_operands_in_gemms,
                                              _widen_narrow_floats, passes.dce))
    steps = fusion.partition(optimized.jaxpr, runtime.eqn_step_kind)
    runtime.log_fallbacks(steps)
    for step in filter(_is_control, steps):     # bodies run as native code inside the step
        step.programs = [lower_jaxpr(body) for _, body in control_programs(step.eqn)]
    program = LoweredProgram(optimized, steps)
    if config.jaxlite_dump_passes:
        passes.logger.warning("after fusion:\n%s", program.as_text())
    return program


def _transpose_gemm_operands(closed):
    return passes.transpose_gemm_operands(closed, runtime.gemm_operand_permutations)


def _fuse_gemm_epilogues(closed):
    return epilogues.fuse_epilogues(closed, runtime.epilogue_fusable)


def _fold_low_precision_weights(closed):
    return passes.fold_constant_operands(closed, runtime.is_low_precision_gemm)


def _fuse_int8_matmuls(closed):
    return quantized.fuse_int8_matmuls(closed, runtime.is_int8_gemm)


# Scans of float32 run in float64: a sequential sum of n terms loses digits like n eps.
WIDENED_FLOAT32_SCANS = frozenset({"cumsum"})


def _widen_narrow_floats(closed):
    return passes.widen_narrow_floats(
        closed, lambda eqn: eqn.primitive.name in fusion.CUMULATIVE or runtime.computes_widened(eqn),
        lambda eqn: eqn.primitive.name in WIDENED_FLOAT32_SCANS)


def _round_bf16_operands_in_gemms(closed):
    return quantized.round_bf16_operands_in_gemms(closed, runtime.is_bf16_gemm)


def compile_program(program, name="jit_fn", donated=()):
    """`donated`: per argument, whether the caller gives its buffer up (see donation.py)."""
    return runtime.Executable(program.closed.jaxpr, program.closed.consts, program.steps, _symbol(name), donated)


def _symbol(name):
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "jit_fn"


# ---------------------------------------------------------------- cost analysis

_FREE_OPS = frozenset({"const", "loop", "load", "acc", "convert", "bitcast", "select_n"})


def cost_analysis(program):
    """Floating-point operations and bytes read and written, summed over the steps."""
    accessed = sum(v.aval.size * v.aval.dtype.itemsize for step in program.steps for v in step.inputs + step.outputs)
    return {"flops": float(_program_flops(program)), "bytes accessed": float(accessed)}


def _program_flops(program):
    return sum(_step_flops(step) for step in program.steps)


def _step_flops(step):
    if isinstance(step, KernelStep):
        return _kernel_flops(step.kernel)
    name = step.eqn.primitive.name
    if name in runtime.GEMM_PRIMITIVES:
        m, n, k, batch = runtime._gemm_sizes(step.eqn)
        return 2 * m * n * k * batch
    if not _is_control(step):
        return 0
    bodies = [_program_flops(body) for body in step.programs]
    if name == "scan":
        return step.eqn.params["length"] * bodies[0]
    if name == "while":     # one trip: the count is known only at run time
        return sum(bodies)
    return max(bodies)      # cond: the costliest branch


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
