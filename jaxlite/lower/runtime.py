"""Runtime: buffers, the native entry points, and calling a compiled function.

A compiled program is a list of steps: fused kernels, control flow (native loops
and branches around their bodies' steps, see native_flow.py), GEMMs and native routines
(sorts, factorizations: native_routines.py), bf16/int8 products (a list of jobs for the
worker pool: quantize or pack the operands, then the GEMM's units; _LowPrecisionCall),
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
import logging
import mmap
import threading

import numpy as np
from llvmlite import ir

from jaxlite.core.dtypes import bfloat16
from jaxlite.core.errors import check_allocation
from jaxlite.core.ir import Literal, Var
from jaxlite.lower import (autotune, codegen, collectives, epilogues, gemm, gemm_lowp, linalg_kernels, llvm_target, native_call,
                           native_flow, native_pool, sort_kernels)
from jaxlite.lower.donation import DonationPlan
from jaxlite.lower.native_call import DATA_OFFSET as _DATA_OFFSET
from jaxlite.lower.native_call import array_data as _data_pointer
from jaxlite.lower.native_call import object_data as _object_data
from jaxlite.lower.fusion import UNROLLED_CONTRACTION, EqnStep, KernelStep, dot_compute_dtype

logger = logging.getLogger("jaxlite.jit")

ALIGNMENT = 64

# Primitives that run their numpy implementation between native kernels, and why.
# Anything without a lowering that is not listed here also falls back, with a warning.
FALLBACKS = {
    # Lowered, except in these cases:
    "cholesky": "in float16 (numpy's linalg rejects it: eager raises numpy's error)",
    "svd": ("in float16 (numpy's LAPACK has no such routine: eager raises numpy's error), "
            "and where numpy's LAPACK is not a shared library exporting dgesdd (lapack.py)"),
    "polygamma": ("for orders m above llvm_math.POLYGAMMA_MAX_ORDER (its series needs about m + 8 "
                  "shift steps: numpy's loop is as good)"),
    **{name: "along an axis of 2**31 elements or more (the native routine's positions are int32)"
       for name in ("sort", "top_k")},
    # Not lowered:
    # Python callbacks (primitives marked runs_python) run between kernels by design, unlogged.
    **{name: "a Python callback" for name in ("debug_callback", "pure_callback", "io_callback")},
    **{name: "named-axis collective: only meaningful under vmap, which removes it"
       for name in ("psum", "pmax", "pmin", "all_gather", "axis_index", "ppermute", "psum_scatter", "all_to_all")},
}


def _check_data_offset():
    probe = np.zeros(1)
    return _object_data(id(probe)) == probe.ctypes.data


assert _check_data_offset(), "numpy's array layout differs from the stable ABI this runtime reads"


# ---------------------------------------------------------------- memory plan

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


# ---------------------------------------------------------------- the executable

class Executable:
    """A compiled jaxpr: call it with flat numpy arrays, get flat numpy arrays back."""

    def __init__(self, jaxpr, consts, steps, name="jit_fn", donated=()):
        self.jaxpr, self.consts, self.steps = jaxpr, [_contiguous(c) for c in consts], steps
        self.name = name
        # "native N" (the N-th GEMM called by native code) -> GemmPlan, chosen once and
        # kept with the code
        self.gemm_plans = {}
        # The worker pool (the first time) compiles while this program is planned.
        pool_ready = llvm_target.in_background(native_pool.pool)
        llvm_target.in_background(native_call.trampoline)
        self._plan_buffers(donated)
        self.module = codegen.new_module(name)
        self._segments = self._build_segments()
        pieces = llvm_target.split_module(self.module)
        self.llvm_ir = "\n".join(pieces)
        # The kernels' module (in pieces) and the GEMM families the program calls compile
        # at once, on all cores (see llvm_target).
        # (The pool's start links jaxlite_pool_run, which the code calls.)
        linked = pool_ready.result if self.uses_pool else None
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

    # -- planning
    def _plan_buffers(self, donated):
        jaxpr = self.jaxpr
        self.out_vars = [v for v in dict.fromkeys(v for v in jaxpr.outvars if isinstance(v, Var))
                         if v not in jaxpr.invars and v not in jaxpr.constvars]
        self.donation = DonationPlan(jaxpr, self.steps, set(self.out_vars), donated)
        # Object slots: 0 = workspace, then constants, arguments and outputs.
        self.object_slots = {}
        for v in jaxpr.constvars + jaxpr.invars + self.out_vars:
            self.object_slots.setdefault(v, len(self.object_slots) + 1)
        computed = {v for step in self.steps for v in step.outputs}
        intermediates = computed - set(self.object_slots)
        self.plan = MemoryPlan(self.steps, intermediates)
        self.workspace_size = self.plan.size
        outputs = sum(_nbytes(v) for v in self.out_vars)
        check_allocation(self.plan.size + outputs, lambda: f"{self.name}: its outputs ({outputs} bytes) "
                                                           f"and intermediates ({self.plan.size} bytes)")

    def _build_segments(self):
        """When every step is a kernel, control flow or a native GEMM or routine, one entry
        point that runs them all (its big kernels split by the native pool): one native
        call per call. Otherwise an entry point per such step (a big kernel's split across
        threads), run from Python between the other steps."""
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
                    _emit_object_entry(self.module, name, calls[-1:])
                continue
            function = native.kernel_function(step.kernel, self.donation.kernel_aliases.get(number))
            sources = [self._source(v) for v in step.inputs + step.outputs]
            loop = step.kernel.parallel_loop()
            bounds = loop.extent if loop is not None else None
            split = bounds is not None and _splits(step.kernel)
            if split or not whole:
                entry = _emit_object_entry(self.module, name, [(function, sources, True if bounds is not None else None)])
            calls.append((_emit_pool_task(self.module, entry, bounds), None, "split") if split
                         else (function, sources, bounds))
            segments.append((name, step.kernel))
        self._has_native = bool(calls)
        self._whole_entry = None
        if calls and len(calls) == len(self.steps):
            self._whole_entry = f"{self.name}_all"
            _emit_object_entry(self.module, self._whole_entry, calls)
        self.uses_pool = "jaxlite_pool_run" in self.module.globals
        self._host_steps, self._native_eqns, self._native_scratch = native.host_steps, native.native_eqns, \
            native.native_scratch
        self._inner_consts, self._inner_const_values = native.consts, native.const_values
        return segments

    def _control_function(self, native, step, number):
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
        self._bind_callees([native_flow.native_callee(eqn, self.gemm_plans.get(f"native {k}"), self._constants())
                            for k, eqn in enumerate(self._native_eqns)])
        self._bind_code()

    def _bind_callees(self, callees):
        self._bridge = None
        if self._host_steps or callees:
            self._bridge = native_flow.HostBridge(self._host_steps, callees, self._native_scratch)
            self.workspace_size = max(self.workspace_size, self._bridge.scratch_end)
            self.gemm_plans.update((f"native {k}", callee.plan) for k, callee in enumerate(callees)
                                   if isinstance(callee, _GemmCall))
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
                runners.append(_PythonStep(segment))
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
        return native_call.builtin_entry(self.compiled.address(self._whole_entry),
                                         len(self.object_slots) + 1 + len(self._tail),
                                         range(first_output, len(self.object_slots) + 1), long_enough, self.compiled)

    # -- calling
    def _prepare_call(self, workspace=None):
        """Precomputed per-call facts, so a call does little more than allocate and jump."""
        jaxpr = self.jaxpr
        self._out_specs = [(v.aval.shape, v.aval.dtype) for v in self.out_vars]
        position = {v: i for i, v in enumerate(jaxpr.constvars + jaxpr.invars + self.out_vars)}
        self._out_sources = [np.array(v.val, v.aval.dtype) if isinstance(v, Literal) else position[v]
                             for v in jaxpr.outvars]
        self._reuse = [(k, self.donation.reused[v]) for k, v in enumerate(self.out_vars) if v in self.donation.reused]
        self._only_native = all(not isinstance(r, _PythonStep) for r in self._runners)
        self._kept_workspace = _KeptWorkspace(self.workspace_size, workspace) \
            if self.workspace_size >= KEEP_WORKSPACE_BYTES else None

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
        env = dict(zip(jaxpr.constvars + jaxpr.invars + self.out_vars, buffers))
        for runner in self._runners:
            if isinstance(runner, _PythonStep):
                runner(env, workspace, self.plan)
            else:
                runner(slots)

    def asm(self):
        return self.compiled.asm() if self.compiled is not None else ""

    def describe_gemm_plans(self):
        """One line per GEMM call: its problem and the plan that runs it."""
        calls = self._bridge.gemm_calls if self._bridge is not None else []
        return [f"{call.describe()}: {call.plan.describe()}" for call in calls]


def emit_slot_object(b, objects, slot):
    """The object pointer in entry `slot` of an entry point's objects array."""
    address = b.gep(objects, [ir.Constant(codegen.I64, slot)], inbounds=True, source_etype=codegen.I64)
    return b.inttoptr(b.load(address, typ=codegen.I64), codegen.PTR)


