"""Control flow as native code: while, scan and cond/switch as LLVM loops and branches.

A control-flow step becomes one native function `i32 f(ptr objects)` in the module of
the enclosing program. Its bodies (condition, loop body, branches) were lowered like
any program (pipeline.lower_jaxpr attaches them to the step as `programs`); their
steps are emitted inline, inside the loop or branch:

  * fused kernels: a call of the kernel (emitted into the same module), on one thread;
  * GEMMs and native routines (sorts, factorizations): their native entry points, their
    units run by the native pool (native_pool.py), each thread's scratch inside the
    program's workspace; a bf16/int8 product, its list of pool jobs (native_pool.JobList:
    quantize or pack its operands into scratch, then the GEMM's units);
  * anything else (fallbacks to numpy, debug callbacks): a call back into Python through one ctypes function
    pointer, `i32 host(i64 step, ptr data_pointers)`, which runs the equation on numpy
    views of its buffers. A raised exception is recorded and makes the native code
    return 1 at once; the runtime re-raises it after the native call returns.
  * nested control flow: the same, recursively.

Buffers: a loop's carry lives twice in the workspace (A and B). An iteration reads
the current set and writes the next, then the roles swap (an i1 parity selects the
pointers): no copy per iteration. Each body's intermediates get their own workspace
region after the enclosing program's, planned by liveness like the top level (the
condition and body of a while, and the branches of a cond, share one region: they
never run at the same time). Scan reads x slices and writes y slices in place, at
offset i * slice_bytes.

Addresses that differ between processes (the Python callback, GEMM entry points and
their unit tables) and the GEMMs' plans (units, workspace per thread) are not baked
into the code: they sit in a table (an int64 numpy array) passed in an extra slot of
the objects array, so object code stays cacheable and a plan is chosen when the code
is bound. A top-level GEMM or routine that native code can call is a step of this kind
too, so a program of kernels, loops, GEMMs and routines is one native call.
"""
import ctypes
import threading

import numpy as np
from llvmlite import ir

from jaxlite.core.ir import Literal, Var
# runtime imports this module; it is only read from inside functions, once both are loaded.
# gemm_calls (the GEMM code generators, ~10 ms to import) is imported where a program has a product.
from jaxlite.lower import (buffers, codegen, entry_points, kernel_ir, llvm_helpers, llvm_target, native_call, native_pool,
                           native_routines, step_policy)
from jaxlite.lower import primitives as P
from jaxlite.lower.llvm_helpers import I1, I8, I32, I64, PTR, VOID, declare, emit_loop, smax, smin
from jaxlite.lower.fusion import KernelStep

HOST_STEP = ir.FunctionType(I32, [I64, PTR])


def control_programs(eqn):
    """(role, closed jaxpr) for each program a control-flow equation runs, in a fixed order."""
    params = eqn.params
    if eqn.primitive is P.while_p:
        return [("cond", params["cond_jaxpr"]), ("body", params["body_jaxpr"])]
    if eqn.primitive is P.scan_p:
        return [("body", params["jaxpr"])]
    return [(f"branch {k}", branch) for k, branch in enumerate(params["branches"])]


def aval_bytes(aval):
    return aval.size * aval.dtype.itemsize


# ---------------------------------------------------------------- code generation state

