"""What the persistent cache stores: whole compiled programs, and GEMM kernels.

Where compile time goes (MLP training step, 784-512-512-10, batch 256, measured):
tracing ~10 ms; graph passes and fusion ~130 ms; emitting the kernels' LLVM IR and
compiling it ~300 ms; the eight GEMM kernels ~1.8 s (a fifth of it printing their
LLVM IR, the rest LLVM). A key on the optimized IR or the LLVM IR text would make a
fresh process pay for the passes and for printing IR before it could even look, so
the program key is taken right after tracing:

    program key = environment digest (disk_cache.py: target, versions, jaxlite's
                  source) + the canonical text of the traced jaxpr (structure,
                  avals, params, literal and constant values) + the function name
                  + the options that change lowering (x64, autotune).

Everything after tracing is a deterministic function of those (the source digest
stands for the passes, fusion and code generators), so a hit skips it all: the
entry holds the planned executable (optimized jaxpr, steps, memory plan) and the
object code of its kernel module. Measured on the MLP step in a fresh process
(benchmarks/bench_compile_cache.py): cold ~1.65 s; warm ~23 ms (trace ~4 ms, key,
reads and unpickling ~5 ms, one engine per loaded object ~1-1.5 ms each, nine here). GEMM kernels live in entries of their own, keyed
by their specification, so programs share them. A jaxpr that has no canonical text
(a parameter holding a Python function, say) is compiled without the disk cache.
"""
import dataclasses
import enum
import functools
import importlib
import io
import logging
import pickle
import sys

import numpy as np

from jaxlite.core.abstract import ShapedArray
from jaxlite.core.config import config
from jaxlite.core.ir import ClosedJaxpr, Jaxpr, Literal, Var
from jaxlite.core.primitive import Primitive
from jaxlite.lower import disk_cache, llvm_target

logger = logging.getLogger("jaxlite.jit")


class Uncacheable(Exception):
    """The program has no canonical text: compile it without the disk cache."""


# ---------------------------------------------------------------- canonical text of a jaxpr

def canonical_text(closed):
    """A text that determines `closed` up to variable naming (variables numbered in order)."""
    out = []
    _Canonicalizer(out).closed(closed)
    return "\n".join(out).encode()


class _Canonicalizer:
    def __init__(self, out):
        self.out, self.numbers = out, {}

    def closed(self, closed):
        consts = " ".join(_array_text(np.asarray(c)) for c in closed.consts)
        self.out.append(f"consts {consts}")
        self.jaxpr(closed.jaxpr)

    def jaxpr(self, jaxpr):
        self.out.append("{ " + " ".join(self.var(v) for v in jaxpr.constvars)
                        + " ; " + " ".join(self.var(v) for v in jaxpr.invars))
        for eqn in jaxpr.eqns:
            params = " ".join(f"{k}={self.value(v)}" for k, v in sorted(eqn.params.items()))
            outs = " ".join(self.var(v) for v in eqn.outputs)
            ins = " ".join(self.var(v) for v in eqn.inputs)
            self.out.append(f"{outs} = {eqn.primitive.name}[{params}] {ins}")
        self.out.append("} " + " ".join(self.var(v) for v in jaxpr.outvars))

    def var(self, v):
        if isinstance(v, Literal):
            return f"lit({_array_text(np.asarray(v.val))}:{_aval_text(v.aval)})"
        if v not in self.numbers:
            self.numbers[v] = len(self.numbers)
            return f"v{self.numbers[v]}:{_aval_text(v.aval)}"
        return f"v{self.numbers[v]}"

    def value(self, x):
        """Parameters: only types whose text says everything about them."""
        if x is None or isinstance(x, (bool, int, float, complex, str, bytes)):
            return f"{type(x).__name__}:{x!r}"
        if isinstance(x, (tuple, list)):
            kind = type(x).__qualname__
            return f"{kind}(" + ",".join(self.value(v) for v in x) + ")"
        if isinstance(x, dict):
            return "dict(" + ",".join(sorted(f"{self.value(k)}:{self.value(v)}" for k, v in x.items())) + ")"
        if isinstance(x, enum.Enum):
            return f"{type(x).__module__}.{type(x).__qualname__}.{x.name}"
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            fields = ",".join(f"{f.name}={self.value(getattr(x, f.name))}" for f in dataclasses.fields(x))
            return f"{type(x).__module__}.{type(x).__qualname__}({fields})"
        if isinstance(x, np.dtype):
            return f"dtype:{x.str}:{x.name}"
        if isinstance(x, Primitive):      # (precision.int8's straight_through names its product)
            location = _primitive_locations().get(id(x))
            if location is not None:        # where it is defined, as the pickler stores it
                return "primitive:" + ".".join(location)
        if isinstance(x, (np.ndarray, np.generic)):
            return _array_text(np.asarray(x))
        if isinstance(x, ShapedArray):
            return _aval_text(x)
        if isinstance(x, ClosedJaxpr):
            inner = []
            _Canonicalizer(inner).closed(x)
            return "closed[" + "\n".join(inner) + "]"
        if isinstance(x, Jaxpr):
            inner = []
            _Canonicalizer(inner).jaxpr(x)
            return "jaxpr[" + "\n".join(inner) + "]"
        raise Uncacheable(f"parameter of type {type(x).__name__} has no canonical text")


