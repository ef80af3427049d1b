"""The Executable: a compiled function's buffers, its code, and calling it.

(Its parts live beside it: the memory plan in buffers.py, the native entry points in
entry_points.py, the GEMM calls in gemm_calls.py, and the choice of how each equation
outside the kernels runs in step_policy.py.)

A compiled program is a list of steps: fused kernels, control flow (native loops
and branches around their bodies' steps, see native_flow.py), GEMMs and native routines
(sorts, factorizations: native_routines.py), bf16/int8 products (a list of jobs for the
worker pool: quantize or pack the operands, then the GEMM's units; LowPrecisionCall),
and the few equations that run from Python (debug callbacks, and logged fallbacks to an
equation's numpy implementation). All of one compiled function's code
lives in one LLVM module (a big one compiles in pieces, llvm_target.split_module). Each kernel, control-flow, GEMM and routine step has a native
entry point `void entry(ptr objects, i64 start, i64 stop)` (start/stop bound a kernel's
parallel loop); when every step is one of those, one more entry point runs them all,
and a call is one call of it, as a Python builtin (native_call.py: no ctypes on that
path). Inside it, big kernels, GEMMs and routines hand units of work to the native
worker pool (native_pool.py), so a program crosses from Python to native code once
even when it uses every core.

Buffers:
  * arguments and constants: the caller's numpy arrays (made C-contiguous);
  * outputs: fresh numpy arrays per call, or a donated argument's buffer (donation.py);
  * intermediates: offsets in one workspace array per call, planned by liveness so
    a buffer's bytes are reused once its last reader has run; control-flow steps
    keep their carries and their bodies' intermediates after the planned part, and
    GEMMs and routines their per-thread scratch. A big workspace is kept for the
    thread's next call (_KeptWorkspace).
The entry point receives the *numpy array objects* (their addresses, `id(array)`),
and reads each data pointer from the object itself: numpy's stable ABI puts it
right after the object header. This saves ~1.5 us of `arr.ctypes.data` per buffer
per call. Workspace pointers are the workspace's data pointer plus a constant.
"""
import ctypes
import mmap
import threading

import numpy as np

from jaxlite.core.errors import check_allocation
from jaxlite.core.ir import Literal
# native_pool is imported where a program runs on it: a program loaded from the persistent
# cache that does not never loads it.
from jaxlite.lower import llvm_target, native_call
from jaxlite.lower.buffers import PythonStep
from jaxlite.lower.fusion import EqnStep, KernelStep
from jaxlite.lower.native_call import object_data as _object_data

# The code generators (codegen, entry_points, native_flow, gemm) are imported where code is
# generated: a program loaded from the persistent cache needs none of them (~60 ms of imports)
# unless it calls GEMMs or routines from native control flow, or runs steps from Python.


def _check_data_offset():
    probe = np.zeros(1)
    return _object_data(id(probe)) == probe.ctypes.data


assert _check_data_offset(), "numpy's array layout differs from the stable ABI this runtime reads"


# ---------------------------------------------------------------- the executable

