"""Mesh collectives (lax/process_collectives.py) as native steps: MPI called from compiled code.

Each collective equation becomes a native routine (native_routines.py) with its shapes
baked in, so jit runs it inside the program's one native call, with the GIL released,
in program order (the primitives are effectful). The routine calls a small shim by name:

    jaxlite_mpi_allreduce(send, recv, count, dtype code, op code, description)
    jaxlite_mpi_reduce_scatter(send, recv, count per rank, dtype code, op code, description)
    jaxlite_mpi_allgather(send, recv, bytes, description)
    jaxlite_mpi_alltoall(send, recv, bytes per rank, description)
    jaxlite_mpi_sendrecv(send, recv, bytes, destinations, sources, description)
    jaxlite_mpi_rank() -> i64

The shims are compiled in each process once jaxlite.distributed is initialized, for the
MPI library mpi4py loaded (found through mpi4py's own module, never by name: two MPIs in
one process crash) and its flavour of handles (MPICH's are ints, Open MPI's pointers),
and linked under those names (llvm.add_symbol). So a routine's object code holds no
address and no handle and stays valid in the persistent cache, in any process and MPI.
Codes for dtypes and ops are positions in the tables below. Reductions longer than what MPI's
`int` counts are sent in pieces; the other collectives take up to 2**31-1 bytes per process.

A group of one process (a mesh axis of size 1) needs no MPI: its routine copies.
Eager collectives run the same routines (through ctypes, which releases the GIL).

Failure behaviour lives here too: a shim marks the collective in flight (its
description and a sequence number) and a watchdog thread aborts the job when one has
waited past `jaxlite.distributed`'s deadline, naming the rank, the collective, its shape
and the shard_mapped function; ranks check that they run the same collectives (eager)
or the same program's collectives (jit, at its first call) before they communicate.
"""
import ctypes
import hashlib
import math
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from jaxlite.lax import process_collectives as pc
from jaxlite.lower import llvm_target
from jaxlite.lower.llvm_helpers import I1, I8, I32, I64, PTR, VOID, as_i64, declare, emit_loop
from jaxlite.lower.native_call import _call_address, _global_text
from jaxlite.lower.native_routines import Routine, compile_routine, define_routine

DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128", "bool")
_MPI_DTYPES = ("INT8_T", "INT16_T", "INT32_T", "INT64_T", "UINT8_T", "UINT16_T", "UINT32_T", "UINT64_T",
               "FLOAT", "DOUBLE", "C_FLOAT_COMPLEX", "C_DOUBLE_COMPLEX", "C_BOOL")
OPS = ("sum", "max", "min")
_MPI_OPS = ("SUM", "MAX", "MIN")

MAX_COUNT = 2 ** 31 - 1       # MPI counts are C ints: longer buffers go in pieces of this many


# ---------------------------------------------------------------- the routines