def _aval_text(aval):
    return f"{aval.dtype.name}{list(aval.shape)}{'w' if aval.weak_type else ''}"


def _array_text(value):
    digest = disk_cache.digest(np.ascontiguousarray(value).tobytes()).hexdigest()
    return f"array({value.dtype.str}:{value.dtype.name},{value.shape},{digest})"


def program_key(closed, name, donated=()):
    options = (f"x64={config.jax_enable_x64} autotune={config.jaxlite_autotune}"
               f" autotune_max_flops={config.jaxlite_autotune_max_flops} donated={tuple(donated)}")
    return disk_cache.make_key("program", canonical_text(closed), name.encode(), options.encode())


# ---------------------------------------------------------------- pickling

@functools.lru_cache(maxsize=None)
def _pickler_type():
    """The pickler, made when something is first stored: a process that only loads entries
    never imports cloudpickle (a payload holding a function imports it as it is unpickled)."""
    import cloudpickle

    class Pickler(cloudpickle.CloudPickler):
        """Primitives are stored by where they are defined: rule tables key on their identity."""

        def __init__(self, file):
            super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
            self.locations = None

        def persistent_id(self, obj):
            if not isinstance(obj, Primitive):
                return None
            if self.locations is None:
                self.locations = _primitive_locations()
            if id(obj) not in self.locations:
                raise pickle.PicklingError(f"primitive {obj.name} is not a module attribute")
            return ("primitive",) + self.locations[id(obj)]
    return Pickler


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid):
        _, module, attribute = pid
        return getattr(importlib.import_module(module), attribute)


def _primitive_locations():
    """id(primitive) -> (module, attribute) for every primitive in jaxlite's modules."""
    locations = {}
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("jaxlite.") and module is not None:
            for attribute, value in list(vars(module).items()):
                if isinstance(value, Primitive):
                    locations.setdefault(id(value), (module_name, attribute))
    return locations


def dumps(value):
    buffer = io.BytesIO()
    _pickler_type()(buffer).dump(value)
    return buffer.getvalue()


def loads(payload):
    return _Unpickler(io.BytesIO(payload)).load()


def load_or_build(key, what, build, save, restore, root=None):
    """`restore(stored)` from the entry under `key` in `root` (default: the compilation cache
    directory), else `build()` and store `save(value)`; `what` names the entry in log messages."""
    payload = disk_cache.read(key, root)
    if payload is not None:
        try:
            value = restore(loads(payload))
            disk_cache.counts_of(root)["hits"] += 1
            level = logging.WARNING if config.jax_log_compiles else logging.DEBUG
            logger.log(level, "Persistent compilation cache hit for %s (%s)", what, key)
            return value
        except Exception as err:     # a verified entry that still fails to load: never fatal
            disk_cache.reject(key, f"cannot be restored ({type(err).__name__}: {err})", root)
    value = build()
    try:
        payload = dumps(save(value))
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as err:
        logger.debug("jaxlite: %s not stored in the compilation cache: %s", key, err)
        return value
    disk_cache.write(key, payload, root)
    return value


# ---------------------------------------------------------------- programs

# Executable attributes tied to this process's machine code; rebuilt on load.
_BOUND_ATTRIBUTES = ("module", "llvm_ir", "compiled", "_runners", "_slot_array", "_bridge", "_tail",
                     "_kept_workspace", "_native")


def compile_cached(closed, name, compile_program, donated=()):
    """`compile_program(closed, name)`, through the disk cache when one is configured
    (donation changes the code: it is part of the key)."""
    if disk_cache.directory() is None:
        return compile_program(closed, name)
    try:
        key = program_key(closed, name, donated)
    except Uncacheable as err:
        logger.debug("jaxlite: %s compiled without the disk cache: %s", name, err)
        return compile_program(closed, name)
    return load_or_build(key, name, lambda: compile_program(closed, name), _save_executable, _restore_executable)


def _save_executable(executable):
    state = {k: v for k, v in vars(executable).items() if k not in _BOUND_ATTRIBUTES}
    compiled = executable.compiled
    return {"state": state, "code": _save_code(compiled) if compiled is not None else None}