class Executable:
    """A compiled jaxpr: call it with flat numpy arrays, get flat numpy arrays back."""

    def __init__(self, jaxpr, consts, steps, buffer_plan, name="jit_fn", interface=None):
        """`buffer_plan`: where each value lives (buffers.BufferPlan, the pipeline's memory plan).
        `interface`: (input avals, output avals) as callers see them when the program had complex
        ones (complex_split: the code sees their bytes as interleaved real parts), else None."""
        from jaxlite.lower import codegen, native_flow
        self.jaxpr, self.consts, self.steps = jaxpr, [_contiguous(c) for c in consts], steps
        self.name, self.interface = name, interface
        self.out_vars, self.donation = buffer_plan.out_vars, buffer_plan.donation
        self.object_slots, self.plan = buffer_plan.object_slots, buffer_plan.memory
        self.workspace_size = self.plan.size
        outputs = buffer_plan.output_bytes
        check_allocation(self.plan.size + outputs, lambda: f"{self.name}: its outputs ({outputs} bytes) "
                                                           f"and intermediates ({self.plan.size} bytes)")
        # "native N" (the N-th GEMM called by native code) -> GemmPlan, chosen once and
        # kept with the code
        self.gemm_plans = {}
        llvm_target.in_background(native_call.trampoline)
        self.module = codegen.new_module(name)
        self._segments = self._build_segments()
        # The worker pool starts (the first time) while the kernels compile, only for a
        # program that calls it: its start costs ~7 ms CPU (loading its code, measuring
        # the clock, a thread), a third of a small first program's compile.
        # (The pool's start links jaxlite_pool_run, which the code calls.)
        from jaxlite.lower import native_pool
        linked = llvm_target.in_background(native_pool.pool).result if self.uses_pool else None
        pieces = llvm_target.split_module(self.module)
        self.llvm_ir = "\n".join(pieces)
        # The kernels' module (in pieces) and the GEMM families the program calls compile
        # at once, on all cores (see llvm_target).
        compiled = llvm_target.compile_pieces(pieces, linked) if self._has_native else None
        callees = [llvm_target.in_background(native_flow.native_callee, eqn, None, self._constants())
                   for eqn in self._native_eqns]
        self._bind_callees([callee.result() for callee in callees])
        # The first call's workspace (40 MB for the CNN step: 10-100 ms of page faults
        # here) is mapped while the kernels finish compiling.
        workspace = llvm_target.in_background(_mapped_buffer, self.workspace_size) \
            if self.workspace_size >= KEEP_WORKSPACE_BYTES else None
        self.compiled = compiled() if compiled is not None else None
        self._bind_code(workspace.result() if workspace is not None else None)

    def _build_segments(self):
        """When every step is a kernel, control flow or a native GEMM or routine, one entry
        point that runs them all (its big kernels split by the native pool): one native
        call per call. Otherwise an entry point per such step (a big kernel's split across
        threads), run from Python between the other steps."""
        from jaxlite.lower import native_flow
        from jaxlite.lower.entry_points import emit_object_entry, emit_pool_task, splits
        segments, calls = [], []
        whole = all(isinstance(step, KernelStep) or step.kind == "control" or native_flow.runs_natively(step)
                    for step in self.steps)
        # Slots after the buffers: the native control flow's table, then its constants.
        native = native_flow.NativeCode(self.module, len(self.object_slots) + 1)
        for number, step in enumerate(self.steps):
            if isinstance(step, EqnStep) and step.kind != "control" and not native_flow.runs_natively(step):
                segments.append(step)
                continue
            name = f"{self.name}_step{number}"
            if isinstance(step, EqnStep):
                function = self._control_function(native, step, number)
                calls.append((function, None, None))
                segments.append((name, None))
                if not whole:
                    emit_object_entry(self.module, name, calls[-1:])
                continue
            function = native.kernel_function(step.kernel, self.donation.kernel_aliases.get(number))
            sources = [self._source(v) for v in step.inputs + step.outputs]
            loop = step.kernel.parallel_loop()
            bounds = loop.extent if loop is not None else None
            split = bounds is not None and splits(step.kernel)
            if split or not whole:
                entry = emit_object_entry(self.module, name, [(function, sources, True if bounds is not None else None)])
            calls.append((emit_pool_task(self.module, entry, bounds), None, "split") if split
                         else (function, sources, bounds))
            segments.append((name, step.kernel))
        self._has_native = bool(calls)
        self._whole_entry = None
        if calls and len(calls) == len(self.steps):
            self._whole_entry = f"{self.name}_all"
            emit_object_entry(self.module, self._whole_entry, calls)
        self.uses_pool = "jaxlite_pool_run" in self.module.globals
        self._host_steps, self._native_eqns, self._native_scratch = native.host_steps, native.native_eqns, \
            native.native_scratch
        self._inner_consts, self._inner_const_values = native.consts, native.const_values
        return segments

    def _control_function(self, native, step, number):
        from jaxlite.lower import native_flow

        def pointer_of(fn, var):
            kind, value = self._source(var)
            return fn.slot_data(value) if kind == "object" else fn.workspace(value)
        function, used = native_flow.emit_control_function(
            native, f"{self.name}_control{number}", step, pointer_of, self.plan.size)
        self.workspace_size = max(self.workspace_size, self.plan.size + used)
        return function

    def _source(self, var):
        if var in self.object_slots:
            return ("object", self.object_slots[var])
        return ("workspace", self.plan.offsets[var])

    def _constants(self):
        """The program's constant variables (its bodies' too) -> their values."""
        return {**dict(zip(self.jaxpr.constvars, self.consts)), **self._inner_const_values}

    def _bind_entries(self):
        """Bind code loaded from the persistent cache (GEMMs with the plans chosen then)."""
        callees = []
        if self._native_eqns:
            from jaxlite.lower import native_flow
            callees = [native_flow.native_callee(eqn, self.gemm_plans.get(f"native {k}"), self._constants())
                       for k, eqn in enumerate(self._native_eqns)]
        self._bind_callees(callees)
        self._bind_code()

    def _bind_callees(self, callees):
        self._bridge = None
        if self._host_steps or callees:
            from jaxlite.lower import native_flow
            from jaxlite.lower.gemm_calls import GemmCall
            self._bridge = native_flow.HostBridge(self._host_steps, callees, self._native_scratch)
            self.workspace_size = max(self.workspace_size, self._bridge.scratch_end)
            self.gemm_plans.update((f"native {k}", callee.plan) for k, callee in enumerate(callees)
                                   if isinstance(callee, GemmCall))
        # Objects after the buffers, when native code reads them: the table (when it calls
        # out or calls a GEMM), then the loop bodies' constants.
        self._tail = []
        if self._bridge is not None or self._inner_consts:
            self._tail = [self._bridge.table if self._bridge is not None else _NO_WORKSPACE, *self._inner_consts]

    def _bind_code(self, workspace=None):
        """`workspace`: a buffer for the first call, if one is ready."""
        self._native, self._runners = (self._builtin_entry(), []) if self._whole_entry else (None, self._step_runners())
        self._slot_array = ctypes.c_size_t * (len(self.object_slots) + 1 + len(self._tail))
        self._prepare_call(workspace)

    def _step_runners(self):
        runners = []
        for segment in self._segments:
            if not isinstance(segment, tuple):
                runners.append(PythonStep(segment))
            elif segment[1] is None:
                runners.append(_SerialEntry(self._entry(segment[0]), self._bridge, self.compiled))
            else:
                runners.append(_NativeKernel(self.compiled, segment[0], segment[1]))
        return runners

    def _entry(self, name):
        return _NativeKernel._prototype(self.compiled.address(name))

    def _builtin_entry(self):
        """The whole program as a builtin taking (workspace, *consts, *args, *outputs); it
        releases the GIL only when the work repays it (a few hundred ns when contended)."""
        first_output = 1 + len(self.consts) + len(self.jaxpr.invars)
        points = sum(kernel.points() for _, kernel in self._segments if kernel is not None)
        long_enough = points >= RELEASE_GIL_MIN_POINTS or bool(self._native_eqns or self._host_steps)
        # The builtin outlives this executable when a cache drops it mid-call or a fast path
        # holds only the builtin: it keeps the code and the bridge, whose GEMM and
        # low-precision calls own the unit tables and packed constants the code reads.
        return native_call.builtin_entry(self.compiled.address(self._whole_entry),
                                         len(self.object_slots) + 1 + len(self._tail),
                                         range(first_output, len(self.object_slots) + 1), long_enough,
                                         (self.compiled, self._bridge))

    # -- calling
    def _prepare_call(self, workspace=None):
        """Precomputed per-call facts, so a call does little more than allocate and jump."""
        jaxpr = self.jaxpr
        external = self._external_avals()
        self._out_specs = [(external.get(v, v.aval).shape, external.get(v, v.aval).dtype) for v in self.out_vars]
        position = {v: i for i, v in enumerate(jaxpr.constvars + jaxpr.invars + self.out_vars)}
        self._out_sources = [np.array(v.val, v.aval.dtype) if isinstance(v, Literal) else position[v]
                             for v in jaxpr.outvars]
        if self.interface is not None:
            self._out_sources = [self._complex_source(source, aval)
                                 for source, aval in zip(self._out_sources, self.interface[1])]
        self._reuse = [(k, self.donation.reused[v]) for k, v in enumerate(self.out_vars) if v in self.donation.reused]
        self._only_native = all(not isinstance(r, PythonStep) for r in self._runners)
        self._kept_workspace = _KeptWorkspace(self.workspace_size, workspace) \
            if self.workspace_size >= KEEP_WORKSPACE_BYTES else None

    def _external_avals(self):
        """Output variables whose callers see complex arrays (their buffers are allocated so)."""
        if self.interface is None:
            return {}
        return {v: aval for v, aval in zip(self.jaxpr.outvars, self.interface[1])
                if not isinstance(v, Literal) and aval.dtype != v.aval.dtype}

    def _complex_source(self, source, aval):
        """A complex output read from a constant or a literal (interleaved real parts): the
        complex array itself, as a literal output is (computed outputs and arguments already are)."""
        if aval.dtype.kind != "c" or type(source) is int and source >= len(self.consts):
            return source
        parts = self.consts[source] if type(source) is int else source
        return np.ascontiguousarray(parts).view(aval.dtype).reshape(aval.shape)

    def __call__(self, args, owned=()):
        """Run on `args`. An output planned to reuse a donated argument's buffer (the code may
        write it through the argument's pointer) is written into that buffer when the caller
        owns it (`owned` positions), else into a private copy of the argument."""
        args = [_contiguous(a) for a in args]
        outputs = [np.empty(shape, dtype) for shape, dtype in self._out_specs]
        for k, position in self._reuse:
            if position not in owned:
                args[position] = args[position].copy()
            outputs[k] = _writeable(args[position])
        kept = self._kept_workspace
        workspace = kept.take() if kept else np.empty(self.workspace_size, np.uint8) if self.workspace_size \
            else _NO_WORKSPACE
        buffers = self.consts + args + outputs
        if self._native is not None:
            self._native(workspace, *buffers, *self._tail)
            if self._bridge is not None:
                self._bridge.raise_pending()
        else:
            slots = self._slot_array(id(workspace), *map(id, buffers), *map(id, self._tail))
            if self._only_native:
                for runner in self._runners:
                    runner(slots)
            else:
                self._run_mixed(slots, buffers, workspace)
        if kept:
            kept.give_back(workspace)
        return self._results(buffers)

    def _results(self, buffers):
        return [buffers[source] if type(source) is int else source.copy() for source in self._out_sources]

    def _run_mixed(self, slots, buffers, workspace):
        jaxpr = self.jaxpr
        env = {v: _as_aval(b, v.aval) for v, b in zip(jaxpr.constvars + jaxpr.invars + self.out_vars, buffers)}
        for runner in self._runners:
            if isinstance(runner, PythonStep):
                runner(env, workspace, self.plan)
            else:
                runner(slots)

    def native_entry(self):
        """The whole program as one native call, for callers that make their own call
        function (transforms/dispatch.py), or None when steps run from Python."""
        if self._native is None:
            return None
        return NativeEntry(self)

    def asm(self):
        return self.compiled.asm() if self.compiled is not None else ""

    def describe_gemm_plans(self):
        """One line per GEMM call: its problem and the plan that runs it."""
        calls = self._bridge.gemm_calls if self._bridge is not None else []
        return [f"{call.describe()}: {call.plan.describe()}" for call in calls]


