"""The host target: one place that knows how to turn LLVM IR into machine code here.

Every compiled function in jaxlite goes through `compile_ir`. The facts behind the
choices below (host features, pass manager rules, vector width) were measured on
the development machine and are recorded in DESIGN.md.

Compile time, measured on the first call of jit(grad(loss)) for the MLP training step
(784-512-512-10, batch 256, no disk cache; CPU time per phase, best of several runs on
the shared 2-core machine). The program is one module of 17 fused kernels and 8 GEMM
calls in 3 GEMM families (plain with a bias epilogue, A transposed, B transposed):

    phase                                        before       after
    tracing, autodiff, graph passes, fusion       ~20 ms      ~20 ms
    kernel module: Python IR + text                16 ms       16 ms
      LLVM O3 pipeline                            172 ms      103 ms   no unrolling or
      LLVM code generation                        143 ms       57 ms   interleaving (optimize)
    3 GEMM families: Python IR                     70 ms       40 ms   microkernels: one k
      IR text (llvmlite.ir printing)               85 ms       25 ms   step per iteration, one
      parse + verify                               30 ms        8 ms   per width for packed and
      LLVM code generation (not optimized)        261 ms      137 ms   unpacked A (gemm.py)
    engines, ctypes binding                        ~8 ms       ~8 ms
    total CPU                                     ~900 ms     ~460 ms

Before, all of it ran on one thread (~760 ms wall clock on a quiet machine, against
~240 ms for JAX). Now the kernel module and the GEMM families compile at once (see
"concurrent compilation" below): the wall clock approaches the Python work, which the
GIL serializes (~120 ms), plus LLVM's ~300 ms spread over both cores.

The CNN training step (benchmarks/run.py; 12 kernels, 8 GEMM calls in 5 families)
showed the limit of one module a program: alone on one core, its kernel module took
~240 ms of LLVM (O3 ~160, code generation ~75), and for ~180 ms after the GEMM
families were done the other core waited. A big module is now cut in pieces that
compile at once (split_module, compile_pieces): CPU time per phase, one run alone,
after a warm-up jit (the first jit of a process also compiles jaxlite's bytecode):

    main thread: tracing, passes, fusion ~30 ms; kernel IR + text ~35 ms
    kernel module, LLVM: 240 ms, in two pieces of ~120 ms
    5 GEMM families: Python IR + text ~17 ms each, LLVM code generation 37-65 ms each
    measuring 5 small GEMMs' plans (autotune.py) ~50 ms; first run ~15 ms"""
import ctypes
import functools
import os
import threading

import llvmlite.binding as llvm
from llvmlite import ir
from llvmlite.binding import ffi

from jaxlite.lower.llvm_helpers import F16, F32, F64, I32, call_intrinsic

_init_lock = threading.Lock()
_initialized = False


def _ensure_initialized():
    global _initialized
    with _init_lock:
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            # Python does not export libm's symbols to the JIT; kernels calling libm need them.
            _load_libm()
            _initialized = True


def _load_libm():
    """glibc's libm by its name (find_library runs ldconfig: ~2 ms, and importing it ~3 ms),
    else where it is found."""
    try:
        llvm.load_library_permanently("libm.so.6")
    except RuntimeError:
        import ctypes.util
        llvm.load_library_permanently(ctypes.util.find_library("m"))


# LLVM turns double -> half conversions into calls of compiler-rt's __truncdfhf2 (also
# when its optimizer merges a double -> float -> half chain), which this process need
# not have: an unresolved call jumps to address 0. So the JIT gets its own, rounding
# correctly once: double -> float rounded to odd (exact sticky bit), then float -> half
# (one F16C instruction).
def _truncdfhf2_module():
    """The module defining jaxlite_truncdfhf2: double -> float toward zero with the sticky
    bit in the last place (rounding to odd), then float -> half rounded to nearest."""
    module = ir.Module("jaxlite_runtime_helpers")
    function = ir.Function(module, ir.FunctionType(F16, [F64]), "jaxlite_truncdfhf2")
    (x,) = function.args
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    near = builder.fptrunc(x, F32)
    wide = builder.fpext(near, F64)
    bits = builder.bitcast(near, I32)
    over = builder.fcmp_ordered(">", call_intrinsic(builder, "llvm.fabs.f64", F64, [wide]),
                                call_intrinsic(builder, "llvm.fabs.f64", F64, [x]))
    toward_zero = builder.select(over, builder.sub(bits, ir.Constant(I32, 1)), bits)
    inexact = builder.fcmp_unordered("!=", wide, x)
    rounded = builder.select(inexact, builder.or_(toward_zero, ir.Constant(I32, 1)), toward_zero)
    builder.ret(builder.fptrunc(builder.bitcast(rounded, F32), F16))
    return module