class NativeCode:
    """What the native control flow of one Executable needs besides its machine code:
    the equations called back in Python, the GEMMs called natively, and the constants
    of the bodies (all picklable, bound to this process by HostBridge)."""

    def __init__(self, module, table_slot):
        self.module, self.table_slot = module, table_slot
        # Address table (HostBridge.table): the host callback, then CALL_WORDS words per
        # GEMM or routine called natively.
        self.host_steps = []        # EqnSteps run by the host callback, by number
        self.native_eqns = []       # GEMM and routine equations called natively, by number
        self.native_scratch = []    # where each one's per-thread scratch starts
        self.consts = []            # arrays: body constants, in object slots after the table
        self.const_values = {}      # the bodies' constant variables -> values (a GEMM packs constant weights once)
        self._kernels = {}          # by kernel_ir.structure_key: identical kernels share code

    def kernel_function(self, kernel, aliases=None):
        """`aliases` ({output Buffer: argument Buffer}, see donation.py) change the code."""
        key = (kernel_ir.structure_key(kernel), tuple((o.name, x.name) for o, x in (aliases or {}).items()))
        if key not in self._kernels:
            self._kernels[key] = codegen.emit_kernel(self.module, kernel, aliases)
        return self._kernels[key]

    def const_slot(self, array):
        # A body's constant may be an Array (a nested jit closed over it): the entry point reads ndarrays.
        array = np.asarray(array)
        self.consts.append(array if array.flags.c_contiguous else np.array(array, order="C"))
        return self.table_slot + len(self.consts)