def _restore_executable(stored):
    from jaxlite.lower.runtime import Executable
    executable = Executable.__new__(Executable)
    vars(executable).update(stored["state"])
    executable.llvm_ir = "; loaded from the persistent compilation cache"
    code = stored["code"]
    if executable.uses_pool:
        from jaxlite.lower import native_pool
        native_pool.pool()          # links jaxlite_pool_run, which the code calls
    executable.compiled = _restore_code(code) if code is not None else None
    executable._bind_entries()
    return executable


def _save_code(compiled):
    """Object code to run (a module's pieces), and the optimized IR text of each for `asm()`
    (parsed only if asked)."""
    return {"objects": compiled.objects, "optimized_pieces": compiled.optimized_pieces}


def _restore_code(code):
    return llvm_target.CompiledModule(code["optimized_pieces"], code["objects"])


# ---------------------------------------------------------------- helpers

def helper_module(llvm_ir, what, name=None):
    """Machine code for a small generated helper (the call trampoline, the worker pool, its
    tasks), through the kernel directory (keyed by the IR; disk_cache.kernel_directory): a
    fresh process loads it instead of spending ~5-15 ms compiling. Their IR is written in SSA
    form with nothing for LLVM's IR passes to improve, so only the backend runs (the pool:
    29 -> 14 ms; the trampoline 15 -> 8 ms). `name`: the helper's key instead of its IR, for IR
    that depends on nothing but jaxlite's source (the environment digest covers it); then
    `llvm_ir` may be a function making the IR, called only to compile it."""
    build = lambda: llvm_target.compile_ir(llvm_ir() if callable(llvm_ir) else llvm_ir, optimize_ir=False)
    root = disk_cache.kernel_directory()
    if root is None:
        return build()
    key = disk_cache.make_key("helper", (name if name is not None else str(llvm_ir)).encode())
    return load_or_build(key, what, build, _save_code, _restore_code, root)


# ---------------------------------------------------------------- GEMM kernels

def gemm_family(family, build, entry_name):
    """The CompiledFamily for a GemmFamily (entry point `entry_name`): `build(family)`,
    through the kernel directory (a family serves every shape: it is jaxlite's own code)."""
    root = disk_cache.kernel_directory()
    if root is None:
        return build(family)
    key = disk_cache.make_key("gemm", gemm_family_text(family).encode())
    return load_or_build(key, f"gemm {gemm_family_text(family)}", lambda: build(family), _save_gemm,
                         lambda stored: _restore_gemm(family, entry_name, stored), root)


def gemm_family_text(family):
    epilogue, product = family.epilogue, family.product
    step = product.multiply_add
    return (f"dtype={family.dtype} trans={family.trans_a},{family.trans_b} "
            f"epilogue={(epilogue.name, epilogue.arg_kinds) if epilogue else None} "
            f"vector_bits={family.vector_bits} product={product.name},{product.dtype},{product.group},"
            f"{step.__module__}.{step.__qualname__}" + (" packed_b" if family.packed_b else "")
            + "".join(f" {side}_source={source.name}" for side, source in (("a", family.a_source), ("b", family.b_source))
                      if source))


class _EmitterFacts:
    """What a CompiledFamily reads from the emitter that generated it."""

    def __init__(self, name):
        self.name = name


def _save_gemm(native):
    return {"blocking": native.blocking, "code": _save_code(native._compiled)}


def _restore_gemm(family, entry_name, stored):
    from jaxlite.lower.gemm import CompiledFamily
    return CompiledFamily(family, stored["blocking"], _EmitterFacts(entry_name), _restore_code(stored["code"]))


# ---------------------------------------------------------------- native routines

# Routine attributes tied to this process's machine code; rebuilt on load.
_ROUTINE_BOUND = ("compiled", "address", "ranged_address")


def native_routine(spec):
    """The Routine of a native_routines spec: `spec.build()`, through the disk cache when one
    is configured (keyed by the spec, a dataclass of static shapes and dtypes)."""
    if disk_cache.directory() is None:
        return spec.build()
    key = disk_cache.make_key("routine", repr(spec).encode())
    return load_or_build(key, f"routine {spec!r}", spec.build, _save_routine, _restore_routine)


def _save_routine(routine):
    state = {k: v for k, v in vars(routine).items() if k not in _ROUTINE_BOUND}
    return {"state": state, "code": _save_code(routine.compiled)}


def _restore_routine(stored):
    from jaxlite.lower.native_routines import Routine
    routine = Routine.__new__(Routine)
    vars(routine).update(stored["state"])
    routine.bind(_restore_code(stored["code"]))
    return routine