def emit_array_data(b, array_object):
    """The data pointer of a numpy array object (numpy's stable ABI: right after the header)."""
    field = b.gep(array_object, [ir.Constant(codegen.I64, _DATA_OFFSET)], inbounds=True, source_etype=codegen.I8)
    return b.load(field, typ=codegen.PTR)


def _emit_object_entry(module, name, calls):
    """`void name(ptr objects, i64 start, i64 stop)`: FTZ/DAZ on, each kernel on its buffers,
    MXCSR restored. Data pointers are read out of the numpy array objects (slot 0: the
    workspace). A call's `bounds` is True to pass start/stop on to the kernel's parallel
    loop, an extent to run all of it, or None for a kernel without one. A call without
    `sources` is a control-flow step's function: it takes the objects and returns nonzero
    when a Python callback raised, which ends the call. A call with bounds "split" is a
    task of _emit_pool_task, run by the native pool."""
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [codegen.PTR, codegen.I64, codegen.I64]), name)
    llvm_target.add_function_attributes(function)
    objects, start, stop = function.args
    b = ir.IRBuilder(function.append_basic_block("entry"))
    mxcsr = codegen.save_and_flush_denormals(b)
    pointers = {}

    def pointer(source):
        if source not in pointers:
            kind, value = source
            if kind == "object":
                pointers[source] = emit_array_data(b, emit_slot_object(b, objects, value))
            else:
                base = pointer(("object", 0))
                pointers[source] = b.gep(base, [ir.Constant(codegen.I64, value)], inbounds=True, source_etype=codegen.I8)
        return pointers[source]

    finish = function.append_basic_block("finish")
    for kernel_function, sources, bounds in calls:
        if bounds == "split":
            run = gemm.declare(module, "jaxlite_pool_run", ir.VoidType(), [codegen.PTR, codegen.PTR, codegen.I64])
            b.call(run, [kernel_function, objects, ir.Constant(codegen.I64, gemm.available_cpus())])
            continue
        if sources is None:
            status = b.call(kernel_function, [objects])
            resume = function.append_basic_block("resume")
            b.cbranch(b.icmp_signed("!=", status, ir.Constant(codegen.I32, 0)), finish, resume)
            b.position_at_end(resume)
            continue
        args = [pointer(s) for s in sources]
        if bounds is True:
            args += [start, stop]
        elif bounds is not None:
            args += [ir.Constant(codegen.I64, 0), ir.Constant(codegen.I64, bounds)]
        b.call(kernel_function, args)
    b.branch(finish)
    b.position_at_end(finish)
    codegen.restore_mxcsr(b, mxcsr)
    b.ret_void()
    return function


