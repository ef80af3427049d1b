"""The per-call path of a jitted function once its signature has been compiled.

jit's `__call__` looks the arguments' interned signatures (array.signature_of) up in
a per-function table; a hit runs a *call function* made for that signature and
executable. For programs that run as one native entry point, the call function is
Python source generated for the exact argument and output counts, e.g.

    def call(args):
        a0, = args
        o0 = empty(SHAPE0, DTYPE0)
        native(WORKSPACE, a0._value, o0)
        r0 = new_array(Array)
        r0._value, r0.weak_type, r0._signature = o0, WEAK0, SIGNATURE0
        return r0

(no loops, no lists, no ctypes): the signature lookup already guaranteed shapes,
dtypes, weak types and contiguity, and the native entry point checks that it got
exactly ndarrays. Outputs skip Array.__init__ (no view, no flags call): the entry
point leaves them read-only, and they are fresh buffers nobody else holds. With
donation the source also reuses argument buffers for outputs and deletes the donated
Arrays. Other programs (Python steps, threaded kernels) go through `run_entry`.
"""
import sys

import numpy as np

from jaxlite.core import errors
from jaxlite.core.array import Array, intern_signature
from jaxlite.core.dtypes import ExtendedDType
from jaxlite.core.extended import ExtendedArray, is_extended, physical_value, wrap_physical
from jaxlite.core.trace import Tracer
from jaxlite.core.tree_util import tree_unflatten

_new_array = Array.__new__


def owns_buffer(array):
    """Whether `array` is the only holder of its buffer, so donating it cannot change
    data anyone else sees: its numpy value (and that value's base, for a view) are
    referenced from nowhere else. Counts: the holder, this frame's local, getrefcount's
    argument. A numpy array given to jnp.asarray, or a reshape sharing the base, fails."""
    value = array._value
    if type(value) is not np.ndarray or sys.getrefcount(value) != 3:
        return False
    base = value.base
    if base is None:
        return value.flags.owndata
    return (type(base) is np.ndarray and base.base is None and base.flags.owndata
            and sys.getrefcount(base) == 3)


def private_buffer(array):
    """The Array's buffer if it holds it alone, else a copy: what generated code may write
    into, or an output that is this argument unchanged may keep (the caller may still write
    to a numpy array it gave; JAX copied it to the device, so its result is immutable)."""
    return array._value if owns_buffer(array) else array._value.copy()


def _passed_through_positions(entry):
    """The flat arguments that some output is, unchanged (worked out once per entry)."""
    positions = getattr(entry, "_passed_through", None)
    if positions is None:
        jaxpr, extra = entry.closed.jaxpr, len(entry.extra_args)
        outputs = {id(v) for v in jaxpr.outvars}
        positions = entry._passed_through = tuple(
            i - extra for i, v in enumerate(jaxpr.invars) if i >= extra and id(v) in outputs)
    return positions


def claim_donations(flat_args, paired):
    """Positions (in `flat_args`) whose buffers outputs may take over. A donated Array
    also passed in another position is an error, as in JAX."""
    owned = set()
    for position in paired:
        array = flat_args[position]
        if any(other is array for k, other in enumerate(flat_args) if k != position):
            raise ValueError(_donated_twice(position))
        if type(array) is Array and owns_buffer(array):
            owned.add(position)
    return owned


def delete_donated(flat_args, paired):
    for position in paired:
        if type(flat_args[position]) is Array:
            flat_args[position].delete()


def make_call(entry, executable, in_signatures):
    """The call function of a compiled signature: args -> the output pytree."""
    native = executable.native_entry()
    if native is None or entry.extra_args or (executable.donation.paired and _has_keys(entry)):
        return _general_call(entry)
    return _generated_call(entry, executable, native, in_signatures)


def _has_keys(entry):
    return any(map(is_extended, entry.closed.in_avals + entry.closed.out_avals))


def _general_call(entry):
    def call(args):
        return tree_unflatten(entry.out_tree, run_entry(entry, args))
    return call


def run_entry(entry, flat_args):
    """Run a cache entry's executable on flat arguments (Arrays, numpy values or scalars)."""
    executable = entry.executable or entry.get_executable()
    paired = [p - len(entry.extra_args) for p in executable.donation.paired]
    owned = claim_donations(flat_args, paired) if paired else ()
    shared = [i for i in _passed_through_positions(entry)
              if not (type(flat_args[i]) is Array and owns_buffer(flat_args[i]))]
    values = [numpy_argument(x, aval) for x, aval in zip(flat_args, entry.in_avals)]
    for i in shared:
        values[i] = values[i].copy()     # an output is this argument: see private_buffer
    extra = len(entry.extra_args)
    outs = executable([*entry.extra_args, *values], {p + extra for p in owned})
    if paired:
        delete_donated(flat_args, paired)
    return [wrap_physical(Array(o, weak), aval)
            for o, weak, aval in zip(outs, entry.out_weak_types, entry.closed.out_avals)]


def numpy_argument(x, aval):
    """The numpy value a compiled program takes for one flat argument (a typed key array:
    its words)."""
    if type(x) is Array:
        return x._value
    if isinstance(x, Tracer):
        raise errors.escaped_tracer_error(x)
    if isinstance(x, ExtendedArray):
        return x._physical._value
    return np.asarray(x, aval.dtype)


