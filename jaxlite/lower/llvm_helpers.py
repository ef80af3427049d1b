"""The LLVM building blocks every native emitter shares: types, globals, element
addresses, counted loops, two-way choices, intrinsic declarations, vector shuffles and the
floating-point control word (MXCSR).

A leaf module (it imports only llvmlite, and float_mode for the MXCSR bits), so that the code generators (codegen, gemm,
gemm_lowp, sort_kernels, linalg_kernels, native_routines, native_flow, native_pool,
native_call) can all use it without importing one another.
"""
from llvmlite import ir

from jaxlite.lower.float_mode import FTZ_DAZ

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()


def as_i64(value):
    """An i64 constant for a Python int; an LLVM value unchanged."""
    return ir.Constant(I64, value) if isinstance(value, int) else value


def declare(module, name, return_type, arg_types):
    """The declaration of an LLVM intrinsic (or external function), made once per module."""
    existing = module.globals.get(name)
    return existing or ir.Function(module, ir.FunctionType(return_type, arg_types), name)


def internal_global(module, name, value_type, align):
    """A module-private global initialized to zero (null for a pointer)."""
    variable = ir.GlobalVariable(module, value_type, name)
    variable.linkage = "internal"
    variable.align = align
    variable.initializer = ir.Constant(value_type, None)
    return variable


def gep(builder, pointer, index, element_type):
    """The address of element `index` (an int or i64 value) of `element_type` from `pointer`."""
    return builder.gep(pointer, [as_i64(index)], inbounds=True, source_etype=element_type)


def load(builder, pointer, index, element_type):
    return builder.load(gep(builder, pointer, index, element_type), typ=element_type)


def store(builder, value, pointer, index):
    builder.store(value, gep(builder, pointer, index, value.type))


def call_intrinsic(builder, name, return_type, args):
    """A call of intrinsic `name` on `args`, declared from the arguments' types."""
    return builder.call(declare(builder.module, name, return_type, [a.type for a in args]), args)


def smin(builder, x, y):
    return builder.select(builder.icmp_signed("<", x, y), x, y)


def smax(builder, x, y):
    return builder.select(builder.icmp_signed(">", x, y), x, y)


def splat(builder, scalar, vector_type):
    """A vector of `vector_type` with `scalar` in every lane."""
    lanes = vector_type.count
    single = builder.insert_element(ir.Constant(vector_type, None), scalar, as_i64(0))
    zeros = ir.Constant(ir.VectorType(I32, lanes), [0] * lanes)
    return builder.shuffle_vector(single, ir.Constant(vector_type, None), zeros)


def transpose_square(builder, rows):
    """Transpose n vectors of n lanes (n a power of two) in log2(n) shuffle stages.

    The stage with half-width h swaps, between rows j and j + h (bit h of j clear), the
    lane blocks of width h that sit on the wrong side of the diagonal.
    """
    rows, n = list(rows), len(rows)
    index_type = ir.VectorType(I32, n)
    h = n // 2
    while h:
        low = [i if not i & h else n + i - h for i in range(n)]
        high = [i + h if not i & h else n + i for i in range(n)]
        for j in range(n):
            if not j & h:
                x, y = rows[j], rows[j + h]
                rows[j] = builder.shuffle_vector(x, y, ir.Constant(index_type, low))
                rows[j + h] = builder.shuffle_vector(x, y, ir.Constant(index_type, high))
        h //= 2
    return rows