class NativeEntry:
    """How to call a program that is one native entry point:

        entry(workspace, *consts, *args, *outputs, *tail)

    with `workspace` a fresh uint8 buffer of `workspace_size` bytes (or taken from and
    given back to `kept_workspace` when there is one), outputs fresh arrays per
    `out_specs` (shape, dtype), except output k in `reused` writing into argument
    reused[k]'s buffer; after the call, `bridge.raise_pending()` (when not None) re-raises
    what a Python callback inside raised. `out_sources` gives each jaxpr output: an int
    (a position in consts + args + outputs) or a literal's value."""

    def __init__(self, executable):
        self.entry, self.consts, self.tail = executable._native, executable.consts, executable._tail
        self.workspace_size, self.kept_workspace = executable.workspace_size, executable._kept_workspace
        self.bridge = executable._bridge if executable._host_steps else None
        self.reused, self.out_specs = dict(executable._reuse), executable._out_specs
        self.out_sources = executable._out_sources


class _SerialEntry:
    """The entry point of a control-flow, GEMM or routine step run between steps run from
    Python. Re-raises what a Python callback inside raised."""

    def __init__(self, function, bridge, code_owner):
        self.function, self.bridge = function, bridge
        self.code_owner = code_owner    # the machine code lives as long as its callers

    def __call__(self, slots):
        self.function(slots, 0, 0)
        if self.bridge is not None:
            self.bridge.raise_pending()


