"""From a ClosedJaxpr to machine code: the compiler's stages, one named list (STAGES).

    jaxpr passes   inline calls, fold constants, simplify, CSE, DCE      passes.py
    complex split  complex values as pairs of real ones                  complex_split.py
    rewrites       primitives computed with simpler ones                 rewrites.py
    GEMM passes    transposed products, operand layouts, epilogues, low-precision
                   products, 16-bit floats widened where eager widens    epilogues.py, quantized.py, passes.py
    fusion         kernels and the steps between them                    fusion.py, fusion_rules.py, step_policy.py
    memory plan    workspace offsets by liveness, donated buffers        buffers.py, donation.py
    codegen        LLVM IR, entry points, machine code: the Executable   codegen.py, entry_points.py, runtime.py

`lower_jaxpr` runs the stages up to fusion (what `jit(f).lower()` shows), and
`compile_program` the rest. With config "jaxlite_dump_passes" set, the result of every
stage is logged (logger "jaxlite.jit", at warning level so it shows without configuring
logging); `run_stages` runs any slice of STAGES (notebook 05 steps through them).
"""
import logging

import numpy as np

from jaxlite.core.config import config
from jaxlite.core.ir import pretty_print
from jaxlite.lower import (complex_split, epilogues, fusion, fusion_rules, kernel_ir, passes, quantized, rewrites,
                           runtime, step_policy)
from jaxlite.lower import primitives as P
from jaxlite.lower.buffers import BufferPlan
from jaxlite.lower.fusion import EqnStep, KernelStep
from jaxlite.lower.native_flow import control_programs
from jaxlite.lower.kernel_ir import Reduce

logger = logging.getLogger("jaxlite.jit")


class LoweredProgram:
    """The optimized jaxpr and its steps (fused kernels and equations run outside)."""

    def __init__(self, closed, steps, interface=None):
        """`interface`: the complex avals of the inputs and outputs, when the program had
        complex ones before complex_split made them interleaved real parts (else None)."""
        self.closed, self.steps, self.interface = closed, steps, interface

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
        text += f"\n  native {step.eqn.primitive} {role}:\n    {body}"
    return text


def _is_control(step):
    return isinstance(step, EqnStep) and step.kind == "control"


# ---------------------------------------------------------------- the stages

class Stage:
    """One named step of the compiler: `run(value, options)` -> the next value, and
    `text(value)`, what the dump shows after it."""

    def __init__(self, name, run, text):
        self.name, self.run, self.text = name, run, text

    def __repr__(self):
        return f"Stage({self.name})"


class Options:
    """What the last stages need besides the program: the entry points' name, and per
    argument whether the caller donates its buffer (donation.py)."""

    def __init__(self, name="jit_fn", donated=()):
        self.name, self.donated = _symbol(name), tuple(donated)


def _jaxpr_text(closed):
    return pretty_print(closed.jaxpr)


def _jaxpr_pass(graph_pass, name=None):
    return Stage(name or graph_pass.__name__, lambda closed, options: graph_pass(closed), _jaxpr_text)


# The jaxpr passes that clean a program up (passes.PIPELINE), as stages.
CLEANUP = tuple(_jaxpr_pass(graph_pass) for graph_pass in passes.PIPELINE)


def _rewrite(closed, options):
    """Primitives computed with simpler ones (rewrites.py), then the cleanup again over what
    they made (it merges the rewrites' transposes with their neighbours')."""
    rewritten = rewrites.apply_rewrites(closed)
    return closed if rewritten is closed else run_stages(rewritten, CLEANUP, options)


def _split_complex(closed, options):
    """Complex values as real parts (complex_split.py), then the cleanup over what that made."""
    split = complex_split.split_complex(closed)
    return closed if split is closed else run_stages(split, CLEANUP, options)


def _fuse(closed, options):
    steps = fusion.partition(closed.jaxpr, step_policy.eqn_step_kind)
    step_policy.log_fallbacks(steps)
    for step in filter(_is_control, steps):     # bodies run as native code inside the step
        step.programs = [lower_jaxpr(body) for _, body in control_programs(step.eqn)]
    return LoweredProgram(closed, steps)


def _plan_memory(program, options):
    return program, BufferPlan(program.closed.jaxpr, program.steps, options.donated)


def _memory_text(planned):
    program, plan = planned
    lines = [f"workspace {plan.workspace_size} bytes"]
    lines += [f"  {step_number}: {var} at {plan.offsets[var]}" for step_number, step in enumerate(program.steps)
              for var in step.outputs if var in plan.offsets]
    return "\n".join(lines)