def _splits(kernel):
    """Whether a kernel's parallel loop is worth sharing among the pool's threads."""
    return kernel.parallel_loop() is not None and kernel.points() >= PARALLEL_MIN_POINTS and gemm.available_cpus() > 1


SHARE = "_share"    # a split kernel's pool task: its entry point's name and this


def _emit_pool_task(module, entry, extent):
    """`void task(ptr objects, i64 unit, i64 slot)`: share `unit` (of one per CPU) of the
    parallel loop of a kernel's entry point (which sets FTZ/DAZ on the thread it runs on)."""
    task = ir.Function(module, ir.FunctionType(ir.VoidType(), [codegen.PTR, codegen.I64, codegen.I64]),
                       entry.name + SHARE)
    objects, unit, _ = task.args
    b = ir.IRBuilder(task.append_basic_block("entry"))
    extent, units = ir.Constant(codegen.I64, extent), ir.Constant(codegen.I64, gemm.available_cpus())
    bound = lambda u: b.sdiv(b.mul(extent, u), units)
    b.call(entry, [objects, bound(unit), bound(b.add(unit, ir.Constant(codegen.I64, 1)))])
    b.ret_void()
    return task


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


# Below this a kernel runs on one thread: a share must repay a hand-off to a worker of the
# pool (under a microsecond when it spins, ~50 us to wake one that sleeps).
PARALLEL_MIN_POINTS = 1 << 16
RELEASE_GIL_MIN_POINTS = 1 << 14     # a whole program this big lets other Python threads run meanwhile