class _Function:
    """One native function `i32 name(ptr objects)` under construction. Pointers that do
    not change (buffers in slots, workspace offsets, table entries) are computed once, in
    the entry block, so every loop and branch may use them."""

    def __init__(self, code, name):
        self.code = code
        function = ir.Function(code.module, ir.FunctionType(I32, [PTR]), name)
        function.linkage = "internal"
        llvm_target.add_function_attributes(function)
        self.function, self.objects = function, function.args[0]
        self.entry = ir.IRBuilder(function.append_basic_block("entry"))
        self._first = function.append_basic_block("start")
        self.b = ir.IRBuilder(self._first)
        self.failed = function.append_basic_block("callback_raised")
        ir.IRBuilder(self.failed).ret(ir.Constant(I32, 1))
        self._cached = {}

    def finish(self):
        self.b.ret(ir.Constant(I32, 0))
        self.entry.branch(self._first)
        return self.function

    def _once(self, key, make):
        if key not in self._cached:
            self._cached[key] = make(self.entry)
        return self._cached[key]

    def slot_word(self, slot):
        return self._once(("word", slot), lambda b: entry_points.emit_slot_object(b, self.objects, slot))

    def slot_data(self, slot):
        """The data pointer of the numpy array in `slot`."""
        obj = self.slot_word(slot)
        return self._once(("data", slot), lambda b: entry_points.emit_array_data(b, obj))

    def workspace(self, offset):
        base = self.slot_data(0)
        return self._once(("workspace", offset),
                          lambda b: b.gep(base, [ir.Constant(I64, offset)], inbounds=True, source_etype=I8))

    def table_word(self, index):
        """Word `index` of the address table, as an i64."""
        table = self.slot_data(self.code.table_slot)

        def load(b):
            return b.load(b.gep(table, [ir.Constant(I64, index)], inbounds=True, source_etype=I64), typ=I64)
        return self._once(("table", index), load)

    def table_entry(self, index, pointer_type=PTR):
        """Entry `index` of the address table (a function's, given its pointer type)."""
        word = self.table_word(index)
        return self._once(("table pointer", index, str(pointer_type)), lambda b: b.inttoptr(word, pointer_type))

    def literal(self, literal):
        data = np.asarray(literal.val, literal.aval.dtype).tobytes()
        array_type = ir.ArrayType(I8, len(data))
        constant = ir.GlobalVariable(self.code.module, array_type, self.code.module.get_unique_name("literal"))
        constant.initializer = ir.Constant(array_type, bytearray(data))
        constant.global_constant, constant.linkage, constant.align = True, "internal", buffers.ALIGNMENT
        return constant

    def pointer(self, var, env):
        return self.literal(var) if isinstance(var, Literal) else env[var]

    def copy(self, destination, source, nbytes):
        if nbytes:
            memcpy = declare(self.code.module, "llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
            self.b.call(memcpy, [destination, source, ir.Constant(I64, nbytes), ir.Constant(I1, 0)])


# ---------------------------------------------------------------- programs and steps

def emit_control_function(code, name, step, pointer_of, region):
    """The native function running one top-level control-flow step; `pointer_of(fn, var)`
    gives its operands' pointers, `region` is where its own workspace starts.
    Returns (function, bytes of workspace used from region)."""
    fn = _Function(code, name)
    env = {v: pointer_of(fn, v) for v in step.inputs + step.outputs}
    used = _emit_step(fn, step, env, region)
    return fn.finish(), used


def _emit_program(fn, program, inputs, outputs, region):
    """Run a lowered program: `inputs` are pointers to its arguments, `outputs` the
    destinations of its results (never overlapping the inputs). Returns workspace bytes
    used from `region`."""
    jaxpr = program.closed.jaxpr
    env = dict(zip(jaxpr.invars, inputs))
    fn.code.const_values.update(zip(jaxpr.constvars, program.closed.consts))
    env.update((v, fn.slot_data(fn.code.const_slot(c))) for v, c in zip(jaxpr.constvars, program.closed.consts))
    copies = []
    for var, destination in zip(jaxpr.outvars, outputs):
        if isinstance(var, Var) and var not in env:
            env[var] = destination      # computed: written there directly
        else:
            copies.append((var, destination))
    intermediates = {v for step in program.steps for v in step.outputs} - set(env)
    plan = buffers.MemoryPlan(program.steps, intermediates)
    env.update((v, fn.workspace(region + offset)) for v, offset in plan.offsets.items())
    scratch = region + plan.size
    used = max([_emit_step(fn, step, env, scratch) for step in program.steps], default=0)
    for var, destination in copies:
        fn.copy(destination, fn.pointer(var, env), aval_bytes(var.aval))
    return plan.size + used


def _emit_step(fn, step, env, scratch):
    """Emit one step at the builder's position; returns the scratch bytes it needs."""
    if isinstance(step, KernelStep):
        args = [env[v] for v in step.inputs + step.outputs]
        loop = step.kernel.parallel_loop()
        if loop is not None:
            args += [ir.Constant(I64, 0), ir.Constant(I64, loop.extent)]
        fn.b.call(fn.code.kernel_function(step.kernel), args)
        return 0
    if step.kind == "control":
        inputs = [fn.pointer(v, env) for v in step.eqn.inputs]
        outputs = [env[v] for v in step.eqn.outputs]
        return _CONTROL_EMITTERS[step.eqn.primitive](fn, step, inputs, outputs, scratch)
    if runs_natively(step):
        return _emit_native_call(fn, step.eqn, env, scratch)
    return _emit_host_call(fn, step, env)


# ---------------------------------------------------------------- loops and branches

class _Carry:
    """A loop's carry in two workspace sets; `parity` (i1) says which one is current."""

    def __init__(self, fn, avals, region):
        self.fn, self.sizes = fn, [aval_bytes(a) for a in avals]
        offsets, self.nbytes = [], 0
        for size in self.sizes * 2:
            offsets.append(region + self.nbytes)
            self.nbytes += buffers.aligned(size)
        self.first = [fn.workspace(o) for o in offsets[:len(avals)]]
        self.second = [fn.workspace(o) for o in offsets[len(avals):]]

    def initialize(self, values):
        for destination, source, size in zip(self.first, values, self.sizes):
            self.fn.copy(destination, source, size)

    def current(self, parity):
        return [self.fn.b.select(parity, b, a) for a, b in zip(self.first, self.second)]

    def following(self, parity):
        return [self.fn.b.select(parity, a, b) for a, b in zip(self.first, self.second)]

    def finish(self, parity, outputs):
        for destination, source, size in zip(outputs, self.current(parity), self.sizes):
            self.fn.copy(destination, source, size)


def _split(values, *counts):
    parts, start = [], 0
    for count in counts:
        parts.append(list(values[start:start + count]))
        start += count
    return parts + [list(values[start:])]


def _emit_while(fn, step, inputs, outputs, region):
    params, b = step.eqn.params, fn.b
    cond, body = step.programs
    cond_consts, body_consts, init = _split(inputs, params["cond_nconsts"], params["body_nconsts"])
    carry = _Carry(fn, [v.aval for v in step.eqn.outputs], region)
    predicate = fn.workspace(region + carry.nbytes)
    base = region + carry.nbytes + buffers.ALIGNMENT
    carry.initialize(init)
    before = b.block
    head, loop, done = (b.append_basic_block(f"while.{part}") for part in ("cond", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    parity = b.phi(I1, "parity")
    parity.add_incoming(ir.Constant(I1, 0), before)
    current = carry.current(parity)
    cond_bytes = _emit_program(fn, cond, cond_consts + current, [predicate], base)
    b.cbranch(b.icmp_unsigned("!=", b.load(predicate, typ=I8), ir.Constant(I8, 0)), loop, done)
    b.position_at_end(loop)
    body_bytes = _emit_program(fn, body, body_consts + current, carry.following(parity), base)
    parity.add_incoming(b.not_(parity), b.block)
    b.branch(head)
    b.position_at_end(done)
    carry.finish(parity, outputs)
    return base - region + max(cond_bytes, body_bytes)


def _emit_scan(fn, step, inputs, outputs, region):
    params, b = step.eqn.params, fn.b
    body, = step.programs
    num_carry, length = params["num_carry"], params["length"]
    consts, init, xs = _split(inputs, params["num_consts"], num_carry)
    carry_outputs, ys = outputs[:num_carry], outputs[num_carry:]
    x_slices = [_slice_bytes(v.aval) for v in step.eqn.inputs[len(inputs) - len(xs):]]
    y_slices = [_slice_bytes(v.aval) for v in step.eqn.outputs[num_carry:]]
    carry = _Carry(fn, [v.aval for v in step.eqn.outputs[:num_carry]], region)
    base = region + carry.nbytes
    carry.initialize(init)
    used = [0]

    def iteration(counter, parity):
        i = b.sub(ir.Constant(I64, length - 1), counter) if params["reverse"] else counter

        def sliced(pointers, slice_bytes):
            return [b.gep(p, [b.mul(i, ir.Constant(I64, n))], inbounds=True, source_etype=I8)
                    for p, n in zip(pointers, slice_bytes)]
        used[0] = _emit_program(fn, body, consts + carry.current(parity) + sliced(xs, x_slices),
                                carry.following(parity) + sliced(ys, y_slices), base)
        return [b.not_(parity)]

    parity, = emit_loop(b, 0, length, iteration, carried=[ir.Constant(I1, 0)], name="scan")
    carry.finish(parity, carry_outputs)
    return base - region + used[0]


def _slice_bytes(aval):
    return aval_bytes(aval.update(shape=aval.shape[1:]))


def _emit_cond(fn, step, inputs, outputs, region):
    b, branches = fn.b, step.programs
    index = b.load(inputs[0], typ=I32)
    last = ir.Constant(I32, len(branches) - 1)
    # Clamped as lax.switch does, so no index can leave the table of branches.
    index = smax(b, smin(b, index, last), ir.Constant(I32, 0))
    blocks = [b.append_basic_block(f"cond.branch{k}") for k in range(len(branches))]
    done = b.append_basic_block("cond.done")
    switch = b.switch(index, blocks[-1])
    for k, block in enumerate(blocks[:-1]):
        switch.add_case(ir.Constant(I32, k), block)
    used = 0
    for program, block in zip(branches, blocks):
        b.position_at_end(block)
        used = max(used, _emit_program(fn, program, inputs[1:], outputs, region))
        b.branch(done)
    b.position_at_end(done)
    return used


_CONTROL_EMITTERS = {P.while_p: _emit_while, P.scan_p: _emit_scan, P.cond_p: _emit_cond}


# ---------------------------------------------------------------- GEMMs, routines and Python callbacks

def runs_natively(step):
    """Whether native code calls this step's compiled code as is: a GEMM (float, or a
    bf16/int8 product's jobs) whose operands it reads as stored, or a native routine
    (sort, factorizations); decided without compiling anything."""
    return step.kind == "gemm" and step_policy.gemm_reads_in_place(step.eqn) or step.kind == "native"


def native_callee(eqn, plan=None, constants=None):
    """The compiled code native code calls for an equation runs_natively accepts: the
    runtime's GEMM call (compiled, planned), a low-precision product's jobs (`constants`
    maps the program's constant variables to their values), or the routine."""
    if eqn.primitive in step_policy.GEMM_PRIMITIVES:
        from jaxlite.lower import gemm_calls
        if step_policy.runs_as_jobs(eqn):
            return gemm_calls.LowPrecisionCall(eqn, constants or {})
        return gemm_calls.GemmCall(eqn, plan=plan)
    return native_routines.compile_routine(step_policy.native_spec(eqn))


# A native call's table words: the pool's task, the callee's entry point, its unit table
# (a GEMM) or batch count (a routine), the number of units, and bytes of scratch per thread;
# for a job list, jaxlite_run_jobs, the list, 0, 1 and its bytes of scratch.
CALL_WORDS = 5
JOBS_FUNCTION = ir.FunctionType(VOID, [PTR, PTR, I64])


def _emit_native_call(fn, eqn, env, scratch):
    """Run a GEMM or routine by the pool, its task's context on the stack: for the GEMM
    family's unit task {kernel, a, b, c, scratch, stride, unit table, extra...}, for
    native_pool.ranged_task {routine, count, units, scratch, stride, operands...,
    results...}; a bf16/int8 product calls jaxlite_run_jobs(its JobList, its operands'
    pointers, scratch). The scratch starts at `scratch`; its size is known once the code
    is bound, and HostBridge reserves it then (so this returns 0)."""
    number = len(fn.code.native_eqns)
    fn.code.native_eqns.append(eqn)
    fn.code.native_scratch.append(scratch)
    task, callee, table_or_count, units, stride = (fn.table_word(1 + CALL_WORDS * number + k)
                                                   for k in range(CALL_WORDS))
    b = fn.b
    inputs = [fn.pointer(v, env) for v in eqn.inputs]
    outputs = [env[v] for v in eqn.outputs]
    # (64-byte aligned: routines' vector loops may assume it; the reservation allows for it)
    aligned = b.and_(b.add(b.ptrtoint(fn.workspace(scratch), I64), ir.Constant(I64, 63)), ir.Constant(I64, -64))
    if eqn.primitive in step_policy.GEMM_PRIMITIVES and step_policy.runs_as_jobs(eqn):
        operands = fn.entry.alloca(PTR, size=ir.Constant(I64, len(inputs) + len(outputs)))
        for index, pointer in enumerate(inputs + outputs):
            b.store(pointer, b.gep(operands, [ir.Constant(I64, index)], inbounds=True, source_etype=PTR))
        b.call(b.inttoptr(task, JOBS_FUNCTION.as_pointer()), [b.inttoptr(callee, PTR), operands, aligned])
        return 0
    if eqn.primitive in step_policy.GEMM_PRIMITIVES:
        words = [callee, *inputs[:2], *outputs, aligned, stride, table_or_count, *inputs[2:]]
    else:
        words = [callee, table_or_count, units, aligned, stride, *inputs, *outputs]
    context = fn.entry.alloca(I64, size=ir.Constant(I64, len(words)))
    for index, value in enumerate(words):
        word = value if value.type == I64 else b.ptrtoint(value, I64)
        b.store(word, b.gep(context, [ir.Constant(I64, index)], inbounds=True, source_etype=I64))
    run = declare(fn.code.module, "jaxlite_pool_run", VOID, [PTR, PTR, I64])
    b.call(run, [b.inttoptr(task, PTR), context, units])
    return 0


def _emit_host_call(fn, step, env):
    """Call back into Python for this step with its buffers' data pointers."""
    number = len(fn.code.host_steps)
    fn.code.host_steps.append(step)
    buffers = step.inputs + step.outputs
    array = fn.entry.alloca(PTR, size=ir.Constant(I64, max(len(buffers), 1)))
    b = fn.b
    for k, var in enumerate(buffers):
        b.store(env[var], b.gep(array, [ir.Constant(I64, k)], inbounds=True, source_etype=PTR))
    host = fn.table_entry(0, HOST_STEP.as_pointer())
    mxcsr = llvm_helpers.save_and_keep_denormals(b, fn.entry)
    status = b.call(host, [ir.Constant(I64, number), array])
    llvm_helpers.restore_mxcsr(b, mxcsr)
    resume = b.append_basic_block("after_callback")
    b.cbranch(b.icmp_signed("!=", status, ir.Constant(I32, 0)), fn.failed, resume)
    b.position_at_end(resume)
    return 0


# ---------------------------------------------------------------- the Python side

_HOST_PROTOTYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p)


class HostBridge:
    """This process's side of the native code: the ctypes callback (kept alive here), the
    GEMMs and routines it calls, and the table of their addresses and plans.
    `scratch_end` is the workspace their scratch needs (one per thread of the pool)."""

    def __init__(self, host_steps, callees, scratch):
        self.steps = [buffers.PythonStep(step) for step in host_steps]
        # Native code calls back on the thread that called it: an error belongs to that call.
        self._raised = threading.local()
        self.callback = _HOST_PROTOTYPE(self._run_step)
        self.callees = callees      # keeps the kernels and their unit tables alive
        words = [ctypes.cast(self.callback, ctypes.c_void_p).value]
        self.scratch_end = 0
        for callee, start in zip(callees, scratch):
            callee_words = _call_words(callee)
            words += callee_words
            # One unit runs on the caller alone; more may run in any slot of the pool.
            *_, units, stride = callee_words
            self.scratch_end = max(self.scratch_end, start + 64 + (native_pool.slots() if units > 1 else 1) * stride)
        self.table = np.array(words, np.int64)

    @property
    def gemm_calls(self):
        from jaxlite.lower import gemm_calls
        kinds = (gemm_calls.GemmCall, gemm_calls.LowPrecisionCall)
        return [callee for callee in self.callees if isinstance(callee, kinds)]

    def _run_step(self, number, pointers):
        try:
            step = self.steps[number]
            buffers = step.step.inputs + step.step.outputs
            addresses = (ctypes.c_void_p * max(len(buffers), 1)).from_address(pointers)
            views = {var: _view(addresses[k], var.aval) for k, var in enumerate(buffers)}
            step.run_on(views.__getitem__)
            return 0
        except BaseException as error:     # noqa: B036 -- re-raised after the native call returns
            self._raised.error = error
            return 1

    def raise_pending(self):
        error = getattr(self._raised, "error", None)
        if error is not None:
            self._raised.error = None
            raise error


def _gemm_words(call):
    kernel = call.kernel
    units, table = kernel.plan_units(call.plan)
    return [kernel.native.unit_task, kernel.address, ctypes.addressof(table),
            len(units), kernel.workspace_bytes]


def _routine_words(routine):
    return [native_pool.ranged_task(routine.pointer_count, True), routine.ranged_address, routine.batch,
            routine.threads, routine.slot_bytes]


def _job_words(call):
    return [native_pool.pool().jobs_address, native_call.array_data(call.table), 0, 1, call.jobs.scratch_bytes]


def _call_words(callee):
    from jaxlite.lower import gemm_calls
    if isinstance(callee, gemm_calls.GemmCall):
        return _gemm_words(callee)
    return _job_words(callee) if isinstance(callee, gemm_calls.LowPrecisionCall) else _routine_words(callee)


def _view(address, aval):
    nbytes = aval_bytes(aval)
    if not nbytes:
        return np.empty(aval.shape, aval.dtype)
    memory = (ctypes.c_char * nbytes).from_address(address)
    return np.frombuffer(memory, aval.dtype).reshape(aval.shape)