RELEASE_GIL_MIN_POINTS = 1 << 14     # a whole program this big lets other Python threads run meanwhile


class _NativeKernel:
    """Calls one kernel's entry point; a big kernel hands its shares (its pool task,
    emit_pool_task) to the native pool (native_pool.py)."""

    _prototype = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)

    def __init__(self, compiled, name, kernel):
        from jaxlite.lower.entry_points import SHARE, splits
        self.code_owner = compiled      # the machine code lives as long as its callers (see native_call)
        self.function = self._prototype(compiled.address(name))
        loop = kernel.parallel_loop()
        self.extent = loop.extent if loop is not None else 0
        self.share = compiled.address(name + SHARE) if splits(kernel) else None
        from jaxlite.lower import native_pool
        self.units, self._run_on_pool = native_pool.available_cpus(), native_pool.run

    def __call__(self, slots):
        if self.share is None:
            self.function(slots, 0, self.extent)
        else:
            self._run_on_pool(self.share, ctypes.addressof(slots), self.units)


_NO_WORKSPACE = np.empty(0, np.uint8)
# A workspace this big is kept for the next call: a fresh one faults its pages in on every
# call (5 MB, the MLP step's: ~0.6 ms, an eighth of the step; 1 MB: ~40 us).
KEEP_WORKSPACE_BYTES = 1 << 18


