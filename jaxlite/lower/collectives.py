"""Mesh collectives (lax/process_collectives.py) as native steps: MPI called from compiled code.

Each collective equation becomes a native routine (native_routines.py) with its shapes
baked in, so jit runs it inside the program's one native call, with the GIL released,
in program order (the primitives are effectful). The routine calls a small shim by name:

    jaxlite_mpi_allreduce(send, recv, count, dtype code, op code, description, communicator)
    jaxlite_mpi_reduce_scatter(send, recv, count per rank, dtype code, op code, description, communicator)
    jaxlite_mpi_allgather(send, recv, bytes, description, communicator)
    jaxlite_mpi_alltoall(send, recv, bytes per rank, description, communicator)
    jaxlite_mpi_sendrecv(send, recv, bytes, destinations, sources, description, communicator)
    jaxlite_mpi_rank(communicator) -> i64

A collective combines groups of processes: those along its mesh axes (every process for a
1-d mesh, a row or column of a 2-d one), split further by axis_index_groups. Each group has
its own MPI communicator (MPI_Comm_create_group of its members, in their order along the
axes; the job's own for all of them in order). The routine names its communicator by a
symbol, `jaxlite_comm_<digest of the groups>`, bound in each process to a cell holding this
process's handle, rank and group size (the groups are the same in every process, the cell's
content is not).

The shims are compiled in each process once jaxlite.distributed is initialized, for the
MPI library mpi4py loaded (found through mpi4py's own module, never by name: two MPIs in
one process crash) and its flavour of handles (MPICH's are ints, Open MPI's pointers),
and linked under those names (llvm.add_symbol). So a routine's object code holds no
address and no handle and stays valid in the persistent cache, in any process and MPI.
Codes for dtypes and ops are positions in the tables below. MPI's counts are C ints, so
longer buffers go in pieces of MAX_COUNT elements or bytes: an allreduce piece by piece, and
the others by their point-to-point or rooted forms piece by piece (a reduce-scatter as one
reduce per root, an allgather as one broadcast per root, an all-to-all and a ppermute as
pairwise sendrecvs).

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
    groups: tuple = ()          # the process groups (of `group` each), when group > 1

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

    @property
    def communicator_symbol(self):
        digest = hashlib.blake2b(repr(self.groups).encode(), digest_size=8).hexdigest()
        return f"jaxlite_comm_{digest}"

    def _emit_mpi(self, b, pointers):
        module, desc = b.module, _global_text(b.module, "description", self.description)
        comm = ir.GlobalVariable(module, ir.ArrayType(I64, 3), self.communicator_symbol)    # bound per process
        if self.kind == "axis_index":
            rank = b.call(_declare(module, "jaxlite_mpi_rank", [PTR], I64), [comm])
            b.store(b.trunc(rank, I32), pointers[0])
            return
        send, recv = pointers
        dtype, op = as_i64(DTYPES.index(self.dtype)), as_i64(OPS.index(self.op))
        if self.kind == "reduce":
            args = [send, recv, as_i64(self.count), dtype, op, desc, comm]
            b.call(_declare(module, "jaxlite_mpi_allreduce", [PTR, PTR, I64, I64, I64, PTR, PTR]), args)
        elif self.kind == "psum_scatter":
            args = [send, recv, as_i64(self.count // self.group), dtype, op, desc, comm]
            b.call(_declare(module, "jaxlite_mpi_reduce_scatter", [PTR, PTR, I64, I64, I64, PTR, PTR]), args)
        elif self.kind == "all_gather":
            b.call(_declare(module, "jaxlite_mpi_allgather", [PTR, PTR, I64, PTR, PTR]),
                   [send, recv, as_i64(self.nbytes), desc, comm])
        elif self.kind == "all_to_all":
            b.call(_declare(module, "jaxlite_mpi_alltoall", [PTR, PTR, I64, PTR, PTR]),
                   [send, recv, as_i64(self.nbytes // self.group), desc, comm])
        else:
            destinations, sources = _perm_tables(self.perm, self.group)
            tables = [_i64_table(module, "destinations", destinations), _i64_table(module, "sources", sources)]
            b.call(_declare(module, "jaxlite_mpi_sendrecv", [PTR, PTR, I64, PTR, PTR, PTR, PTR]),
                   [send, recv, as_i64(self.nbytes), *tables, desc, comm])


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
    mesh, axes, index_groups = params["mesh"], params["axes"], params.get("axis_index_groups")
    group = pc.axes_size(mesh, axes, index_groups)
    aval = in_avals[0] if in_avals else None
    dtype = "int32" if aval is None else np.dtype(aval.dtype).name
    op = params.get("op", "sum")
    shape = "" if aval is None else f" of {dtype}[{','.join(map(str, aval.shape))}]"
    grouped = "" if index_groups is None else f" in groups {[list(g) for g in index_groups]}"
    description = (f"{_USER_NAMES[kind].format(op=op)} over mesh axes {axes}{grouped}{shape} "
                   f"in shard_map of {params['where']!r}")
    groups = ()
    if group > 1:
        _require_job()
        groups = pc.process_groups(mesh, axes, index_groups)
        _job["mpi"].bind_communicator(groups, description)
    count = 1 if aval is None else int(aval.size)
    if kind in ("reduce", "psum_scatter"):
        if dtype not in DTYPES:
            raise TypeError(f"{description}: MPI does not reduce {dtype} (jaxlite.lax reduces 16-bit floats in float32)")
        return CollectiveSpec(kind, dtype, count, group, op, description=description, groups=groups)
    nbytes = count * (4 if aval is None else np.dtype(aval.dtype).itemsize)     # moving bytes: any dtype
    return CollectiveSpec(kind, "uint8", nbytes, group, op, tuple(params.get("perm", ())), description, groups)


def eqn_spec(eqn):
    return spec_of(eqn.primitive, [v.aval for v in eqn.inputs], eqn.params)


def run_eagerly(primitive, operands, params):
    """A mesh collective on numpy operands, by the routine jit would call."""
    from jaxlite.core.abstract import ShapedArray
    in_avals = [ShapedArray(np.shape(x), np.asarray(x).dtype) for x in operands]
    out_aval = primitive.abstract_eval_list(in_avals, params)[0]
    spec = spec_of(primitive, in_avals, params)
    if spec.group > 1:
        _check_ranks_agree(spec.description, spec.groups)
    operand = np.ascontiguousarray(operands[0]) if operands else None
    result = np.empty(out_aval.shape, out_aval.dtype)
    routine = compile_routine(spec)
    pointers = ([] if operand is None else [operand.ctypes.data]) + [result.ctypes.data, 0]
    ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(pointers))(routine.address)(*pointers)
    return result


# ---------------------------------------------------------------- MPI: the shims

class _Mpi:
    """The MPI library mpi4py loaded, the job's communicator, its groups' communicators and
    this process's shims."""

    def __init__(self, comm):
        from mpi4py import MPI
        self.comm, self.rank, self.size = comm, comm.Get_rank(), comm.Get_size()
        library = ctypes.CDLL(MPI.__file__)
        self.functions = {name: ctypes.cast(getattr(library, name), ctypes.c_void_p).value
                          for name in ("MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Allgather",
                                       "MPI_Alltoall", "MPI_Sendrecv", "MPI_Bcast", "MPI_Reduce", "MPI_Abort")}
        pointer_handles = MPI._sizeof(MPI.Comm) != 4       # MPICH's handles are ints, Open MPI's pointers
        self.handle_type = PTR if pointer_handles else I32
        self.handle = (lambda obj: ctypes.c_void_p(MPI._handleof(obj))) if pointer_handles else \
            (lambda obj: ctypes.c_int(_signed32(MPI._handleof(obj))))
        self.handle_word = (lambda obj: MPI._handleof(obj)) if pointer_handles else \
            (lambda obj: _signed32(MPI._handleof(obj)))
        self.handles = {"byte": MPI._handleof(MPI.BYTE),
                        "dtypes": [MPI._handleof(getattr(MPI, n)) for n in _MPI_DTYPES],
                        "ops": [MPI._handleof(getattr(MPI, n)) for n in _MPI_OPS]}
        # In flight: [description address, sequence number], written by the shims, read by the watchdog.
        self.in_flight = np.zeros(2, np.int64)
        self.status = np.zeros(max(64, MPI._sizeof(MPI.Status)), np.uint8)    # MPI_Sendrecv's, unread
        self.communicators = {}       # symbol -> (cell: handle, rank, size; the mpi4py communicator)
        self.world = self.bind_communicator((tuple(range(self.size)),), "the job")
        self.code = llvm_target.compile_ir(str(_shim_module(self)), optimize_ir=False)
        for name in ("jaxlite_mpi_allreduce", "jaxlite_mpi_reduce_scatter", "jaxlite_mpi_allgather",
                     "jaxlite_mpi_alltoall", "jaxlite_mpi_sendrecv", "jaxlite_mpi_rank"):
            llvm.add_symbol(name, self.code.address(name))

    def bind_communicator(self, groups, what):
        """The symbol of the communicator of this process's group among `groups` (created at
        the first collective over them, by the group's members alone), bound to its cell."""
        symbol = communicator_symbol(groups)
        if symbol not in self.communicators:
            members = [p for group in groups for p in group]
            if len(set(members)) != len(members) or not all(0 <= p < self.size for p in members):
                raise ValueError(f"{what}: the mesh must hold each process of the job ({self.size}) at most once, "
                                 f"got groups of processes {[list(g) for g in groups]}")
            mine = [group for group in groups if self.rank in group]
            if not mine:
                raise ValueError(f"{what}: process {self.rank} is not on the mesh of this collective "
                                 f"(its processes: {sorted(members)})")
            group = list(mine[0])
            comm = self.comm if group == list(range(self.size)) else \
                self.comm.Create_group(self.comm.Get_group().Incl(group))
            cell = np.array([self.handle_word(comm), group.index(self.rank), len(group)], np.int64)
            llvm.add_symbol(symbol, cell.ctypes.data)
            self.communicators[symbol] = (cell, comm)
        return symbol

    def abort(self, code=1):
        function = ctypes.CFUNCTYPE(ctypes.c_int, type(self.handle(self.comm)), ctypes.c_int)(
            self.functions["MPI_Abort"])
        function(self.handle(self.comm), code)

    def allgather_words(self, word, description, groups=None):
        """Every group member's int64 `word` (the job's, without groups), by the shim, so the
        watchdog sees this wait too."""
        symbol = self.world if groups is None else self.bind_communicator(groups, description)
        cell = self.communicators[symbol][0]
        send, recv = np.array([word], np.int64), np.zeros(int(cell[2]), np.int64)
        shim = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p,
                                ctypes.c_void_p)(self.code.address("jaxlite_mpi_allgather"))
        shim(send.ctypes.data, recv.ctypes.data, 8, description.encode(), cell.ctypes.data)
        return recv


