"""The host target: one place that knows how to turn LLVM IR into machine code here.

Every compiled function in jaxlite goes through `compile_ir`. The facts behind the
choices below (host features, pass manager rules, vector width) were measured on
the development machine and are recorded in DESIGN.md.
"""
import ctypes.util
import functools
import re
import threading

import llvmlite.binding as llvm
from llvmlite import ir

_init_lock = threading.Lock()
_initialized = False


def _ensure_initialized():
    global _initialized
    with _init_lock:
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            # Python does not export libm's symbols to the JIT; kernels calling libm need them.
            llvm.load_library_permanently(ctypes.util.find_library("m"))
            _initialized = True


@functools.lru_cache(maxsize=None)
def host_cpu_name():
    _ensure_initialized()
    return llvm.get_host_cpu_name()


@functools.lru_cache(maxsize=None)
def host_cpu_features():
    """The feature string; the CPU *name* alone undersells the host (it hides AVX-512).
    Asked once: every target machine needs it, and the question costs ~0.4 ms."""
    _ensure_initialized()
    return llvm.get_host_cpu_features().flatten()


def host_has(feature):
    return ("+" + feature) in host_cpu_features().split(",")


def vector_width_bits():
    return 512 if host_has("avx512f") else 256


def new_target_machine(opt=3):
    """A fresh target machine: an MCJIT engine takes ownership of the one it is given."""
    _ensure_initialized()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=host_cpu_name(), features=host_cpu_features(), opt=opt,
        reloc="default", codemodel="jitdefault")


def function_attributes(bits=None):
    """Attributes every generated function carries so the vectorizer uses full-width registers.

    Without "min-legal-vector-width" the backend splits explicit 512-bit vector ops in two.
    """
    bits = bits or vector_width_bits()
    return {"prefer-vector-width": str(bits), "min-legal-vector-width": str(bits)}


def add_function_attributes(target, bits=None):
    """Put `function_attributes(bits)` on generated code.

    llvmlite.ir only accepts a fixed list of attribute names. Given an llvmlite.ir.Function,
    the string attributes go into its attribute set directly (they print as "key"="value");
    given a module or IR text, the IR text is returned with them on every definition.
    """
    if isinstance(target, ir.Function):
        for key, value in function_attributes(bits).items():
            set.add(target.attributes, '"%s"="%s"' % (key, value))
        return target
    attrs = " ".join(f'"{key}"="{value}"' for key, value in function_attributes(bits).items())
    return re.sub(r"^(define [^{\n]*?)(\s*\{)?$",
                  lambda line: f"{line.group(1)} {attrs}{line.group(2) or ''}",
                  str(target), flags=re.MULTILINE)


def optimize(module_ref, tm, speed_level=3):
    """Run the O3 pipeline once on a parsed module (a pass manager must never be rerun).

    Without loop unrolling, and interleaving only loops whose metadata asks for it
    (codegen's reductions): on the MLP step's elementwise module, unrolled and
    interleaved vector loops took 215 ms to optimize and 190 ms to compile into 19 KB;
    without, 90 + 50 ms into 8 KB, with kernels as fast or faster (layernorm 4096x1024
    1.55 -> 1.1 ms on one thread; gelu and the MLP step unchanged).
    """
    pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = False
    pto.loop_interleaving = False
    pass_builder = llvm.create_pass_builder(tm, pto)
    pass_builder.getModulePassManager().run(module_ref, pass_builder)


class CompiledModule:
    """Machine code for one LLVM module, alive as long as this object is.

    Code generation goes through an object file (`emit_object`), which the engine then
    loads: the same single codegen MCJIT would do, and the bytes are kept in
    `object_code` so the persistent cache (disk_cache.py) can store them.
    """

    def __init__(self, llvm_ir, optimize_ir=True):
        _ensure_initialized()
        self.module_ref = llvm.parse_assembly(str(llvm_ir))
        self.module_ref.verify()
        self._asm_tm = new_target_machine()
        self.module_ref.triple = self._asm_tm.triple
        self.module_ref.data_layout = str(self._asm_tm.target_data)
        if optimize_ir:
            optimize(self.module_ref, self._asm_tm)
        self.optimized_ir = str(self.module_ref)
        self.object_code = self._asm_tm.emit_object(self.module_ref)
        self.engine = _engine_for(self.object_code)

    def address(self, name):
        return self.engine.get_function_address(name)

    def asm(self):
        return self._asm_tm.emit_assembly(llvm.parse_assembly(self.optimized_ir))


class LoadedModule:
    """Machine code loaded back from an object file; `optimized_ir` only for `asm()`."""

    def __init__(self, object_code, optimized_ir):
        _ensure_initialized()
        self.object_code, self.optimized_ir = object_code, optimized_ir
        self.engine = _engine_for(object_code)

    def address(self, name):
        return self.engine.get_function_address(name)

    def asm(self):
        return new_target_machine().emit_assembly(llvm.parse_assembly(self.optimized_ir))


def _engine_for(object_code):
    """An MCJIT engine holding one object file (each engine owns its target machine)."""
    tm = new_target_machine()
    empty = llvm.parse_assembly("")
    empty.triple = tm.triple
    engine = llvm.create_mcjit_compiler(empty, tm)
    engine.add_object_file(llvm.ObjectFileRef.from_data(object_code))
    engine.finalize_object()
    return engine


def compile_ir(llvm_ir, optimize_ir=True):
    """Parse, verify, optimize and compile LLVM IR text (or an llvmlite.ir.Module)."""
    return CompiledModule(llvm_ir, optimize_ir)
