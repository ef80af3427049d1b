"""Buffer donation: which outputs may be written into which donated arguments.

Pairing follows JAX: each output, in order, takes the first still-unpaired donated
argument of the same shape and dtype; a donated argument left without a partner is
"not usable" (jit warns once, at compile time, and leaves that argument alone).

A pair is only a promise about the argument (the caller gives it up, so jit deletes
it); the output is written into the argument's buffer only when that is safe: donated
buffers are never read after being reused. Steps run in order, so it is safe when no
step after the one writing the output reads the argument, and the writing step itself
either does not read the argument or is a kernel that reads it only at the point it
writes (`_reads_in_place`). Anything else (a reversed or transposed read, a GEMM, a
reduction) keeps a fresh output buffer.
"""
from jaxlite.core.ir import Var
from jaxlite.lower.fusion import KernelStep
from jaxlite.lower.kernel_ir import Store, loads


class DonationPlan:
    """`paired`: argument position -> output position (positions in the jaxpr's invars and
    outvars); `reused`: output Var -> argument position whose buffer it is written into;
    `kernel_aliases`: step number -> {output Buffer: argument Buffer} for code generation;
    `unusable`: avals of donated arguments without a partner."""

    def __init__(self, jaxpr, steps, computed_outputs, donated):
        self.paired, self.reused, self.kernel_aliases, self.unusable = {}, {}, {}, []
        if not any(donated):
            return
        self._pair(jaxpr, donated)
        writers = {v: number for number, step in enumerate(steps) for v in step.outputs}
        for arg, out in self.paired.items():
            x, o = jaxpr.invars[arg], jaxpr.outvars[out]
            if o in computed_outputs and o not in self.reused and x not in jaxpr.outvars:
                self._reuse_if_safe(steps, writers[o], x, o, arg)

    def _pair(self, jaxpr, donated):
        waiting = [i for i, d in enumerate(donated) if d]
        for out, o in enumerate(jaxpr.outvars):
            match = next((i for i in waiting if _same_buffer_type(jaxpr.invars[i], o)), None)
            if match is not None:
                waiting.remove(match)
                self.paired[match] = out
        self.unusable = [jaxpr.invars[i].aval for i in waiting]

    def _reuse_if_safe(self, steps, writer, x, o, arg):
        if any(x in step.inputs for step in steps[writer + 1:]):
            return
        step = steps[writer]
        if x in step.inputs:
            if not isinstance(step, KernelStep) or step.inputs.count(x) != 1:
                return
            buffers = dict(zip(step.inputs + step.outputs, step.kernel.params))
            if not _reads_in_place(step.kernel, buffers[x], buffers[o]):
                return
            self.kernel_aliases.setdefault(writer, {})[buffers[o]] = buffers[x]
        self.reused[o] = arg


def _same_buffer_type(a, b):
    return isinstance(b, Var) and a.aval.shape == b.aval.shape and a.aval.dtype == b.aval.dtype


def _reads_in_place(kernel, source, target):
    """Whether `kernel` may write `target` through `source`'s pointer: one store stage
    (no reductions that read ahead), `target` written last in it, and every load of
    `source` at exactly the index `target` is written at (index expressions are
    hash-consed, so the same index is the same object). Then each point loads its own
    element before overwriting it and no point reads another's."""
    if kernel.outer or len(kernel.stages) != 1 or not isinstance(kernel.stages[0], Store):
        return False
    writes = kernel.stages[0].writes
    last_buffer, index, _ = writes[-1]
    if last_buffer is not target or any(buffer is target for buffer, _, _ in writes[:-1]):
        return False
    roots = [e for _, i, v in writes for e in (i, v)]
    return all(load.args[0] is index for load in loads(roots) if load.attr is source)