_helpers = None     # the engine holding the helpers' code: alive for the whole process
_TRUNCDFHF2 = b"__truncdfhf2"


def _compile_runtime_helpers():
    """__truncdfhf2 (~5 ms to compile)."""
    global _helpers
    module_ref = llvm.parse_assembly(str(_truncdfhf2_module()))
    # (Under the initialization lock: new_target_machine would wait for it.)
    machine = llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), codemodel="jitdefault")
    _helpers = llvm.create_mcjit_compiler(module_ref, machine)
    _helpers.finalize_object()
    llvm.add_symbol(_TRUNCDFHF2.decode(), _helpers.get_function_address("jaxlite_truncdfhf2"))


def _bind_lapack():
    """numpy's LAPACK and BLAS under lapack.py's names (at LLVM's initialization, importing
    lapack and binding its routines took ~1 ms of every process)."""
    from jaxlite.lower import lapack
    lapack.register_symbols()


# lapack.SYMBOL_PREFIX, which every name it binds starts with (a test checks they agree).
_NUMPY_LAPACK_PREFIX = b"jaxlite_numpy_"

# Symbols the JIT is given only once linked code names them: a name (or a prefix of the
# names) in the object code -> what defines them, run once, before that code is linked
# (compiled or loaded from the disk cache).
_DEFINED_ON_DEMAND = {_TRUNCDFHF2: _compile_runtime_helpers, _NUMPY_LAPACK_PREFIX: _bind_lapack}


def _define_symbols_named_in(objects):
    with _init_lock:
        for name in [name for name in _DEFINED_ON_DEMAND if any(name in code for code in objects)]:
            _DEFINED_ON_DEMAND[name]()
            del _DEFINED_ON_DEMAND[name]       # (after it worked: a failure is retried by the next link)


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
    "denormal-fp-math"="dynamic" tells LLVM the subnormal mode is set at run time (the entry
    points set FTZ/DAZ; libm's bit tests ignore it): assuming IEEE subnormals it turned integer
    tests of a float's bits (frexp's zero test) into float compares, which DAZ answers for
    subnormals as for zeros; assuming flushed ones it would drop the explicit flushes before
    libm calls.
    """
    bits = bits or vector_width_bits()
    return {"prefer-vector-width": str(bits), "min-legal-vector-width": str(bits),
            "denormal-fp-math": "dynamic,dynamic"}


def add_function_attributes(target, bits=None):
    """Put `function_attributes(bits)` on generated code.

    llvmlite.ir only accepts a fixed list of attribute names. Given an llvmlite.ir.Function,
    the string attributes go into its attribute set directly (they print as "key"="value");
    given a module, the module's IR text is returned with them on every definition.
    """
    functions = [target] if isinstance(target, ir.Function) else [
        f for f in target.functions if not f.is_declaration]
    for function in functions:
        for key, value in function_attributes(bits).items():
            set.add(function.attributes, '"%s"="%s"' % (key, value))
    return target if isinstance(target, ir.Function) else str(target)


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
    _outside_llvmlite_lock("LLVMPY_RunNewModulePassManager")(
        pass_builder.getModulePassManager(), module_ref, pass_builder)


# ---------------------------------------------------------------- concurrent compilation
# llvmlite serializes every call into LLVM with one process-wide lock, while LLVM itself
# lets threads work at once on modules of distinct LLVMContexts with distinct target
# machines. So each module is parsed into a context of its own, and the two long calls,
# the optimization pipeline and code generation, go to llvmlite's ctypes functions
# directly (same signatures, without the lock; ctypes releases the GIL): compilations
# on two threads then use both cores. The short calls keep the lock.

def _outside_llvmlite_lock(name):
    return getattr(ffi.lib, name)._cfn


def emit_object(tm, module_ref):
    """`tm.emit_object(module_ref)` without llvmlite's lock (module_ref in its own context)."""
    with ffi.OutputString() as error:
        buffer = _outside_llvmlite_lock("LLVMPY_TargetMachineEmitToMemory")(tm, module_ref, 1, error)
        if not buffer:
            raise RuntimeError(str(error))
    try:
        return ctypes.string_at(ffi.lib.LLVMPY_GetBufferStart(buffer), ffi.lib.LLVMPY_GetBufferSize(buffer))
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)


_compile_pool = None
_compile_pool_lock = threading.Lock()
# More threads than cores: a task may wait for another one compiling the same GEMM family.
_COMPILE_THREADS = 8