@dataclass(frozen=True)
class CollectiveSpec:
    """One collective over `group` processes: `kind` (reduce, all_gather, psum_scatter,
    all_to_all, ppermute, axis_index) on a `dtype` operand of `count` elements."""
    kind: str
    dtype: str
    count: int
    group: int
    op: str = "sum"
    perm: tuple = ()
    description: str = ""

    def build(self):
        name = "jaxlite_collective"
        pointers = 1 if self.kind == "axis_index" else 2
        module = define_routine(name, pointers, 1, self._emit)
        return Routine(module, name, 1, 0, 0, optimize=False)

    @property
    def nbytes(self):
        return self.count * np.dtype(self.dtype).itemsize

    def _emit(self, b, pointers, scratch, index):
        if self.group == 1:
            self._emit_alone(b, pointers)
        else:
            self._emit_mpi(b, pointers)

    def _emit_alone(self, b, pointers):
        if self.kind == "axis_index":
            b.store(ir.Constant(I32, 0), pointers[0])
        elif self.kind == "ppermute" and (0, 0) not in self.perm:
            b.call(_declare(b.module, "llvm.memset.p0.i64", [PTR, I8, I64, I1]),
                   [pointers[1], ir.Constant(I8, 0), as_i64(self.nbytes), ir.Constant(I1, 0)])
        else:
            b.call(_declare(b.module, "llvm.memcpy.p0.p0.i64", [PTR, PTR, I64, I1]),
                   [pointers[1], pointers[0], as_i64(self.nbytes), ir.Constant(I1, 0)])

    def _emit_mpi(self, b, pointers):
        module, desc = b.module, _global_text(b.module, "description", self.description)
        if self.kind == "axis_index":
            rank = b.call(_declare(module, "jaxlite_mpi_rank", [], I64), [])
            b.store(b.trunc(rank, I32), pointers[0])
            return
        send, recv = pointers
        dtype, op = as_i64(DTYPES.index(self.dtype)), as_i64(OPS.index(self.op))
        if self.kind == "reduce":
            args = [send, recv, as_i64(self.count), dtype, op, desc]
            b.call(_declare(module, "jaxlite_mpi_allreduce", [PTR, PTR, I64, I64, I64, PTR]), args)
        elif self.kind == "psum_scatter":
            args = [send, recv, as_i64(self.count // self.group), dtype, op, desc]
            b.call(_declare(module, "jaxlite_mpi_reduce_scatter", [PTR, PTR, I64, I64, I64, PTR]), args)
        elif self.kind == "all_gather":
            b.call(_declare(module, "jaxlite_mpi_allgather", [PTR, PTR, I64, PTR]),
                   [send, recv, as_i64(self.nbytes), desc])
        elif self.kind == "all_to_all":
            b.call(_declare(module, "jaxlite_mpi_alltoall", [PTR, PTR, I64, PTR]),
                   [send, recv, as_i64(self.nbytes // self.group), desc])
        else:
            destinations, sources = _perm_tables(self.perm, self.group)
            tables = [_i64_table(module, "destinations", destinations), _i64_table(module, "sources", sources)]
            b.call(_declare(module, "jaxlite_mpi_sendrecv", [PTR, PTR, I64, PTR, PTR, PTR]),
                   [send, recv, as_i64(self.nbytes), *tables, desc])


def _perm_tables(perm, group):
    """Per rank, where its block goes and where its result comes from (-1: nowhere)."""
    destinations, sources = [-1] * group, [-1] * group
    for src, dst in perm:
        destinations[src], sources[dst] = dst, src
    return destinations, sources


def _declare(module, name, argument_types, result=VOID):
    return declare(module, name, result, argument_types)


def _i64_table(module, name, values):
    constant = ir.Constant(ir.ArrayType(I64, len(values)), values)
    variable = ir.GlobalVariable(module, constant.type, name)
    variable.global_constant, variable.initializer, variable.linkage = True, constant, "internal"
    return variable


# ---------------------------------------------------------------- from equations and operands

_KINDS = {pc.process_reduce_p: "reduce", pc.process_all_gather_p: "all_gather",
          pc.process_psum_scatter_p: "psum_scatter", pc.process_all_to_all_p: "all_to_all",
          pc.process_ppermute_p: "ppermute", pc.process_axis_index_p: "axis_index"}
PRIMITIVES = tuple(_KINDS)
_USER_NAMES = {"reduce": "p{op}", "all_gather": "all_gather", "psum_scatter": "psum_scatter",
               "all_to_all": "all_to_all", "ppermute": "ppermute", "axis_index": "axis_index"}


def spec_of(primitive, in_avals, params):
    """The CollectiveSpec of a mesh collective on operands of these avals."""
    kind = _KINDS[primitive]
    mesh, axes = params["mesh"], params["axes"]
    group = math.prod(mesh.shape[a] for a in axes)
    aval = in_avals[0] if in_avals else None
    dtype = "int32" if aval is None else np.dtype(aval.dtype).name
    if group > 1:
        _require_job()
    op = params.get("op", "sum")
    shape = "" if aval is None else f" of {dtype}[{','.join(map(str, aval.shape))}]"
    description = (f"{_USER_NAMES[kind].format(op=op)} over mesh axes {axes}{shape} "
                   f"in shard_map of {params['where']!r}")
    count = 1 if aval is None else int(aval.size)
    if kind in ("reduce", "psum_scatter"):
        if dtype not in DTYPES:
            raise TypeError(f"{description}: MPI does not reduce {dtype} (jaxlite.lax reduces 16-bit floats in float32)")
        spec = CollectiveSpec(kind, dtype, count, group, op, description=description)
    else:       # moving bytes: any dtype is its bytes
        nbytes = count * (4 if aval is None else np.dtype(aval.dtype).itemsize)
        spec = CollectiveSpec(kind, "uint8", nbytes, group, op, tuple(params.get("perm", ())), description)
    if group > 1 and _count_per_call(spec) > MAX_COUNT:
        raise ValueError(f"{description}: more than {MAX_COUNT} elements or bytes per process in one call "
                         f"of MPI; only psum/pmax/pmin go in pieces (split the array)")
    return spec


def _count_per_call(spec):
    """The count one MPI call of the shim passes (reductions pass pieces)."""
    per_rank = {"reduce": 0, "axis_index": 0, "psum_scatter": spec.count // spec.group,
                "all_to_all": spec.nbytes // spec.group}
    return per_rank.get(spec.kind, spec.nbytes)


def eqn_spec(eqn):
    return spec_of(eqn.primitive, [v.aval for v in eqn.inputs], eqn.params)


def run_eagerly(primitive, operands, params):
    """A mesh collective on numpy operands, by the routine jit would call."""
    from jaxlite.core.abstract import ShapedArray
    in_avals = [ShapedArray(np.shape(x), np.asarray(x).dtype) for x in operands]
    out_aval = primitive.abstract_eval_list(in_avals, params)[0]
    spec = spec_of(primitive, in_avals, params)
    if spec.group > 1:
        _check_ranks_agree(spec.description)
    operand = np.ascontiguousarray(operands[0]) if operands else None
    result = np.empty(out_aval.shape, out_aval.dtype)
    routine = compile_routine(spec)
    pointers = ([] if operand is None else [operand.ctypes.data]) + [result.ctypes.data, 0]
    ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(pointers))(routine.address)(*pointers)
    return result


# ---------------------------------------------------------------- MPI: the shims

class _Mpi:
    """The MPI library mpi4py loaded, the job's communicator and this process's shims."""

    def __init__(self, comm):
        from mpi4py import MPI
        self.comm, self.rank, self.size = comm, comm.Get_rank(), comm.Get_size()
        library = ctypes.CDLL(MPI.__file__)
        self.functions = {name: ctypes.cast(getattr(library, name), ctypes.c_void_p).value
                          for name in ("MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Allgather",
                                       "MPI_Alltoall", "MPI_Sendrecv", "MPI_Abort")}
        pointer_handles = MPI._sizeof(MPI.Comm) != 4       # MPICH's handles are ints, Open MPI's pointers
        self.handle_type = PTR if pointer_handles else I32
        self.handle = (lambda obj: ctypes.c_void_p(MPI._handleof(obj))) if pointer_handles else \
            (lambda obj: ctypes.c_int(_signed32(MPI._handleof(obj))))
        self.handles = {"comm": MPI._handleof(comm), "byte": MPI._handleof(MPI.BYTE),
                        "dtypes": [MPI._handleof(getattr(MPI, n)) for n in _MPI_DTYPES],
                        "ops": [MPI._handleof(getattr(MPI, n)) for n in _MPI_OPS]}
        # In flight: [description address, sequence number], written by the shims, read by the watchdog.
        self.in_flight = np.zeros(2, np.int64)
        self.status = np.zeros(max(64, MPI._sizeof(MPI.Status)), np.uint8)    # MPI_Sendrecv's, unread
        self.code = llvm_target.compile_ir(str(_shim_module(self)), optimize_ir=False)
        for name in ("jaxlite_mpi_allreduce", "jaxlite_mpi_reduce_scatter", "jaxlite_mpi_allgather",
                     "jaxlite_mpi_alltoall", "jaxlite_mpi_sendrecv", "jaxlite_mpi_rank"):
            llvm.add_symbol(name, self.code.address(name))

    def abort(self, code=1):
        function = ctypes.CFUNCTYPE(ctypes.c_int, type(self.handle(self.comm)), ctypes.c_int)(
            self.functions["MPI_Abort"])
        function(self.handle(self.comm), code)

    def allgather_words(self, word, description):
        """Every rank's int64 `word`, by the shim (so the watchdog sees this wait too)."""
        send, recv = np.array([word], np.int64), np.zeros(self.size, np.int64)
        shim = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p)(
            self.code.address("jaxlite_mpi_allgather"))
        shim(send.ctypes.data, recv.ctypes.data, 8, description.encode())
        return recv


def _signed32(value):
    value &= 0xffffffff
    return value - (1 << 32) if value >= 1 << 31 else value


def _shim_module(mpi):
    module = ir.Module(name="jaxlite_mpi_shims")
    shims = _ShimBuilder(module, mpi)
    shims.define_reduction("jaxlite_mpi_allreduce", "MPI_Allreduce", 1)
    shims.define_reduction("jaxlite_mpi_reduce_scatter", "MPI_Reduce_scatter_block", mpi.size)
    shims.define_bytes("jaxlite_mpi_allgather", "MPI_Allgather")
    shims.define_bytes("jaxlite_mpi_alltoall", "MPI_Alltoall")
    shims.define_sendrecv()
    rank = ir.Function(module, ir.FunctionType(I64, []), "jaxlite_mpi_rank")
    ir.IRBuilder(rank.append_basic_block("entry")).ret(as_i64(mpi.rank))
    return module


class _ShimBuilder:
    """LLVM functions that call this process's MPI with its handles."""

    def __init__(self, module, mpi):
        self.module, self.mpi, self.h = module, mpi, mpi.handle_type

    def handle(self, value):
        if self.h == PTR:
            return ir.Constant(I64, value).inttoptr(PTR)
        return ir.Constant(I32, _signed32(value))

    def begin(self, b, desc):
        """Mark the collective in flight for the watchdog: its description and a new number."""
        state = b.inttoptr(as_i64(self.mpi.in_flight.ctypes.data), PTR)
        b.store(b.ptrtoint(desc, I64), state)
        seq = b.gep(state, [as_i64(1)], source_etype=I64)
        b.store(b.add(b.load(seq, typ=I64), as_i64(1)), seq)

    def end(self, b):
        b.store(as_i64(0), b.inttoptr(as_i64(self.mpi.in_flight.ctypes.data), PTR))

    def table_handle(self, b, values, index):
        """values[index] of a table of handles (dtypes or ops, by code)."""
        array_type = ir.ArrayType(self.h, len(values))
        table = ir.GlobalVariable(self.module, array_type, self.module.get_unique_name("handles"))
        table.global_constant, table.linkage = True, "internal"
        table.initializer = ir.Constant(array_type, [self.handle(v) for v in values])
        return b.load(b.gep(table, [as_i64(0), index], source_etype=array_type), typ=self.h)

    def call(self, b, name, args):
        _call_address(b, self.mpi.functions[name], ir.FunctionType(I32, [a.type for a in args]), args)

    def define_reduction(self, name, mpi_name, per_rank_blocks):
        """name(send, recv, count, dtype, op, desc): pieces of MAX_COUNT elements each. For a
        reduce-scatter (`per_rank_blocks` ranks) `count` is per rank and goes whole."""
        function = ir.Function(self.module, ir.FunctionType(VOID, [PTR, PTR, I64, I64, I64, PTR]), name)
        send, recv, count, dtype, op, desc = function.args
        b = ir.IRBuilder(function.append_basic_block("entry"))
        self.begin(b, desc)
        dtype_handle = self.table_handle(b, self.mpi.handles["dtypes"], dtype)
        op_handle = self.table_handle(b, self.mpi.handles["ops"], op)
        comm = self.handle(self.mpi.handles["comm"])
        if per_rank_blocks > 1:
            self.call(b, mpi_name, [send, recv, b.trunc(count, I32), dtype_handle, op_handle, comm])
        else:
            itemsize = self.table_value(b, [np.dtype(d).itemsize for d in DTYPES], dtype)
            def piece(start):
                n = b.select(b.icmp_signed("<", b.sub(count, start), as_i64(MAX_COUNT)),
                             b.sub(count, start), as_i64(MAX_COUNT))
                offset = b.mul(start, itemsize)
                self.call(b, mpi_name, [b.gep(send, [offset], source_etype=I8),
                                        b.gep(recv, [offset], source_etype=I8),
                                        b.trunc(n, I32), dtype_handle, op_handle, comm])
                return []
            emit_loop(b, as_i64(0), count, piece, step=MAX_COUNT)
        self.end(b)
        b.ret_void()

    def table_value(self, b, values, index):
        table = _i64_table(self.module, self.module.get_unique_name("sizes"), values)
        return b.load(b.gep(table, [as_i64(0), index], source_etype=table.value_type), typ=I64)

    def define_bytes(self, name, mpi_name):
        """name(send, recv, bytes, desc): `bytes` from each rank, as one element of a
        contiguous type when they are more than MPI_BYTE's count can say."""
        function = ir.Function(self.module, ir.FunctionType(VOID, [PTR, PTR, I64, PTR]), name)
        send, recv, nbytes, desc = function.args
        b = ir.IRBuilder(function.append_basic_block("entry"))
        self.begin(b, desc)
        byte, comm = self.handle(self.mpi.handles["byte"]), self.handle(self.mpi.handles["comm"])
        count = b.trunc(nbytes, I32)
        self.call(b, mpi_name, [send, count, byte, recv, count, byte, comm])
        self.end(b)
        b.ret_void()

    def define_sendrecv(self):
        """jaxlite_mpi_sendrecv(send, recv, bytes, destinations, sources, desc): this rank's
        block to destinations[rank], its result from sources[rank]; zeros when none."""
        function = ir.Function(self.module, ir.FunctionType(VOID, [PTR, PTR, I64, PTR, PTR, PTR]),
                               "jaxlite_mpi_sendrecv")
        send, recv, nbytes, destinations, sources, desc = function.args
        b = ir.IRBuilder(function.append_basic_block("entry"))
        self.begin(b, desc)
        rank = as_i64(self.mpi.rank)
        dst = b.load(b.gep(destinations, [rank], source_etype=I64), typ=I64)
        src = b.load(b.gep(sources, [rank], source_etype=I64), typ=I64)
        none = ir.Constant(I32, _proc_null())
        dst32 = b.select(b.icmp_signed("<", dst, as_i64(0)), none, b.trunc(dst, I32))
        src32 = b.select(b.icmp_signed("<", src, as_i64(0)), none, b.trunc(src, I32))
        with b.if_then(b.icmp_signed("<", src, as_i64(0))):
            b.call(_declare(self.module, "llvm.memset.p0.i64", [PTR, I8, I64, I1]),
                   [recv, ir.Constant(I8, 0), nbytes, ir.Constant(I1, 0)])
        byte, comm = self.handle(self.mpi.handles["byte"]), self.handle(self.mpi.handles["comm"])
        count, tag = b.trunc(nbytes, I32), ir.Constant(I32, 7)
        status = ir.Constant(I64, self.mpi.status.ctypes.data).inttoptr(PTR)
        self.call(b, "MPI_Sendrecv", [send, count, byte, dst32, tag, recv, count, byte, src32, tag, comm, status])
        self.end(b)
        b.ret_void()


def _proc_null():
    from mpi4py import MPI
    return MPI.PROC_NULL


# ---------------------------------------------------------------- the job: attach, watch, abort

_job = {"mpi": None, "deadline": 300.0}


def attach(comm, deadline):
    """Compile and link the shims for `comm` (jaxlite.distributed.initialize) and start the watchdog."""
    _job["mpi"], _job["deadline"] = _Mpi(comm), float(deadline)
    threading.Thread(target=_watch, name="jaxlite collective watchdog", daemon=True).start()


def _require_job():
    if _job["mpi"] is None:
        raise RuntimeError("a collective over several processes needs jaxlite.distributed.initialize() first")


def detach():
    _job["mpi"] = None


def abort(message, code=1):
    """Print `message` and end every process of the job (MPI_Abort)."""
    sys.stderr.write(message if message.endswith("\n") else message + "\n")
    sys.stderr.flush()
    mpi = _job["mpi"]
    if mpi is not None:
        mpi.abort(code)
    os._exit(code)


def _watch():
    """Abort the job when a collective has been in flight longer than the deadline."""
    seen, since = None, None
    while _job["mpi"] is not None:
        mpi = _job["mpi"]
        desc, seq = int(mpi.in_flight[0]), int(mpi.in_flight[1])
        if desc == 0:
            seen = None
        elif seen != seq:
            seen, since = seq, time.monotonic()
        elif time.monotonic() - since > _job["deadline"]:
            what = ctypes.string_at(desc).decode()
            abort(f"jaxlite.distributed: rank {mpi.rank} of {mpi.size} waited more than {_job['deadline']:g} s "
                  f"in {what}: another rank did not reach it (it skipped the collective, ran a different "
                  f"one, or hangs). The waiting call:\n{_stack_of_main()}Aborting the job.")
        time.sleep(min(0.05, _job["deadline"] / 4))


def _stack_of_main():
    frame = sys._current_frames().get(threading.main_thread().ident)
    return "".join(traceback.format_stack(frame)) if frame is not None else ""


# ---------------------------------------------------------------- ranks agree on what they run

def _fingerprint(text):
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def _check_ranks_agree(what):
    mpi = _job["mpi"]
    words = mpi.allgather_words(_fingerprint(what), f"the check that every rank runs {what}")
    if len(set(words.tolist())) > 1:
        differing = [r for r, w in enumerate(words) if w != words[mpi.rank]]
        raise RuntimeError(f"rank {mpi.rank} runs {what}, but rank(s) {differing} run something else at this "
                           f"point: every process must run the same collectives, on the same shapes, in the same order")


def program_collectives(jaxpr):
    """The descriptions of a jaxpr's mesh collectives over several processes, in program order
    (control-flow and call bodies included)."""
    from jaxlite.core.ir import sub_jaxprs
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive in _KINDS:
            spec = eqn_spec(eqn)
            if spec.group > 1:
                found.append(spec.description)
        for body in sub_jaxprs(eqn):
            found.extend(program_collectives(getattr(body, "jaxpr", body)))
    return found


def check_program(closed, name):
    """At a program's first call (jit compiles it): every rank must have traced the same
    collectives, or the first of them would hang or mix buffers."""
    if _job["mpi"] is None:
        return
    found = program_collectives(closed.jaxpr)
    if found:
        signature = ", ".join(a.str_short() for a in closed.in_avals)
        _check_ranks_agree(f"jit program {name!r} ({signature}) with collectives: " + "; ".join(found))