def _generated_call(entry, executable, native, in_signatures):
    """Straight-line Python for one native program (see the module docstring); `native`
    describes its entry point (lower.runtime.NativeEntry)."""
    jaxpr = executable.jaxpr
    names = {"empty": np.empty, "native": native.entry, "new_array": _new_array, "Array": Array,
             "ascontiguousarray": np.ascontiguousarray, "unflatten": tree_unflatten, "private_buffer": private_buffer,
             "OUT_TREE": entry.out_tree, "NO_WORKSPACE": np.empty(0, np.uint8), "physical": physical_value}
    arguments = [f"a{i}" for i in range(len(jaxpr.invars))]
    lines = ["def call(args):", f"    {', '.join(arguments)}, = args" if arguments else "    pass"]
    lines += _donation_checks(executable, in_signatures)
    values = _argument_values(native, in_signatures, lines)
    outputs = _output_buffers(native, names, lines)
    consts = []
    for j, const in enumerate(native.consts):
        names[f"CONST{j}"] = const
        consts.append(f"CONST{j}")
    workspace = "NO_WORKSPACE"
    if native.kept_workspace:
        names["KEPT"] = native.kept_workspace
        lines.append("    workspace = KEPT.take()")
        workspace = "workspace"
    elif native.workspace_size:   # (the planned buffers and the loop bodies' regions)
        names["WORKSPACE_SIZE"], names["uint8"] = native.workspace_size, np.uint8
        workspace = "empty(WORKSPACE_SIZE, uint8)"
    tail = []       # the native control flow's table and its bodies' constants
    for j, array in enumerate(native.tail):
        names[f"TAIL{j}"] = array
        tail.append(f"TAIL{j}")
    lines.append(f"    native({', '.join([workspace] + consts + values + outputs + tail)})")
    if native.bridge is not None:      # a Python callback inside may have raised
        names["BRIDGE"] = native.bridge
        lines.append("    BRIDGE.raise_pending()")
    if native.kept_workspace:
        lines.append("    KEPT.give_back(workspace)")
    lines += _wrap_outputs(native, entry.out_weak_types, names, len(consts), len(values))
    lines += _wrap_keys(entry.closed.out_avals, names)
    lines += [f"    a{i}.delete()" for i in executable.donation.paired]
    results = [f"r{k}" for k in range(len(jaxpr.outvars))]
    if entry.out_tree.kind is None:
        lines.append(f"    return {results[0]}")
    else:
        lines.append(f"    return unflatten(OUT_TREE, [{', '.join(results)}])")
    exec("\n".join(lines), names)
    return names["call"]


def _argument_values(native, in_signatures, lines):
    """The expression of each argument's buffer (adding the lines that prepare reused ones)."""
    buffers = [f"a{i}._physical._value" if isinstance(signature.dtype, ExtendedDType) else f"a{i}._value"
               for i, signature in enumerate(in_signatures)]   # a typed key array: its words
    values = [buffer if signature.contiguous else f"ascontiguousarray({buffer})"
              for buffer, signature in zip(buffers, in_signatures)]
    for i in set(native.reused.values()):
        # The code may write the output through the argument's pointer: a buffer the Array
        # does not own alone is copied first (a non-contiguous one already is).
        private = f"private_buffer(a{i})"
        lines.append(f"    v{i} = {private if in_signatures[i].contiguous else values[i]}")
        values[i] = f"v{i}"
    return values


def _output_buffers(native, names, lines):
    """Lines giving each computed output its buffer: fresh, or a donated argument's."""
    reused = native.reused
    for k, (shape, dtype) in enumerate(native.out_specs):
        names[f"SHAPE{k}"], names[f"DTYPE{k}"] = shape, dtype
        lines.append(f"    o{k} = v{reused[k]}" if k in reused else f"    o{k} = empty(SHAPE{k}, DTYPE{k})")
    return [f"o{k}" for k in range(len(native.out_specs))]


def _donation_checks(executable, in_signatures):
    """Lines rejecting a donated Array that is also passed in another position."""
    return [f"    if a{i} is a{j}: raise ValueError({_donated_twice(i)!r})"
            for i in executable.donation.paired for j in range(len(in_signatures)) if j != i]


def _donated_twice(position):
    return (f"Attempt to donate a buffer which is also used by the same call (flattened argument "
            f"{position}); pass a copy, or do not donate it.")


def _wrap_keys(out_avals, names):
    """Lines making typed key arrays of the outputs whose logical type is one."""
    lines = []
    for k, aval in enumerate(out_avals):
        if is_extended(aval):
            names[f"KEYTYPE{k}"] = aval.dtype
            lines.append(f"    r{k} = KEYTYPE{k}.wrap(r{k})")
    return lines


def _wrap_outputs(native, weak_types, names, nconsts, nargs):
    """An Array per jaxpr output: fresh outputs wrapped directly, anything else (an argument
    or constant passed through, a literal) through Array's constructor."""
    lines = []
    for k, (source, weak) in enumerate(zip(native.out_sources, weak_types)):
        names[f"WEAK{k}"] = weak
        if type(source) is not int:
            names[f"LITERAL{k}"] = source
            lines.append(f"    r{k} = Array(LITERAL{k}.copy(), WEAK{k})")
        elif source < nconsts:
            lines.append(f"    r{k} = Array(CONST{source}, WEAK{k})")
        elif source < nconsts + nargs:
            lines.append(f"    r{k} = Array(private_buffer(physical(a{source - nconsts})), WEAK{k})")
        else:
            out = source - nconsts - nargs
            shape, dtype = native.out_specs[out]
            names[f"SIGNATURE{k}"] = intern_signature(shape, dtype, weak)
            lines.append(f"    r{k} = new_array(Array)")
            lines.append(f"    r{k}._value, r{k}.weak_type, r{k}._signature = o{out}, WEAK{k}, SIGNATURE{k}")
    return lines