class _NativeKernel:
    """Calls one kernel's entry point; a big kernel hands its shares (its pool task,
    _emit_pool_task) to the native pool (native_pool.py)."""

    _prototype = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)

    def __init__(self, compiled, name, kernel):
        self.code_owner = compiled      # the machine code lives as long as its callers (see native_call)
        self.function = self._prototype(compiled.address(name))
        loop = kernel.parallel_loop()
        self.extent = loop.extent if loop is not None else 0
        self.share = compiled.address(name + SHARE) if _splits(kernel) else None

    def __call__(self, slots):
        if self.share is None:
            self.function(slots, 0, self.extent)
        else:
            native_pool.run(self.share, ctypes.addressof(slots), gemm.available_cpus())


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


def _buffer_view(var, env, workspace, plan):
    if var in env:
        return env[var]
    count = var.aval.size
    view = np.frombuffer(workspace, var.aval.dtype, count, plan.offsets[var]) if count else \
        np.empty(0, var.aval.dtype)
    return view.reshape(var.aval.shape)


class _PythonStep:
    """An equation run between kernels on numpy views of its buffers."""

    def __init__(self, step):
        self.step = step

    def __call__(self, env, workspace, plan):
        self.run_on(lambda v: _buffer_view(v, env, workspace, plan))

    def run_on(self, view):
        """Run the equation; `view(var)` is a numpy view of a variable's buffer."""
        eqn = self.step.eqn
        inputs = [np.asarray(v.val, v.aval.dtype) if isinstance(v, Literal) else view(v) for v in eqn.inputs]
        outputs = [view(v) for v in eqn.outputs]
        results = eqn.primitive.impl(*inputs, **eqn.params)
        results = results if eqn.primitive.multiple_results else [results]
        for out, result in zip(outputs, results):
            np.copyto(out, np.asarray(result).astype(out.dtype, copy=False))


# ---------------------------------------------------------------- control flow
# Lowered to native loops and branches around their bodies' steps (native_flow.py).
CONTROL_FLOW = ("while", "scan", "cond")


# ---------------------------------------------------------------- equations outside kernels

# Equations that run on a GEMM (dot_general when _gemm_applies; the fused forms always).
GEMM_PRIMITIVES = ("dot_general", "dot_epilogue", "int8_matmul")


# Sequential primitives run as hand-written native routines (native_routines.py): each
# entry gives the routine's spec for an equation, or None where the routine does not apply.
NATIVE_ROUTINES = {
    "sort": sort_kernels.sort_spec,
    "top_k": sort_kernels.top_k_spec,
    "cholesky": linalg_kernels.cholesky_spec,
    "triangular_solve": linalg_kernels.triangular_solve_spec,
    "lu": linalg_kernels.lu_spec,
    "svd": linalg_kernels.svd_spec,
    **{name: collectives.eqn_spec for name in collectives.PRIMITIVE_NAMES},     # mesh collectives (MPI)
}


# Linear algebra on 16-bit floats: the float32 routine between conversions (a graph pass,
# pipeline._widen_narrow_floats), where eager computes it (its implementations work in
# float32 or wider; numpy's linalg rejects float16, so float16 cholesky and svd raise).
_WIDENED_LINALG = {"lu": ("float16", "bfloat16"), "triangular_solve": ("float16", "bfloat16"),
                   "cholesky": ("bfloat16",), "svd": ("bfloat16",)}


