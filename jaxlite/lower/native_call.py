"""Compiled entry points as Python builtins: a call without ctypes in the way.

A ctypes call costs ~0.3-1 us (argument conversion, a slots array, releasing the GIL);
a builtin function whose C body is machine code costs ~0.06 us. One trampoline is
compiled per process:

    PyObject *trampoline(PyObject *self, PyObject *const *args, Py_ssize_t nargs)

registered with METH_FASTCALL, so `args` is already the array of object pointers an
entry point `void entry(ptr objects, i64 start, i64 stop)` reads its buffers from.
Each entry point gets its own builtin (`PyCFunction_NewEx`) whose `self` is a small
int64 numpy array: [entry address, argument count, index of the first output, index
after the last output, release the GIL?]. Before jumping, the trampoline checks the count and that every argument is
exactly a numpy ndarray (anything else raises TypeError: a wrong call never reaches
machine code that would read a foreign object as an array). After the call it clears
the WRITEABLE flag of the outputs, which become the buffers of immutable Arrays:
cheaper than numpy's `flags.writeable = False` per call.
"""
import ctypes
import sys
import threading

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from jaxlite.lower import llvm_target, program_cache
from jaxlite.lower.llvm_helpers import I8, I32, I64, PTR, VOID, emit_loop

# (not codegen's: codegen imports gemm, which imports this module)

DATA_OFFSET = 16          # offsetof(PyArrayObject_fields, data): right after PyObject_HEAD


def object_data(address):
    """The data pointer of the ndarray object at `address`."""
    return ctypes.c_void_p.from_address(address + DATA_OFFSET).value


def array_data(array):
    """An ndarray's data pointer, read from the object (~4x cheaper than .ctypes.data)."""
    return object_data(id(array))
_FLAGS_OFFSET = 64        # offsetof(PyArrayObject_fields, flags) in numpy's stable ABI
_TYPE_OFFSET = 8          # offsetof(PyObject, ob_type)
_WRITEABLE = 0x0400       # NPY_ARRAY_WRITEABLE
_METH_FASTCALL = 0x0080

def _check_flags_offset():
    probe = np.zeros(1)
    before = ctypes.c_int.from_address(id(probe) + _FLAGS_OFFSET).value
    probe.flags.writeable = False
    after = ctypes.c_int.from_address(id(probe) + _FLAGS_OFFSET).value
    return before & _WRITEABLE and not after & _WRITEABLE and before & ~_WRITEABLE == after


assert _check_flags_offset(), "numpy's array layout differs from the stable ABI the trampoline reads"


def _address_of(c_function):
    return ctypes.cast(c_function, ctypes.c_void_p).value


def _call_address(b, address, function_type, args):
    """Call the machine code at a fixed address of this process."""
    return b.call(b.inttoptr(ir.Constant(I64, address), function_type.as_pointer()), args)


# What the trampoline needs of this process (the C API's functions, the objects it compares
# with or returns) it reads from a table linked in under a name, not from constants in its
# code: so its machine code is the same in every process and is loaded from the kernel
# directory instead of compiled (program_cache.helper_module).
_PROCESS_TABLE = "jaxlite_trampoline_process_table"
_SET_ERROR, _SAVE_THREAD, _RESTORE_THREAD, _TYPE_ERROR, _NDARRAY, _NONE = range(6)


def _process_table():
    """The table's words, in the order of the indices above (kept alive by the caller)."""
    api = ctypes.pythonapi
    words = [_address_of(api.PyErr_SetString), _address_of(api.PyEval_SaveThread),
             _address_of(api.PyEval_RestoreThread), id(TypeError), id(np.ndarray), id(None)]
    return (ctypes.c_int64 * len(words))(*words)


def _process_word(b, module, index):
    table = module.globals.get(_PROCESS_TABLE)
    if table is None:
        table = ir.GlobalVariable(module, ir.ArrayType(I64, 6), _PROCESS_TABLE)
    return b.load(b.gep(table, [ir.Constant(I64, 0), ir.Constant(I64, index)], source_etype=table.value_type),
                  typ=I64)


def _call_process_function(b, module, index, function_type, args):
    """Call a C API function whose address is word `index` of the process table."""
    return b.call(b.inttoptr(_process_word(b, module, index), function_type.as_pointer()), args)


def _load_at(b, base, offset, typ):
    address = b.gep(base, [ir.Constant(I64, offset)], inbounds=True, source_etype=I8)
    return b.load(address, typ=typ)


def _global_text(module, name, text):
    data = bytearray(text.encode() + b"\0")
    constant = ir.Constant(ir.ArrayType(I8, len(data)), data)
    variable = ir.GlobalVariable(module, constant.type, name)
    variable.global_constant, variable.initializer, variable.linkage = True, constant, "internal"
    return variable