def _generate_code(planned, options):
    program, plan = planned
    return runtime.Executable(program.closed.jaxpr, program.closed.consts, program.steps, plan, options.name,
                              program.interface)


# The compiler, from a traced program to an Executable, in order. With config
# "jaxlite_dump_passes" set, each stage's result is logged (logger "jaxlite.jit").
STAGES = (
    *CLEANUP,
    Stage("split_complex", _split_complex, _jaxpr_text),
    Stage("rewrites", _rewrite, _jaxpr_text),
    _jaxpr_pass(epilogues.swap_transposed_products),
    _jaxpr_pass(lambda closed: passes.transpose_gemm_operands(closed, step_policy.gemm_operand_permutations),
                "transpose_gemm_operands"),
    _jaxpr_pass(lambda closed: epilogues.fuse_epilogues(closed, step_policy.epilogue_fusable), "fuse_gemm_epilogues"),
    _jaxpr_pass(lambda closed: passes.fold_constant_operands(closed, step_policy.is_low_precision_gemm),
                "fold_low_precision_weights"),
    _jaxpr_pass(lambda closed: quantized.fuse_int8_matmuls(closed, step_policy.is_int8_gemm), "fuse_int8_matmuls"),
    _jaxpr_pass(lambda closed: quantized.round_bf16_operands_in_gemms(closed, step_policy.is_bf16_gemm),
                "round_bf16_operands_in_gemms"),
    _jaxpr_pass(lambda closed: passes.widen_narrow_floats(closed, _computes_widened, _scans_in_float64),
                "widen_narrow_floats"),
    _jaxpr_pass(passes.dce, "final_dce"),
    Stage("fusion", _fuse, lambda program: program.as_text()),
    Stage("memory plan", _plan_memory, _memory_text),
    Stage("codegen", _generate_code, lambda executable: executable.llvm_ir),
)
_FUSION = next(k for k, stage in enumerate(STAGES) if stage.name == "fusion")


# Scans of float32 run in float64: a sequential sum of n terms loses digits like n eps.
WIDENED_FLOAT32_SCANS = frozenset({P.cumsum_p})


def _scans_in_float64(eqn):
    return eqn.primitive in WIDENED_FLOAT32_SCANS


def _computes_widened(eqn):
    """The cumulative ops accumulate in float32 as eager does; linear algebra as the routines do."""
    return fusion_rules.domain_of(eqn) == "scan" or step_policy.computes_widened(eqn)


def run_stages(value, stages, options=None):
    options = options or Options()
    for stage in stages:
        value = stage.run(value, options)
        if config.jaxlite_dump_passes:
            logger.warning("after %s:\n%s", stage.name, stage.text(value))
    return value


def lower_jaxpr(closed):
    """The stages up to fusion: the optimized jaxpr and its steps."""
    if config.jaxlite_dump_passes:
        logger.warning("jaxpr before passes:\n%s", pretty_print(closed.jaxpr))
    program = run_stages(closed, STAGES[:_FUSION + 1])
    program.interface = complex_split.interface_of(closed)
    return program


def compile_program(program, name="jit_fn", donated=()):
    """The stages after fusion: memory plan and code generation. `donated`: per argument,
    whether the caller gives its buffer up (see donation.py)."""
    return run_stages(program, STAGES[_FUSION + 1:], Options(name, donated))


def _symbol(name):
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "jit_fn"


# ---------------------------------------------------------------- cost analysis

def cost_analysis(program):
    """Floating-point operations and bytes read and written, summed over the steps."""
    accessed = sum(v.aval.size * v.aval.dtype.itemsize for step in program.steps for v in step.inputs + step.outputs)
    return {"flops": float(_program_flops(program)), "bytes accessed": float(accessed)}


def _program_flops(program):
    return sum(_step_flops(step) for step in program.steps)


def _step_flops(step):
    if isinstance(step, KernelStep):
        return _kernel_flops(step.kernel)
    primitive = step.eqn.primitive
    if primitive in step_policy.GEMM_PRIMITIVES:
        m, n, k, batch = step_policy.gemm_sizes(step.eqn)
        return 2 * m * n * k * batch
    if not _is_control(step):
        return 0
    bodies = [_program_flops(body) for body in step.programs]
    if primitive is P.scan_p:
        return step.eqn.params["length"] * bodies[0]
    if primitive is P.while_p:     # one trip: the count is known only at run time
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
        count += kernel_ir.OPS[e.op].flop and e.dtype != np.int64
        stack.extend(e.args)
    return count