def computes_widened(eqn):
    dtypes = _WIDENED_LINALG.get(eqn.primitive.name)
    return dtypes is not None and eqn.inputs[0].aval.dtype.name in dtypes


def native_spec(eqn):
    spec_for = NATIVE_ROUTINES.get(eqn.primitive.name)
    return spec_for(eqn) if spec_for is not None else None


def eqn_step_kind(eqn):
    """How an equation runs if not inside a fused kernel: "gemm", "native", "control",
    "fallback" or None (fused)."""
    from jaxlite.lower.fusion import is_fusible
    if eqn.primitive.name == "dot_general" and _gemm_applies(eqn) or eqn.primitive.name in GEMM_PRIMITIVES[1:]:
        return "gemm"
    if native_spec(eqn) is not None:
        return "native"
    if is_fusible(eqn):
        return None
    return "control" if eqn.primitive.name in CONTROL_FLOW else "fallback"


def log_fallbacks(steps):
    for step in steps:
        if isinstance(step, EqnStep) and step.kind == "fallback" and not getattr(step.eqn.primitive, "runs_python", False):
            name = step.eqn.primitive.name
            reason = FALLBACKS.get(name, "no lowering for this primitive yet")
            logger.warning("jit: running %s with its numpy implementation between kernels (%s)", name, reason)


# Narrow operands with a wide accumulator (what precision.bf16/int8 produce) run on the
# dot-product-instruction GEMMs; they take one matrix per call, so no batch dimensions.
_LOW_PRECISION_GEMMS = {("bfloat16", "float32"): gemm_lowp.compile_gemm_bf16,
                        ("int8", "int32"): gemm_lowp.compile_gemm_int8}


def _low_precision_gemm(eqn):
    lhs, rhs = operand_dtypes(eqn)
    if lhs != rhs:
        return None
    accumulator = eqn.params.get("preferred_element_type") or eqn.outputs[0].aval.dtype
    return _LOW_PRECISION_GEMMS.get((np.dtype(lhs).name, np.dtype(accumulator).name))


def operand_dtypes(eqn):
    """The dtypes a product's operands multiply in: bf16 for the float32 operands a bf16 GEMM
    step rounds itself (quantized.round_bf16_operands_in_gemms), else their own."""
    rounded = eqn.params.get("rounded", ()) if eqn.primitive.name == "dot_epilogue" else ()
    return [np.dtype(bfloat16) if i in rounded else v.aval.dtype for i, v in enumerate(eqn.inputs[:2])]


def is_low_precision_gemm(eqn):
    return eqn.primitive.name in GEMM_PRIMITIVES[:2] and _low_precision_gemm(eqn) is not None and _gemm_applies(eqn)


def is_int8_gemm(eqn):
    return is_low_precision_gemm(eqn) and operand_dtypes(eqn)[0] == np.int8


def is_bf16_gemm(eqn):
    return is_low_precision_gemm(eqn) and operand_dtypes(eqn)[0] == bfloat16


def epilogue_fusable(eqn):
    """A dot_general whose GEMM can apply bias/residual/scale/relu: the float GEMMs and the
    bf16 one, which also rounds its result to bf16 when the next product reads it so
    (epilogues.ROUND_BF16). int8 products fuse their dequantization, bias and relu in
    quantized.int8_matmul."""
    return _gemm_applies(eqn) and (_low_precision_gemm(eqn) is None or operand_dtypes(eqn)[0] == bfloat16)


def _gemm_applies(eqn):
    lhs, rhs = eqn.inputs[:2]
    out = eqn.outputs[0]
    dtype = lhs.aval.dtype
    if _low_precision_gemm(eqn) is not None:
        m, n, k, batch = _gemm_sizes(eqn)
        return batch == 1 and min(m, n, k) >= 1 and m * n * k >= 4096
    if dtype not in (np.float32, np.float64) or out.aval.dtype != dtype or rhs.aval.dtype != dtype:
        return False
    if dot_compute_dtype(dtype, out.aval.dtype) != dtype:
        return False
    m, n, k, batch = _gemm_sizes(eqn)
    # A matrix-vector product (n = 1) stays a fused reduction: the GEMM's vectors run
    # along n, so it would use one lane of each (64x64 in a loop body: ~0.2 us fused,
    # ~1.5 us on the GEMM; 1024x1024 at top level: ~0.12 ms fused, ~2 ms on the GEMM).
    # A short contraction stays fused too (see fusion.UNROLLED_CONTRACTION).
    return min(m, batch) >= 1 and k > UNROLLED_CONTRACTION and n > 1 and m * n * k >= 4096