class _KeptWorkspace:
    """One workspace per thread, taken for a call and given back after it; a call that
    finds it taken (a callback inside re-entering the same program) gets a fresh one."""

    def __init__(self, size, first=None):
        """`first`: the spare of the thread making this (if given, of `size` bytes)."""
        self.size, self._spare = size, threading.local()
        self._spare.buffer = first

    def take(self):
        workspace = getattr(self._spare, "buffer", None)
        if workspace is None:
            return np.empty(self.size, np.uint8)
        self._spare.buffer = None
        return workspace

    def give_back(self, workspace):
        self._spare.buffer = workspace


def _mapped_buffer(nbytes):
    """A buffer of nbytes whose pages the system has mapped (each written once)."""
    buffer = np.empty(nbytes, np.uint8)
    buffer[::mmap.PAGESIZE] = 0
    return buffer


def _as_aval(buffer, aval):
    """A complex buffer as the interleaved real parts the program's steps see (a view)."""
    if buffer.dtype == aval.dtype:
        return buffer
    return buffer.reshape(-1).view(aval.dtype).reshape(aval.shape)


def _contiguous(x):
    """A C-contiguous ndarray (never a numpy scalar: the entry points read array objects)."""
    if type(x) is not np.ndarray:
        x = np.asarray(x)
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x).reshape(x.shape)   # (ascontiguousarray makes 0-d arrays 1-d)
    return x


def _writeable(buffer):
    """A donated buffer (read-only as an Array's) opened for writing; the caller owns it,
    and the base it may view (which may be sealed read-only too)."""
    if buffer.base is not None:
        buffer.base.flags.writeable = True
    buffer.flags.writeable = True
    return buffer