def in_background(function, *args):
    """A future of `function(*args)`, run by a compile thread while the caller goes on.
    The function must not wait for other background tasks (the pool is bounded)."""
    import concurrent.futures       # (here: a process loading its programs from the disk cache needs none)
    global _compile_pool
    with _compile_pool_lock:
        if _compile_pool is None:
            _compile_pool = concurrent.futures.ThreadPoolExecutor(_COMPILE_THREADS, "jaxlite-compile")
    return _compile_pool.submit(function, *args)


def compile_once(build):
    """Cache `build(*key)` per key, like functools.lru_cache, except that threads asking
    for a key being built wait for that build instead of compiling it again (and so
    never get code that another compile of the same key replaces, and frees)."""
    futures, lock = {}, threading.Lock()

    @functools.wraps(build)
    def cached(*key):
        import concurrent.futures
        with lock:
            future = futures.get(key)
            is_builder = future is None
            if is_builder:
                future = futures[key] = concurrent.futures.Future()
        if is_builder:
            try:
                future.set_result(build(*key))
            except BaseException as err:
                with lock:
                    del futures[key]        # a later call tries again
                future.set_exception(err)
        return future.result()
    return cached


# ---------------------------------------------------------------- modules in pieces
# A program's kernels are one module; LLVM's passes and code generation of a module run
# on one thread, so a big program would keep one core busy while the other waits.
# Cut in pieces, its kernels compile on both cores (compile_pieces) and link in one
# engine. MCJIT resolves a call into another object only while loading the caller's
# object (when finalizing, such a call is left jumping to address 0, measured with
# LLVM 22): so only leaf functions move, and their objects load first.

# Fewer instructions than this (about three fused kernels) compile in ~30 ms: not worth
# a second module's fixed costs (~2 ms) and the lost inlining of kernels into entries.
SPLIT_MIN_INSTRUCTIONS = 400


def split_module(module, pieces=None):
    """The IR texts of `module` cut into up to `pieces` (default: one per core) modules
    of about as many instructions each: the first keeps the exported functions and those
    calling functions defined here; the internal leaves go where the fewest instructions
    are. Moved functions become exported (the first piece calls them)."""
    pieces = pieces or os.cpu_count() or 1
    defined = [f for f in module.functions if f.blocks]
    sizes = {f.name: sum(len(block.instructions) for block in f.blocks) for f in defined}
    names = set(sizes)
    movable = [f for f in defined if f.linkage == "internal" and _is_leaf(f, names)]
    loads = [sum(sizes.values()) - sum(sizes[f.name] for f in movable)] + [0] * (pieces - 1)
    groups = [set() for _ in range(pieces)]
    for function in sorted(movable, key=lambda f: sizes[f.name], reverse=True):
        lightest = loads.index(min(loads))
        groups[lightest].add(function)
        loads[lightest] += sizes[function.name]
    moved = [group for group in groups[1:] if group]
    if not moved or sum(sizes.values()) < SPLIT_MIN_INSTRUCTIONS:
        return [str(module)]
    for function in set().union(*moved):
        function.linkage = ""
    first = set(defined).difference(*moved)
    return [_printed_with_only(module, defined, keep) for keep in [first] + moved]


def _is_leaf(function, defined):
    return not any(isinstance(instruction, ir.CallInstr) and getattr(instruction.callee, "name", None) in defined
                   for block in function.blocks for instruction in block.instructions)


def _printed_with_only(module, defined, keep):
    """The text of `module` with the functions of `defined` not in `keep` declared only."""
    dropped = [(f, f.blocks, f.linkage) for f in defined if f not in keep]
    for function, _, linkage in dropped:
        function.blocks = []
        if linkage in ("internal", "private"):     # (a declaration cannot be internal)
            function.linkage = ""
    try:
        return str(module)
    finally:
        for function, blocks, linkage in dropped:
            function.blocks, function.linkage = blocks, linkage


class CompiledModule:
    """Machine code for one or more LLVM modules (the pieces of one program, which call
    each other's functions), loaded into one engine and alive as long as this object is.

    Code generation goes through object files (`emit_object`), which the engine then
    loads and links: the same single codegen MCJIT would do, and the bytes are kept in
    `objects` so the persistent cache (disk_cache.py) can store them and load them back
    here. `optimized_pieces` is the IR each object was compiled from, for `asm()`.
    """

    def __init__(self, optimized_pieces, objects, before_loading=None):
        _ensure_initialized()
        self.optimized_pieces, self.objects = tuple(optimized_pieces), tuple(objects)
        if before_loading is not None:      # (what must exist before the code links, e.g. symbols)
            before_loading()
        self.engine = _engine_for(self.objects)

    @property
    def optimized_ir(self):
        return "\n".join(self.optimized_pieces)

    def address(self, name):
        return self.engine.get_function_address(name)

    def asm(self):
        return "\n".join(new_target_machine().emit_assembly(llvm.parse_assembly(text))
                         for text in self.optimized_pieces)