def communicator_symbol(groups):
    digest = hashlib.blake2b(repr(tuple(tuple(g) for g in groups)).encode(), digest_size=8).hexdigest()
    return f"jaxlite_comm_{digest}"


def _signed32(value):
    value &= 0xffffffff
    return value - (1 << 32) if value >= 1 << 31 else value


def _shim_module(mpi):
    module = ir.Module(name="jaxlite_mpi_shims")
    shims = _ShimBuilder(module, mpi)
    shims.define_allreduce()
    shims.define_reduce_scatter()
    shims.define_allgather()
    shims.define_alltoall()
    shims.define_sendrecv()
    rank = ir.Function(module, ir.FunctionType(I64, [PTR]), "jaxlite_mpi_rank")
    b = ir.IRBuilder(rank.append_basic_block("entry"))
    b.ret(_cell_word(b, rank.args[0], 1))
    return module


def _cell_word(b, cell, index):
    """Word `index` of a communicator cell: 0 the handle, 1 this process's rank, 2 the group size."""
    return b.load(b.gep(cell, [as_i64(index)], source_etype=I64), typ=I64)


class _ShimBuilder:
    """LLVM functions that call this process's MPI with its handles. Counts past MAX_COUNT go
    in pieces (MPI's counts are C ints)."""

    def __init__(self, module, mpi):
        self.module, self.mpi, self.h = module, mpi, mpi.handle_type

    def handle(self, value):
        if self.h == PTR:
            return ir.Constant(I64, value).inttoptr(PTR)
        return ir.Constant(I32, _signed32(value))

    def function(self, name, argument_types):
        """A shim's function, its entry builder, and its arguments; it starts by marking the
        collective in flight (its description is the last argument but the communicator)."""
        function = ir.Function(self.module, ir.FunctionType(VOID, argument_types), name)
        b = ir.IRBuilder(function.append_basic_block("entry"))
        self.begin(b, function.args[-2])
        return function, b, function.args

    def begin(self, b, desc):
        """Mark the collective in flight for the watchdog: its description and a new number."""
        state = b.inttoptr(as_i64(self.mpi.in_flight.ctypes.data), PTR)
        b.store(b.ptrtoint(desc, I64), state)
        seq = b.gep(state, [as_i64(1)], source_etype=I64)
        b.store(b.add(b.load(seq, typ=I64), as_i64(1)), seq)

    def end(self, b):
        b.store(as_i64(0), b.inttoptr(as_i64(self.mpi.in_flight.ctypes.data), PTR))
        b.ret_void()

    def comm(self, b, cell):
        return b.load(cell, typ=self.h)        # the cell's first word (an int handle in its low half)

    def table_handle(self, b, values, index):
        """values[index] of a table of handles (dtypes or ops, by code)."""
        array_type = ir.ArrayType(self.h, len(values))
        table = ir.GlobalVariable(self.module, array_type, self.module.get_unique_name("handles"))
        table.global_constant, table.linkage = True, "internal"
        table.initializer = ir.Constant(array_type, [self.handle(v) for v in values])
        return b.load(b.gep(table, [as_i64(0), index], source_etype=array_type), typ=self.h)

    def table_value(self, b, values, index):
        table = _i64_table(self.module, self.module.get_unique_name("sizes"), values)
        return b.load(b.gep(table, [as_i64(0), index], source_etype=table.value_type), typ=I64)

    def call(self, b, name, args):
        _call_address(b, self.mpi.functions[name], ir.FunctionType(I32, [a.type for a in args]), args)

    def in_pieces(self, b, count, unit, piece):
        """piece(offset in bytes, length) for each piece of MAX_COUNT of `count` units of `unit` bytes."""
        def one(start):
            length = b.select(b.icmp_signed("<", b.sub(count, start), as_i64(MAX_COUNT)),
                              b.sub(count, start), as_i64(MAX_COUNT))
            piece(b.mul(start, unit), b.trunc(length, I32))
            return []
        emit_loop(b, as_i64(0), count, one, step=MAX_COUNT)

    def whole_or_in_pieces(self, b, count, whole, in_pieces):
        """whole() when `count` fits one MPI call, else in_pieces()."""
        with b.if_else(b.icmp_signed("<=", count, as_i64(MAX_COUNT))) as (fits, too_long):
            with fits:
                whole()
            with too_long:
                in_pieces()

    def each_rank(self, b, cell, body):
        emit_loop(b, as_i64(0), _cell_word(b, cell, 2), lambda r: body(r) or [])

    def define_allreduce(self):
        """jaxlite_mpi_allreduce(send, recv, count, dtype, op, desc, comm)."""
        _, b, (send, recv, count, dtype, op, desc, cell) = self.function(
            "jaxlite_mpi_allreduce", [PTR, PTR, I64, I64, I64, PTR, PTR])
        dtype_handle, op_handle = self.dtype_and_op(b, dtype, op)
        itemsize, comm = self.itemsize(b, dtype), self.comm(b, cell)
        self.in_pieces(b, count, itemsize, lambda offset, n: self.call(b, "MPI_Allreduce", [
            self.at(b, send, offset), self.at(b, recv, offset), n, dtype_handle, op_handle, comm]))
        self.end(b)

    def define_reduce_scatter(self):
        """jaxlite_mpi_reduce_scatter(send, recv, count per rank, dtype, op, desc, comm); long
        blocks as one MPI_Reduce per root (its block), piece by piece."""
        _, b, (send, recv, count, dtype, op, desc, cell) = self.function(
            "jaxlite_mpi_reduce_scatter", [PTR, PTR, I64, I64, I64, PTR, PTR])
        dtype_handle, op_handle = self.dtype_and_op(b, dtype, op)
        itemsize, comm = self.itemsize(b, dtype), self.comm(b, cell)
        block = b.mul(count, itemsize)

        def per_root():
            self.each_rank(b, cell, lambda root: self.in_pieces(b, count, itemsize, lambda offset, n: self.call(
                b, "MPI_Reduce", [self.at(b, send, b.add(b.mul(root, block), offset)), self.at(b, recv, offset), n,
                                  dtype_handle, op_handle, b.trunc(root, I32), comm])))
        self.whole_or_in_pieces(b, count, lambda: self.call(b, "MPI_Reduce_scatter_block", [
            send, recv, b.trunc(count, I32), dtype_handle, op_handle, comm]), per_root)
        self.end(b)

    def define_allgather(self):
        """jaxlite_mpi_allgather(send, recv, bytes, desc, comm); long blocks as this block's copy
        and one MPI_Bcast per root, piece by piece."""
        _, b, (send, recv, nbytes, desc, cell) = self.function("jaxlite_mpi_allgather", [PTR, PTR, I64, PTR, PTR])
        byte, comm = self.handle(self.mpi.handles["byte"]), self.comm(b, cell)

        def per_root():
            mine = self.at(b, recv, b.mul(_cell_word(b, cell, 1), nbytes))
            b.call(_declare(self.module, "llvm.memcpy.p0.p0.i64", [PTR, PTR, I64, I1]),
                   [mine, send, nbytes, ir.Constant(I1, 0)])
            self.each_rank(b, cell, lambda root: self.in_pieces(b, nbytes, as_i64(1), lambda offset, n: self.call(
                b, "MPI_Bcast", [self.at(b, recv, b.add(b.mul(root, nbytes), offset)), n, byte,
                                 b.trunc(root, I32), comm])))
        count = b.trunc(nbytes, I32)
        self.whole_or_in_pieces(b, nbytes, lambda: self.call(b, "MPI_Allgather", [
            send, count, byte, recv, count, byte, comm]), per_root)
        self.end(b)

    def define_alltoall(self):
        """jaxlite_mpi_alltoall(send, recv, bytes per rank, desc, comm); long blocks as pairwise
        exchanges (step k: to rank + k, from rank - k), piece by piece."""
        _, b, (send, recv, nbytes, desc, cell) = self.function("jaxlite_mpi_alltoall", [PTR, PTR, I64, PTR, PTR])
        byte, comm = self.handle(self.mpi.handles["byte"]), self.comm(b, cell)
        rank, size = _cell_word(b, cell, 1), _cell_word(b, cell, 2)

        def pairwise():
            def step(k):
                dst = b.urem(b.add(rank, k), size)
                src = b.urem(b.sub(b.add(rank, size), k), size)
                self.in_pieces(b, nbytes, as_i64(1), lambda offset, n: self.sendrecv(
                    b, self.at(b, send, b.add(b.mul(dst, nbytes), offset)), b.trunc(dst, I32),
                    self.at(b, recv, b.add(b.mul(src, nbytes), offset)), b.trunc(src, I32), n, comm))
            self.each_rank(b, cell, step)
        count = b.trunc(nbytes, I32)
        self.whole_or_in_pieces(b, nbytes, lambda: self.call(b, "MPI_Alltoall", [
            send, count, byte, recv, count, byte, comm]), pairwise)
        self.end(b)

    def define_sendrecv(self):
        """jaxlite_mpi_sendrecv(send, recv, bytes, destinations, sources, desc, comm): this rank's
        block to destinations[rank], its result from sources[rank]; zeros when none."""
        _, b, (send, recv, nbytes, destinations, sources, desc, cell) = self.function(
            "jaxlite_mpi_sendrecv", [PTR, PTR, I64, PTR, PTR, PTR, PTR])
        rank = _cell_word(b, cell, 1)
        dst = b.load(b.gep(destinations, [rank], source_etype=I64), typ=I64)
        src = b.load(b.gep(sources, [rank], source_etype=I64), typ=I64)
        none = ir.Constant(I32, _proc_null())
        dst32 = b.select(b.icmp_signed("<", dst, as_i64(0)), none, b.trunc(dst, I32))
        src32 = b.select(b.icmp_signed("<", src, as_i64(0)), none, b.trunc(src, I32))
        with b.if_then(b.icmp_signed("<", src, as_i64(0))):
            b.call(_declare(self.module, "llvm.memset.p0.i64", [PTR, I8, I64, I1]),
                   [recv, ir.Constant(I8, 0), nbytes, ir.Constant(I1, 0)])
        comm = self.comm(b, cell)
        self.in_pieces(b, nbytes, as_i64(1), lambda offset, n: self.sendrecv(
            b, self.at(b, send, offset), dst32, self.at(b, recv, offset), src32, n, comm))
        self.end(b)

    def sendrecv(self, b, send, dst, recv, src, count, comm):
        byte, tag = self.handle(self.mpi.handles["byte"]), ir.Constant(I32, 7)
        status = ir.Constant(I64, self.mpi.status.ctypes.data).inttoptr(PTR)
        self.call(b, "MPI_Sendrecv", [send, count, byte, dst, tag, recv, count, byte, src, tag, comm, status])

    def dtype_and_op(self, b, dtype, op):
        return self.table_handle(b, self.mpi.handles["dtypes"], dtype), self.table_handle(b, self.mpi.handles["ops"], op)

    def itemsize(self, b, dtype):
        return self.table_value(b, [np.dtype(d).itemsize for d in DTYPES], dtype)

    @staticmethod
    def at(b, pointer, offset):
        return b.gep(pointer, [offset], source_etype=I8)


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


def _check_ranks_agree(what, groups):
    """Every process on the collectives' meshes runs `what` at this point (the job's processes
    when the groups hold them all; others take no part)."""
    mpi = _job["mpi"]
    members = sorted({p for group in groups for p in group})
    words = mpi.allgather_words(_fingerprint(what), f"the check that every rank runs {what}",
                                None if members == list(range(mpi.size)) else (tuple(members),))
    if len(set(words.tolist())) > 1:
        mine = words[members.index(mpi.rank)]
        differing = [members[i] for i, w in enumerate(words) if w != mine]
        raise RuntimeError(f"rank {mpi.rank} runs {what}, but rank(s) {differing} run something else at this "
                           f"point: every process must run the same collectives, on the same shapes, in the same order")


def program_collectives(jaxpr):
    """The specs of a jaxpr's mesh collectives over several processes, in program order
    (control-flow and call bodies included)."""
    from jaxlite.core.ir import sub_jaxprs
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive in _KINDS:
            spec = eqn_spec(eqn)
            if spec.group > 1:
                found.append(spec)
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
        what = f"jit program {name!r} ({signature}) with collectives: " + "; ".join(s.description for s in found)
        _check_ranks_agree(what, [group for spec in found for group in spec.groups])