def emit_loop(builder, start, stop, body, step=1, carried=(), name="i", hints=()):
    """Emit `for i in range(start, stop, step)` (step > 0; bounds non-negative ints or i64 values).

    `body(i, *carried)` emits one iteration and returns the next carried values (loop
    phis: accumulators stay in registers instead of going through memory); the carried
    values after the loop are returned. The loop is in rotated do-while form behind a
    guard (the form LLVM's loop passes want); with constant bounds the guard is folded,
    and an empty constant range emits nothing. `hints`, (name, value) pairs, become the
    loop's metadata (e.g. ("llvm.loop.interleave.count", 2)).
    """
    start, stop, step = as_i64(start), as_i64(stop), as_i64(step)
    constant = isinstance(start, ir.Constant) and isinstance(stop, ir.Constant)
    if constant and start.constant >= stop.constant:
        return list(carried)
    preheader = builder.block
    header = builder.append_basic_block(name + ".body")
    done = builder.append_basic_block(name + ".done")
    if constant:
        builder.branch(header)
    else:
        builder.cbranch(builder.icmp_signed("<", start, stop), header, done)
    builder.position_at_end(header)
    index = builder.phi(I64, name)
    index.add_incoming(start, preheader)
    phis = []
    for value in carried:
        phi = builder.phi(value.type)
        phi.add_incoming(value, preheader)
        phis.append(phi)
    updated = list(body(index, *phis) or ())
    latch = builder.block
    following = builder.add(index, step, flags=("nuw", "nsw"))
    index.add_incoming(following, latch)
    for phi, value in zip(phis, updated):
        phi.add_incoming(value, latch)
    branch = builder.cbranch(builder.icmp_signed("<", following, stop), header, done)
    if hints:
        branch.set_metadata("llvm.loop", _loop_id(builder.module, hints))
    builder.position_at_end(done)
    if constant:
        return updated
    return [_merge(builder, [(first, preheader), (last, latch)]) for first, last in zip(carried, updated)]


def _merge(builder, incoming):
    phi = builder.phi(incoming[0][0].type)
    for value, block in incoming:
        phi.add_incoming(value, block)
    return phi


def _loop_id(module, hints):
    """A fresh loop ID (`!{!self, !{hint, value}...}`): each loop needs its own node."""
    operands = [module.add_metadata([ir.MetaDataString(module, name), ir.Constant(I32, value)])
                for name, value in hints]
    loop_id = ir.values.MDValue(module, operands, name=str(len(module.metadata)))
    loop_id.operands = (loop_id,) + loop_id.operands
    return loop_id


def emit_choice(builder, condition, if_true, if_false):
    """The values of `if_true()` where `condition` holds, else of `if_false()`."""
    with builder.if_else(condition) as (then, otherwise):
        with then:
            true_values, true_block = if_true(), builder.block
        with otherwise:
            false_values, false_block = if_false(), builder.block
    return [_merge(builder, [(t, true_block), (f, false_block)]) for t, f in zip(true_values, false_values)]



def save_and_flush_denormals(builder, allocas=None):
    """Set FTZ/DAZ in MXCSR (per thread); returns the slot holding the previous MXCSR for
    restore_mxcsr. `allocas`, a builder in the function's entry block, keeps a call inside
    a loop from growing the stack."""
    return _save_and_update_mxcsr(builder, lambda value: builder.or_(value, ir.Constant(I32, FTZ_DAZ)), allocas)


def save_and_keep_denormals(builder, allocas=None):
    """Clear FTZ/DAZ (for Python called back from native code, which expects IEEE
    subnormals); returns the slot to pass to restore_mxcsr afterwards."""
    return _save_and_update_mxcsr(builder, lambda value: builder.and_(value, ir.Constant(I32, ~FTZ_DAZ)), allocas)


def _save_and_update_mxcsr(builder, update, allocas):
    saved, updated = (allocas or builder).alloca(I32), (allocas or builder).alloca(I32)
    call_intrinsic(builder, "llvm.x86.sse.stmxcsr", VOID, [saved])
    builder.store(update(builder.load(saved, typ=I32)), updated)
    call_intrinsic(builder, "llvm.x86.sse.ldmxcsr", VOID, [updated])
    return saved


def restore_mxcsr(builder, saved):
    call_intrinsic(builder, "llvm.x86.sse.ldmxcsr", VOID, [saved])