def _gemm_sizes(eqn):
    lhs, rhs = eqn.inputs[:2]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    shape_l, shape_r = lhs.aval.shape, rhs.aval.shape
    batch = int(np.prod([shape_l[d] for d in lb]))
    k = int(np.prod([shape_l[d] for d in lc]))
    m = int(np.prod([shape_l[d] for d in range(len(shape_l)) if d not in lc and d not in lb]))
    n = int(np.prod([shape_r[d] for d in range(len(shape_r)) if d not in rc and d not in rb]))
    return m, n, k, batch


class _GemmCall:
    """dot_general on the generated float GEMM, planned once per compiled function, for
    native code to call. Operands are read as stored, as (batch, m, k) and (batch, k, n),
    or (batch, k, m) and (batch, n, k) with the GEMM's transpose flags (any other layout
    got a transposed copy: passes.transpose_gemm_operands)."""

    def __init__(self, eqn, plan=None):
        m, n, k, batch = _gemm_sizes(eqn)
        (_, trans_a), (_, trans_b) = _gemm_layouts(eqn)
        self.kernel = gemm.compile_gemm(m, n, k, eqn.inputs[0].aval.dtype, trans_a, trans_b, batch,
                                        epilogue=_epilogue(eqn.params.get("epilogue", ())))
        self.plan = plan or autotune.plan_for(self.kernel, GEMM_THREADS)

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


class _LowPrecisionCall:
    """A bf16 or int8 product (what precision.bf16 and precision.int8 leave) as jobs of the
    native pool run one after another by one native call (native_pool.JobList): its operands
    quantized, rounded, padded or packed into the form the dot-product GEMM reads, in the
    call's scratch, then the GEMM's units. A constant B (weights closed over) is packed
    once, here. Operands are read as stored (passes.transpose_gemm_operands laid them out)."""

    def __init__(self, eqn, constants):
        m, n, k, _ = _gemm_sizes(eqn)
        self.jobs, self.constants = native_pool.JobList(), constants
        count = len(eqn.inputs)
        if eqn.primitive.name == "int8_matmul":
            self._int8_matmul(eqn, m, n, k, count)
        else:
            self._product(eqn, m, n, k, count)
        self.table = self.jobs.table()

    def _int8_matmul(self, eqn, m, n, k, count):
        """quantize x per row, w per column (or a quantized constant), then the GEMM, whose
        epilogue applies the scales, the bias and relu."""
        params, jobs, operand = eqn.params, self.jobs, native_pool.operand
        epilogue = gemm_lowp.DEQUANTIZE_RELU if params["relu"] else gemm_lowp.DEQUANTIZE
        self.kernel = _LOW_PRECISION_GEMMS[("int8", "int32")](m, n, k, epilogue=epilogue)
        a, row_scales = self.kernel.quantize_a_job(jobs, operand(0), GEMM_THREADS)
        if params["quantize_weights"]:
            b, correction, column_scales = self.kernel.quantize_b_job(jobs, operand(1), GEMM_THREADS)
            rest = 2
        else:
            (b, correction), column_scales, rest = self._narrow_b(eqn, 1), operand(2), 3
        bias = operand(rest) if count > rest else self._constant(np.zeros(n, np.float32))
        self.plan = self.kernel.gemm_job(jobs, a, b, correction, [row_scales, column_scales, bias],
                                         operand(count), GEMM_THREADS)

    def _product(self, eqn, m, n, k, count):
        """bf16 x bf16 -> float32 (float32 operands rounded as they are packed), or int8 x int8
        -> int32."""
        names = eqn.params.get("epilogue", ())
        rounded = eqn.params.get("rounded", ())
        # float32 weights rounded as the GEMM packs them are packed by every thread that
        # needs them (with C split by rows: all of B per thread); for a product shared among
        # threads, one pass rounds them into panels first (1024^3: 5.6 -> 5.4 ms).
        shared = gemm.threads_repaid(2 * m * n * k, GEMM_THREADS) > 1
        options = {"bf16_output": names[-1:] == (epilogues.ROUND_BF16,), "float32_a": 0 in rounded,
                   "float32_b": 1 in rounded and k % 2 == 0 and not shared}
        self.kernel = _low_precision_gemm(eqn)(m, n, k, epilogue=_epilogue(names),
                                               **{o: True for o, on in options.items() if on})
        operand = native_pool.operand
        a = operand(0) if options["float32_a"] else self.kernel.pad_a_job(self.jobs, operand(0), GEMM_THREADS)
        if options["float32_b"]:
            b, correction = operand(1), None
        elif 1 in rounded:
            b, correction = self.kernel.round_b_job(self.jobs, operand(1), GEMM_THREADS), None
        else:
            b, correction = self._narrow_b(eqn, 1)
        extra = [operand(index) for index in range(2, count)]
        self.plan = self.kernel.gemm_job(self.jobs, a, b, correction, extra, operand(count), GEMM_THREADS)

    def _narrow_b(self, eqn, index):
        """(panels, int8 correction or None) of a narrow B: packed once if a constant."""
        value = self.constants.get(eqn.inputs[index])
        if value is None:
            return self.kernel.pack_b_job(self.jobs, native_pool.operand(index), GEMM_THREADS)
        prepared = self.kernel.prepare_b(value)
        correction = prepared.column_correction
        return self._constant(prepared.words), None if correction is None else self._constant(correction)

    def _constant(self, array):
        self.jobs.keep.append(array)
        return _data_pointer(array)

    def describe(self):
        kernel = self.kernel
        return f"gemm {kernel.m}x{kernel.n}x{kernel.k} {kernel.product.name}"