class _Emitter:
    """The trampoline's IR: check, (release the GIL,) call, seal the outputs, return None."""

    def __init__(self, module):
        self.module = module
        self.function = ir.Function(module, ir.FunctionType(PTR, [PTR, PTR, I64]), "jaxlite_trampoline")
        self.self_object, self.args, self.nargs = self.function.args

    def block(self, name):
        return ir.IRBuilder(self.function.append_basic_block(name))

    def argument(self, b, index):
        return b.load(b.gep(self.args, [index], source_etype=PTR), typ=PTR)

    def fail(self, text):
        b = self.block("fail")
        message = _global_text(self.module, f"message{len(self.module.globals)}", text)
        _call_process_function(b, self.module, _SET_ERROR, ir.FunctionType(VOID, [PTR, PTR]),
                               [b.inttoptr(_process_word(b, self.module, _TYPE_ERROR), PTR), message])
        b.ret(ir.Constant(PTR, None))
        return b.block

    def emit(self):
        b = self.block("entry")
        config = _load_at(b, self.self_object, DATA_OFFSET, PTR)
        entry, expected, first_output, end_output, release = (
            b.load(b.gep(config, [ir.Constant(I64, k)], source_etype=I64), typ=I64) for k in range(5))
        checked = self.block("count_ok")
        b.cbranch(b.icmp_signed("==", self.nargs, expected), checked.block,
                  self.fail("a compiled function's entry point got the wrong number of buffers"))
        not_array = self.fail("a compiled function's entry point takes numpy ndarrays only")

        b = checked

        def check_type(index):
            is_array = b.icmp_unsigned("==", _load_at(b, self.argument(b, index), _TYPE_OFFSET, I64),
                                       _process_word(b, self.module, _NDARRAY))
            ok = self.function.append_basic_block("is_array")
            b.cbranch(is_array, ok, not_array)
            b.position_at_end(ok)
        emit_loop(b, 0, self.nargs, check_type)
        releases = b.icmp_signed("!=", release, ir.Constant(I64, 0))
        state = b.select(releases, self._save_thread(b, releases), ir.Constant(PTR, None))
        entry_type = ir.FunctionType(VOID, [PTR, I64, I64])
        b.call(b.inttoptr(entry, entry_type.as_pointer()), [self.args, ir.Constant(I64, 0), ir.Constant(I64, 0)])
        b = self._restore_thread(b, releases, state)
        emit_loop(b, first_output, end_output, lambda index: self._seal(b, index))
        none = b.inttoptr(_process_word(b, self.module, _NONE), PTR)
        if sys.version_info < (3, 12):      # from 3.12 None is immortal: no count to keep
            b.store(b.add(b.load(none, typ=I64), ir.Constant(I64, 1)), none)     # Py_INCREF(None)
        b.ret(none)
        return self.function

    def _save_thread(self, b, releases):
        save, after = self.block("save_thread"), self.block("saved")
        b.cbranch(releases, save.block, after.block)
        state = _call_process_function(save, self.module, _SAVE_THREAD, ir.FunctionType(PTR, []), [])
        save.branch(after.block)
        phi = after.phi(PTR)
        phi.add_incoming(state, save.block)
        phi.add_incoming(ir.Constant(PTR, None), b.block)
        b.position_at_end(after.block)
        return phi

    def _restore_thread(self, b, releases, state):
        restore, after = self.block("restore_thread"), self.block("restored")
        b.cbranch(releases, restore.block, after.block)
        _call_process_function(restore, self.module, _RESTORE_THREAD, ir.FunctionType(VOID, [PTR]), [state])
        restore.branch(after.block)
        return after

    def _seal(self, step, index):
        flags = step.gep(self.argument(step, index), [ir.Constant(I64, _FLAGS_OFFSET)], inbounds=True,
                         source_etype=I8)
        step.store(step.and_(step.load(flags, typ=I32), ir.Constant(I32, ~_WRITEABLE)), flags)


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("method", ctypes.c_void_p),
                ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.restype = ctypes.py_object
_new_builtin.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]

_malloc = ctypes.CDLL(None).malloc
_malloc.restype, _malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]

_trampoline = None          # (compiled module, address of the method definition, process table)
_trampoline_lock = threading.Lock()


def _never_freed(data):
    """A copy of `data` in memory no Python object owns. A builtin reads its method
    definition even while the collector tears things down at exit, after module globals
    (and any ctypes buffer they held) are gone."""
    address = _malloc(len(data))
    ctypes.memmove(address, data, len(data))
    return address


def _trampoline_ir():
    module = ir.Module(name="jaxlite_trampoline")
    _Emitter(module).emit()
    return str(module)


def trampoline():
    """The trampoline's method definition, compiled (or loaded from the kernel directory) on
    first use. Its IR is plain SSA, so LLVM's IR passes are skipped: they changed nothing a
    call costs (measured: 6.3-6.9 us per jitted call either way) and took ~7 ms."""
    global _trampoline
    with _trampoline_lock:
        if _trampoline is None:
            table = _process_table()
            llvm.add_symbol(_PROCESS_TABLE, ctypes.addressof(table))
            # Keyed by name: its IR is the same in every process (printing it took ~5 ms).
            compiled = program_cache.helper_module(_trampoline_ir, "the call trampoline", name="trampoline")
            definition = _MethodDef(_never_freed(b"compiled_entry\0"), compiled.address("jaxlite_trampoline"),
                                    _METH_FASTCALL, None)
            _trampoline = (compiled, _never_freed(bytes(definition)), table)
        return _trampoline[1]


class _EntryConfig(np.ndarray):
    """The builtin's `self`: the int64 words the trampoline reads, and (as an attribute)
    the object owning the machine code, alive as long as the builtin is."""


def builtin_entry(address, nargs, outputs, release_gil, code_owner):
    """A builtin `f(*arrays)` running `void entry(ptr objects, i64, i64)` on its arguments:
    exactly `nargs` ndarrays, those in range `outputs` left read-only afterwards.
    `code_owner` (the compiled module and what its code reads) is kept alive by the builtin:
    a cache dropping the executable while another thread still calls it must not unmap
    running code or free its tables."""
    config = np.array([address, nargs, outputs.start, outputs.stop, int(release_gil)], np.int64).view(_EntryConfig)
    config.code_owner = code_owner
    return _new_builtin(trampoline(), config, None)