# The code generator's optimization level (instruction selection, scheduling, register
# allocation), for every module. Level 0 (fast instruction selection and register
# allocation, no machine passes) generates code 2.5-4x faster, but its code runs 2-4x
# slower; levels 1 and 2 cost what 3 does. As a first tier (level 0, then level 3 in the
# background for hot programs) it would save first calls little, CPU ms at level 3 / 0,
# code generation in parentheses (benchmarks/bench_codegen_levels.py, medians of 3):
#   a 40-function session 799 (177) / 669 (73), a small MLP's jit(grad) 112 (28) / 94 (9),
#   the CNN step of run.py 371 (75) / 370 (16); steady state, ms per call: the CNN step
#   54 / 113, matmul 1024 30 / 83, the MLP step 15.5 / 43, value_and_grad MLP 2.0 / 7.8;
# the LLVM IR pipeline (about twice code generation's time here) is the same at both, and
# every hot program would generate its code twice. So code is generated once, at level 3.
CODEGEN_LEVEL = 3


def compile_object(llvm_ir, optimize_ir=True):
    """(The IR the code is made from, object code) of one module: parsed into a context of
    its own, verified, optimized, compiled (both outside llvmlite's lock)."""
    return _object_of(*_parsed(llvm_ir), optimize_ir)


def _parsed(llvm_ir):
    _ensure_initialized()
    text = str(llvm_ir)
    module_ref = llvm.parse_assembly(text, llvm.create_context())
    module_ref.verify()
    tm = new_target_machine(CODEGEN_LEVEL)
    module_ref.triple = tm.triple
    module_ref.data_layout = str(tm.target_data)
    return text, module_ref, tm


def _object_of(text, module_ref, tm, optimize_ir=True, speed_level=3):
    if optimize_ir:
        optimize(module_ref, tm, speed_level)
    # Unoptimized, the IR is the input text: printing the module again costs ~4 ms
    # per GEMM family.
    return (str(module_ref) if optimize_ir else text), emit_object(tm, module_ref)


def _engine_for(objects):
    """An MCJIT engine holding object files, linked to each other: the last calls the
    others (see split_module). Each engine owns its target machine."""
    _define_symbols_named_in(objects)
    tm = new_target_machine()
    empty = llvm.parse_assembly("")
    empty.triple = tm.triple
    engine = llvm.create_mcjit_compiler(empty, tm)
    for object_code in reversed(objects):
        engine.add_object_file(llvm.ObjectFileRef.from_data(object_code))
    engine.finalize_object()
    return engine


def compile_ir(llvm_ir, optimize_ir=True, before_loading=None):
    """Parse, verify, optimize and compile LLVM IR text (or an llvmlite.ir.Module);
    `before_loading()` runs before the machine code is loaded and linked."""
    optimized, object_code = compile_object(llvm_ir, optimize_ir)
    return CompiledModule([optimized], [object_code], before_loading)


# The pipeline's speed level for programs' kernel modules. Level 1 vectorizes as level 3
# does (the options in `optimize` ask for it) but simplifies less; measured on the
# kernel modules of benchmarks/run.py, CPU time of LLVM (optimization + code generation):
#   gelu 31 -> 26 ms, softmax 27 -> 25, layernorm 36 -> 31, the MLP step's two pieces
#   40 + 53 -> 32 + 43, fori_loop 10 -> 10: the same object code, byte for byte;
#   the CNN step's pieces 80 + 137 -> 74 + 97 ms: three kernels' code differs by a few
#   instructions, and the step runs as fast (13.6 / 13.7 ms, medians of 5 processes).
KERNEL_SPEED_LEVEL = 1


def compile_pieces(pieces, before_loading=None):
    """Start compiling the pieces of a module cut by `split_module`, at once on the compile
    threads; returns a function that waits for them and gives the CompiledModule (call it
    outside the compile threads)."""
    # Parsed here: a compile thread making these short calls waits for the GIL at each,
    # behind the threads generating GEMM IR (measured: ~100 ms before optimizing began).
    futures = [in_background(_object_of, *_parsed(piece), True, KERNEL_SPEED_LEVEL) for piece in pieces]

    def finish():
        optimized, objects = zip(*(future.result() for future in futures))
        return CompiledModule(optimized, objects, before_loading)
    return finish