# Every GEMM step may use the CPUs this process may run on; its plan (autotune.py) says
# how many threads it takes and how it splits C among them.
GEMM_THREADS = gemm.available_cpus()

_EPILOGUES = {"bias": gemm.BIAS, "residual": gemm.RESIDUAL, "scale": gemm.SCALE, "relu": gemm.RELU,
              "subtract": gemm.SUBTRACT, "subtract_from": gemm.SUBTRACT_FROM, "relu_grad": gemm.RELU_GRAD}


def _free_dims(eqn):
    """The dimensions of each operand that are neither contracted nor batch."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.inputs[:2]
    return ([d for d in range(lhs.aval.ndim) if d not in lc and d not in lb],
            [d for d in range(rhs.aval.ndim) if d not in rc and d not in rb])


def _gemm_layouts(eqn):
    """((permutation or None, transpose flag) for A, the same for B) of a GEMM equation."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs_free, rhs_free = _free_dims(eqn)
    return (_operand_layout(list(lb) + lhs_free + list(lc), list(lb) + list(lc) + lhs_free),
            _operand_layout(list(rb) + list(rc) + rhs_free, list(rb) + rhs_free + list(rc)))


def gemm_operand_permutations(eqn):
    """(permutation or None per operand) that lays a GEMM's operands out so it reads them as
    stored; None when the product does not run on a GEMM."""
    if not _gemm_applies(eqn):
        return None
    if _low_precision_gemm(eqn) is not None:
        return _row_major_permutations(eqn)
    return tuple(permutation for permutation, _ in _gemm_layouts(eqn))


def gemm_reads_in_place(eqn):
    """Whether a GEMM step reads both operands as stored (so native code calls its kernels
    directly), known without compiling."""
    if eqn.primitive.name == "int8_matmul":
        return True
    if _low_precision_gemm(eqn) is not None:
        return _row_major_permutations(eqn) == (None, None)
    (a_perm, _), (b_perm, _) = _gemm_layouts(eqn)
    return a_perm is None and b_perm is None


def runs_as_jobs(eqn):
    """Whether a GEMM step is a low-precision product (_LowPrecisionCall)."""
    return eqn.primitive.name == "int8_matmul" or _low_precision_gemm(eqn) is not None


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
