"""Where a compiled program's values live: the memory plan of its workspace (liveness,
buffer reuse), numpy views of the planned buffers, and the equations run from Python on
those views between native steps."""
import numpy as np

from jaxlite.core.ir import Literal, Var
from jaxlite.lower.donation import DonationPlan
ALIGNMENT = 64


class BufferPlan:
    """Where each value of a program lives: an object slot (0: the workspace, then the
    constants, arguments and outputs: the caller's numpy arrays), or an offset in the
    workspace (MemoryPlan); outputs may reuse donated arguments' buffers (DonationPlan)."""

    def __init__(self, jaxpr, steps, donated=()):
        self.out_vars = [v for v in dict.fromkeys(v for v in jaxpr.outvars if isinstance(v, Var))
                         if v not in jaxpr.invars and v not in jaxpr.constvars]
        self.donation = DonationPlan(jaxpr, steps, set(self.out_vars), donated)
        self.object_slots = {}
        for v in jaxpr.constvars + jaxpr.invars + self.out_vars:
            self.object_slots.setdefault(v, len(self.object_slots) + 1)
        computed = {v for step in steps for v in step.outputs}
        self.memory = MemoryPlan(steps, computed - set(self.object_slots))
        self.offsets, self.workspace_size = self.memory.offsets, self.memory.size
        self.output_bytes = sum(_nbytes(v) for v in self.out_vars)


class MemoryPlan:
    """Workspace offsets for intermediates: first fit over freed ranges, by liveness."""

    def __init__(self, steps, intermediates):
        last_use = {}
        for position, step in enumerate(steps):
            for v in step.inputs:
                last_use[v] = position
        self.offsets, self.size = {}, 0
        free = []               # (offset, size) ranges available for reuse
        for position, step in enumerate(steps):
            for v in step.outputs:
                if v in intermediates:
                    self.offsets[v] = self._allocate(free, _nbytes(v))
            for v in dict.fromkeys(step.inputs):    # once each: a step may read a value twice
                if v in intermediates and last_use.get(v) == position:
                    free.append((self.offsets[v], _nbytes(v)))
            for v in step.outputs:      # written but never read (dead results of a fallback)
                if v in intermediates and v not in last_use:
                    free.append((self.offsets[v], _nbytes(v)))

    def _allocate(self, free, nbytes):
        for k, (offset, size) in enumerate(free):
            if size >= nbytes:
                free[k] = (offset + nbytes, size - nbytes)
                return offset
        offset = self.size
        self.size += nbytes
        return offset


def _nbytes(var):
    return aligned(var.aval.size * var.aval.dtype.itemsize)


def aligned(nbytes):
    """Bytes reserved for a buffer of nbytes: at least one, rounded up to ALIGNMENT."""
    return -(-max(nbytes, 1) // ALIGNMENT) * ALIGNMENT


def buffer_view(var, env, workspace, plan):
    if var in env:
        return env[var]
    count = var.aval.size
    view = np.frombuffer(workspace, var.aval.dtype, count, plan.offsets[var]) if count else \
        np.empty(0, var.aval.dtype)
    return view.reshape(var.aval.shape)


class PythonStep:
    """An equation run between kernels on numpy views of its buffers."""

    def __init__(self, step):
        self.step = step

    def __call__(self, env, workspace, plan):
        self.run_on(lambda v: buffer_view(v, env, workspace, plan))

    def run_on(self, view):
        """Run the equation; `view(var)` is a numpy view of a variable's buffer."""
        eqn = self.step.eqn
        inputs = [np.asarray(v.val, v.aval.dtype) if isinstance(v, Literal) else view(v) for v in eqn.inputs]
        outputs = [view(v) for v in eqn.outputs]
        with np.errstate(all="ignore"):     # IEEE results without numpy's warnings, as eager runs it
            results = eqn.primitive.impl(*inputs, **eqn.params)
        results = results if eqn.primitive.multiple_results else [results]
        for out, result in zip(outputs, results):
            np.copyto(out, np.asarray(result).astype(out.dtype, copy=False))
