"""Ahead-of-time stages, as JAX names them: `jit(f).trace(*args)` -> Traced,
`.lower()` -> Lowered, `.compile()` -> Compiled.

Traced holds the ClosedJaxpr of one argument signature; Lowered the optimized
jaxpr and its fused kernels (jaxlite's own plan stands where JAX has StableHLO);
Compiled the machine code, callable with arguments of exactly the compiled types.
Arguments may be arrays or `ShapeDtypeStruct`s: only their types matter here.
"""
import collections

import numpy as np

from jaxlite.core import hi_lowering
from jaxlite.core.abstract import ShapeDtypeStruct, is_hi
from jaxlite.core.array import Array
from jaxlite.core.extended import physicalize, wrap_physical
from jaxlite.core.staging import _aval_of_spec
from jaxlite.core.tree_util import tree_flatten, tree_unflatten
from jaxlite.transforms.dispatch import numpy_argument

__all__ = ["ArgInfo", "Compiled", "Lowered", "Traced", "Wrapped"]


def _local_sharding():
    """Where every array of a one-process program lives: this process's device."""
    from jaxlite._sharding import SingleDeviceSharding, local_device
    return SingleDeviceSharding(local_device())


CompiledMemoryStats = collections.namedtuple(
    "CompiledMemoryStats", ["argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes",
                            "alias_size_in_bytes", "generated_code_size_in_bytes"])


def _nbytes(avals):
    return sum(a.size * a.dtype.itemsize for a in avals)


class ArgInfo:
    """One flat argument of a staged computation: its abstract value and whether it is donated."""

    def __init__(self, aval, donated):
        self._aval, self.donated = aval, donated

    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)

    def __repr__(self):
        return f"ArgInfo(_aval={self._aval!r}, donated={self.donated})"


class Wrapped:
    """What `jit` returns: callable, with `.trace(*args)` and `.lower(*args)`."""


class _Stage:
    """What every stage knows: the argument tree, its types, and the output types."""

    def __init__(self, entry, in_tree, name):
        self._entry, self.in_tree, self._name = entry, in_tree, name

    out_tree = property(lambda self: self._entry.out_tree)
    in_avals = property(lambda self: self._user_avals())
    donate_argnums = property(lambda self: tuple(i for i, d in enumerate(self._entry.donated) if d))

    def _user_avals(self):
        """The avals of the caller's flat arguments (closed-over tracers excluded)."""
        return list(self._entry.closed.in_avals[len(self._entry.extra_args):])

    @property
    def args_info(self):
        donated = self._entry.donated or (False,) * len(self.in_avals)
        return tree_unflatten(self.in_tree, [ArgInfo(a, d) for a, d in zip(self.in_avals, donated)])

    @property
    def out_info(self):
        shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in self._entry.closed.out_avals]
        return tree_unflatten(self.out_tree, shapes)

    out_avals = property(lambda self: list(self._entry.closed.out_avals))
    fun_name = property(lambda self: self._name)


class Traced(_Stage):
    """`jit(f).trace(*args)`: the jaxpr of f for these argument types."""

    jaxpr = property(lambda self: self._entry.closed)

    def lower(self):
        from jaxlite.lower import pipeline
        lowered = pipeline.lower_jaxpr(physicalize(hi_lowering.lower_hi_jaxpr(self._entry.closed)))
        return Lowered(self._entry, self.in_tree, self._name, lowered)


class Lowered(_Stage):
    """The optimized jaxpr and the kernels it fuses into, ready to compile."""

    def __init__(self, entry, in_tree, name, program):
        super().__init__(entry, in_tree, name)
        self.program = program

    def as_text(self, dialect=None, debug_info=False):
        return self.program.as_text()

    def compiler_ir(self, dialect=None):
        return self.program

    def cost_analysis(self):
        """flops and bytes accessed, summed over the planned steps."""
        from jaxlite.lower import pipeline
        return pipeline.cost_analysis(self.program)

    def compile(self, compiler_options=None):
        from jaxlite.lower import pipeline
        from jaxlite.transforms import jit
        jit._stats["compiles"] += 1
        executable = pipeline.compile_program(self.program, self._name)
        return Compiled(self._entry, self.in_tree, self._name, self.program, executable)


class Compiled(_Stage):
    """Machine code for one signature: `as_text()` is the LLVM IR (headed by the GEMM
    calls' plans), `asm()` the assembly; calling it runs it."""

    def __init__(self, entry, in_tree, name, program, executable):
        super().__init__(entry, in_tree, name)
        self.program, self.executable = program, executable

    def as_text(self):
        """The LLVM IR, after a comment per GEMM call naming the plan chosen for it."""
        compiled = self.executable.compiled
        text = compiled.optimized_ir if compiled is not None else self.executable.llvm_ir
        plans = "".join(f"; {line}\n" for line in self.executable.describe_gemm_plans())
        return plans + text

    def asm(self):
        return self.executable.asm()

    runtime_executable = asm

    def cost_analysis(self):
        from jaxlite.lower import pipeline
        return pipeline.cost_analysis(self.program)

    def memory_analysis(self):
        """Bytes of the arguments, the outputs and the workspace the memory plan lays out."""
        return CompiledMemoryStats(
            argument_size_in_bytes=_nbytes(self.in_avals), output_size_in_bytes=_nbytes(self.out_avals),
            temp_size_in_bytes=int(getattr(self.executable, "workspace_size", 0)),
            alias_size_in_bytes=0, generated_code_size_in_bytes=0)     # (as JAX's CPU backend reports)

    @property
    def input_shardings(self):
        return tree_unflatten(self.in_tree, [_local_sharding() for _ in self.in_avals])

    @property
    def output_shardings(self):
        return tree_unflatten(self.out_tree, [_local_sharding() for _ in self.out_avals])

    def __call__(self, *args, **kwargs):
        flat_args, in_tree = tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            raise TypeError(f"Function compiled with input pytree does not match the input pytree it "
                            f"was called with: compiled with {self.in_tree}, called with {in_tree}")
        self._check_types(flat_args)
        # Values of hijax types go in as their arrays and come out raised again.
        lo_args = hi_lowering.lower_values(self.in_avals, flat_args)
        values = [numpy_argument(x, a) for x, a in zip(lo_args, hi_lowering.lo_types(self.in_avals))]
        outs = self.executable(values)
        arrays = [wrap_physical(Array(np.asarray(o), a.weak_type), a)
                  for o, a in zip(outs, hi_lowering.lo_types(self.out_avals))]
        return tree_unflatten(self.out_tree, hi_lowering.raise_values(self.out_avals, arrays))

    call = __call__

    def _check_types(self, flat_args):
        mismatches = []
        for i, (x, aval) in enumerate(zip(flat_args, self.in_avals)):
            given = _aval_of_spec(x)
            if given != aval if is_hi(aval) else (given.shape, given.dtype) != (aval.shape, aval.dtype):
                mismatches.append(f"Argument {i} compiled with {aval.str_short()} and called with "
                                  f"{given.str_short()}")
        if mismatches:
            raise TypeError("Argument types differ from the types for which this computation was "
                            "compiled. The mismatches are:\n" + "\n".join(mismatches))
