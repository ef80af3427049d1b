"""JAX's dtypes and its type-promotion lattice, with weak types for Python scalars.

Promotion is the least upper bound in a lattice rather than numpy's value-based
rules, so `float32_array * 2.0` stays float32 and `int8 + uint8` is int16. Python
scalars enter the lattice as the weak kinds "i*", "f*" and "c*", which sit below every
sized type of their kind. With x64 disabled (the default) 64-bit results are
canonicalized to 32 bits (complex128 to complex64).
"""
import builtins
import functools
import sys
import threading
import warnings

import numpy as np

from jaxlite.core.config import config

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

# ml_dtypes' types: bfloat16, and the narrow ones as JAX has them: stored one element a byte,
# computed by ml_dtypes' numpy kernels (through float32, rounding each result; under jit
# float8_e4m3fn and float8_e5m2 elementwise run natively, lower/float8.py), and outside the
# promotion lattice but for Python scalars (JAX allows no implicit promotion for them).
# Importing ml_dtypes costs ~600 ms CPU, most of `import jaxlite`, so it is imported when one of
# its types is first named (dtypes.bfloat16, jnp.float8_e4m3fn, dtype="bfloat16", an array of one):
# until then no value can have one of its types. The module attributes bfloat16, NARROW_FLOATS,
# NARROW_SIGNED, NARROW_UNSIGNED and NARROW_INTS appear then (see __getattr__); jaxlite's own code
# asks is_bfloat16/is_narrow instead, which never import it.
NARROW_FLOAT_NAMES = (
    "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")
NARROW_SIGNED_NAMES = ("int1", "int2", "int4")
NARROW_UNSIGNED_NAMES = ("uint1", "uint2", "uint4")
ML_DTYPE_NAMES = frozenset(("bfloat16",) + NARROW_FLOAT_NAMES + NARROW_SIGNED_NAMES + NARROW_UNSIGNED_NAMES)
_ML_DTYPES_ATTRIBUTES = ("bfloat16", "NARROW_FLOATS", "NARROW_SIGNED", "NARROW_UNSIGNED", "NARROW_INTS")


class _MlTypes:
    """ml_dtypes' types once loaded; empty before (nothing can have them then)."""
    bfloat16 = None
    narrow_floats = narrow_signed = narrow_unsigned = narrow_ints = ()


_ml = _MlTypes()
_ml_lock = threading.Lock()

SUPPORTED = [bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
             float16, float32, float64, complex64, complex128]

WEAK_INT, WEAK_FLOAT, WEAK_COMPLEX = "i*", "f*", "c*"

# Each type points to the types just above it; promotion climbs until paths meet.
_ABOVE = {
    bool_: [WEAK_INT],
    WEAK_INT: [uint8, int8],
    uint8: [int16, uint16], uint16: [int32, uint32], uint32: [int64, uint64], uint64: [WEAK_FLOAT],
    int8: [int16], int16: [int32], int32: [int64], int64: [WEAK_FLOAT],
    WEAK_FLOAT: [float16, WEAK_COMPLEX],
    float16: [float32], float32: [float64, complex64], float64: [complex128],
    WEAK_COMPLEX: [complex64], complex64: [complex128], complex128: [],
}


def _upper_bounds(node):
    seen, stack = {node}, [node]
    while stack:
        for parent in _ABOVE[stack.pop()]:
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen


_UPPER = {node: _upper_bounds(node) for node in _ABOVE}

_SHORT_NAMES = {bool_: "bool"}
_FLOATS = {float16, float32, float64}


def load_ml_dtypes():
    """ml_dtypes, imported now if it was not, with its types added to jaxlite's tables."""
    with _ml_lock:
        if _ml.bfloat16 is None:
            _add_ml_dtypes()
    return sys.modules["ml_dtypes"]


def _add_ml_dtypes():
    import ml_dtypes
    bf16 = np.dtype(ml_dtypes.bfloat16)
    narrow_floats, narrow_signed, narrow_unsigned = (tuple(np.dtype(getattr(ml_dtypes, name)) for name in names)
        for names in (NARROW_FLOAT_NAMES, NARROW_SIGNED_NAMES, NARROW_UNSIGNED_NAMES))
    narrow = narrow_floats + narrow_signed + narrow_unsigned
    SUPPORTED[SUPPORTED.index(float16):SUPPORTED.index(float16)] = [bf16]
    SUPPORTED.extend(narrow)
    _ABOVE[WEAK_INT][2:] = narrow_signed + narrow_unsigned
    _ABOVE[WEAK_FLOAT][1:1] = [bf16, *narrow_floats]
    _ABOVE.update({bf16: [float32], **{t: [] for t in narrow}})
    _UPPER.update({node: _upper_bounds(node) for node in _ABOVE})
    _SHORT_NAMES[bf16] = "bf16"
    _FLOATS.update((bf16,) + narrow_floats)
    _least_upper_bound.cache_clear()
    globals().update(bfloat16=bf16, NARROW_FLOATS=narrow_floats, NARROW_SIGNED=narrow_signed,
                     NARROW_UNSIGNED=narrow_unsigned, NARROW_INTS=narrow_signed + narrow_unsigned)
    _ml.narrow_floats, _ml.narrow_signed, _ml.narrow_unsigned = narrow_floats, narrow_signed, narrow_unsigned
    _ml.narrow_ints = narrow_signed + narrow_unsigned
    _ml.bfloat16 = bf16     # last: other threads read it as "loaded"


def __getattr__(name):
    if name in _ML_DTYPES_ATTRIBUTES:
        load_ml_dtypes()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_ML_DTYPES_ATTRIBUTES))


def as_dtype(x):
    """np.dtype(x), with ml_dtypes' types in jaxlite's tables first when `x` may be one: it names
    one, or ml_dtypes was imported (by the program, say), so that values can have its types."""
    if _ml.bfloat16 is None and ("ml_dtypes" in sys.modules or isinstance(x, str) and x in ML_DTYPE_NAMES):
        load_ml_dtypes()
    try:
        return np.dtype(x)
    except TypeError:
        if _ml.bfloat16 is not None or not isinstance(x, str):
            raise
    load_ml_dtypes()        # perhaps another of its names (complex32...), which numpy knows once it is loaded
    return np.dtype(x)


class _NumpyDtypeType(type):
    """numpy's dtype as jnp.dtype, whose constructor also knows ml_dtypes' names before
    ml_dtypes is imported (np.dtype("bfloat16") does only after): instances, isinstance and
    subscripting are numpy's own."""

    def __call__(cls, *args, **kwargs):
        if args and isinstance(args[0], str):
            as_dtype(args[0])
        return np.dtype(*args, **kwargs)

    def __instancecheck__(cls, instance):
        return isinstance(instance, np.dtype)

    def __subclasscheck__(cls, subclass):
        return issubclass(subclass, np.dtype)

    def __getitem__(cls, item):
        return np.dtype[item]

    def __repr__(cls):
        return repr(np.dtype)


class DtypeConstructor(metaclass=_NumpyDtypeType):
    """jnp.dtype (see _NumpyDtypeType)."""


def is_bfloat16(dtype):
    return _ml.bfloat16 is not None and dtype == _ml.bfloat16


def is_16bit_float(dtype):
    return dtype == float16 or is_bfloat16(dtype)


def short_name(dtype):
    """The jaxpr spelling of a dtype: f32, i8, u16, bf16, bool, f8_e4m3fn, i4, key<fry>."""
    if isinstance(dtype, ExtendedDType):
        return dtype.name
    dtype = as_dtype(dtype)
    if dtype in _ml.narrow_floats:     # float8_e4m3fn -> f8_e4m3fn
        return "f" + dtype.name[len("float"):]
    if dtype in _ml.narrow_ints:       # int4 -> i4, uint2 -> u2
        return ("u" if dtype in _ml.narrow_unsigned else "i") + dtype.name.rsplit("int", 1)[1]
    return _SHORT_NAMES.get(dtype) or f"{dtype.kind}{dtype.itemsize * 8}"


def x64_enabled():
    return config.read("jax_enable_x64")


def default_int_dtype():
    return int64 if x64_enabled() else int32


def default_float_dtype():
    return float64 if x64_enabled() else float32


def to_inexact_dtype(dtype):
    """The dtype jnp computes integers and bools in where it needs an inexact one, as JAX:
    64-bit integers become float64, narrower ones and bool float32 (with or without x64)."""
    dtype = np.dtype(dtype)
    if is_inexact(dtype):
        return dtype
    return float64 if dtype.itemsize == 8 else float32


def default_complex_dtype():
    return complex128 if x64_enabled() else complex64


_NARROWED = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


def canonicalize_dtype(dtype):
    """The dtype jaxlite really uses for `dtype`: 64-bit types narrow unless x64 is on."""
    return _canonicalize(dtype, x64_enabled())


@functools.lru_cache(maxsize=512)
def _canonicalize(dtype, x64):
    try:
        dtype = as_dtype(dtype)
    except TypeError as err:
        raise TypeError(f"{dtype!r} is not a valid dtype") from err
    if dtype not in SUPPORTED:
        raise TypeError(f"dtype {dtype} is not supported by jaxlite "
                        f"(supported: {', '.join(str(d) for d in SUPPORTED)})")
    return dtype if x64 else _NARROWED.get(dtype, dtype)


def check_user_dtype(dtype, name):
    """Warn, as JAX does, when a dtype the user asked for by name (float64, 'int64') narrows
    because x64 is off; Python's float and int mean the default types and do not warn.
    The warning points at the user's line, not at jaxlite's."""
    if dtype is None or x64_enabled() or any(dtype is t for t in (builtins.float, builtins.int, builtins.complex)):
        return
    requested = as_dtype(dtype)
    if requested not in _NARROWED:
        return
    message = (f"Explicitly requested dtype {requested} requested in {name} is not available, and "
               f"will be truncated to dtype {_NARROWED[requested]}. To enable more dtypes, set "
               "the jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell environment "
               "variable.")
    from jaxlite.core.errors import user_stacklevel
    warnings.warn(message, UserWarning, stacklevel=user_stacklevel())


def is_float(dtype):
    return as_dtype(dtype) in _FLOATS


def is_complex(dtype):
    return np.dtype(dtype).kind == "c"


def is_inexact(dtype):
    """Float or complex: the dtypes differentiation and most transcendentals accept."""
    return is_float(dtype) or is_complex(dtype)


def real_dtype(dtype):
    """The dtype of a complex dtype's parts (complex64 -> float32); a real dtype itself."""
    dtype = np.dtype(dtype)
    return np.dtype(f"f{dtype.itemsize // 2}") if is_complex(dtype) else dtype


def complex_dtype(dtype):
    """The complex dtype whose parts are `dtype` (float64 -> complex128; narrower -> complex64)."""
    return complex128 if np.dtype(dtype) in (float64, complex128) else complex64


def is_int(dtype):
    dtype = as_dtype(dtype)
    return dtype.kind in "iu" or dtype in _ml.narrow_ints


def is_unsigned(dtype):
    dtype = as_dtype(dtype)
    return dtype.kind == "u" or dtype in _ml.narrow_unsigned


def is_narrow(dtype):
    """One of ml_dtypes' float8/6/4 or int4/2/1 types (numpy kind 'V')."""
    dtype = as_dtype(dtype)
    return dtype in _ml.narrow_floats or dtype in _ml.narrow_ints


# ---------------------------------------------------------------- extended dtypes


class extended(np.generic):
    """The scalar type of JAX's extended dtypes: element types numpy does not have."""


class prng_key(extended):
    """The scalar type of typed PRNG keys (jax.random.key)."""


# The tangent type of values that have no derivative (typed keys): a dtype with no data, as in JAX.
float0 = np.dtype([("float0", np.void, 0)])
_SHORT_NAMES[float0] = "float0"


class ExtendedDType:
    """An element type that is not a numpy dtype; `type` is its scalar type (a subclass of
    `extended`), which is what issubdtype compares.

    Each element is stored as an array of `physical_shape` and `physical_dtype` (a typed
    PRNG key as its two uint32 words): an array of shape S is held, and compiled, as its
    physical data of shape S + physical_shape (core/extended.py)."""
    type = extended
    name = "extended"
    physical_shape = ()
    physical_dtype = None

    def wrap(self, data):
        """The concrete array of this dtype whose physical data is the Array `data`."""
        raise NotImplementedError

    def __repr__(self):
        return self.name

    __str__ = __repr__


def is_bool(dtype):
    return np.dtype(dtype) == bool_


def can_be_weak(dtype):
    """Weak typing exists only for int, float and complex dtypes (Python int, float, complex)."""
    return is_int(dtype) or is_inexact(dtype)


def finfo(dtype):
    dtype = as_dtype(dtype)
    if is_bfloat16(dtype) or dtype in _ml.narrow_floats:
        return load_ml_dtypes().finfo(dtype)
    return np.finfo(real_dtype(dtype))


def iinfo(dtype):
    dtype = as_dtype(dtype)
    return load_ml_dtypes().iinfo(dtype) if dtype in _ml.narrow_ints else np.iinfo(dtype)


def _lattice_node(dtype, weak):
    """Where a (dtype, weak_type) pair sits in the lattice."""
    if weak and is_int(dtype):
        return WEAK_INT
    if weak and is_float(dtype):
        return WEAK_FLOAT
    if weak and is_complex(dtype):
        return WEAK_COMPLEX
    return np.dtype(dtype)


@functools.lru_cache(maxsize=1024)
def _least_upper_bound(nodes):
    common = set.intersection(*(_UPPER[n] for n in nodes))
    bound = next((t for t in common if common <= _UPPER[t]), None)
    if bound is None:
        raise TypePromotionError(_no_promotion_message(nodes))
    return bound


def _no_promotion_message(nodes):
    names = ", ".join(repr(n if isinstance(n, str) else n.name) for n in nodes)
    narrow = [n for n in nodes if not isinstance(n, str) and is_narrow(n)]
    which = "8-bit floats" if any(n in _ml.narrow_floats for n in narrow) else "1-bit, 2-bit and 4-bit integers"
    return (f"Input dtypes ({names}) have no available implicit dtype promotion path. To avoid "
            f"unintended promotion, {which} do not support implicit promotion. If you'd like your "
            "inputs to be promoted to another type, you can do so explicitly using e.g. "
            "x.astype('float32')")


def _dtype_of_node(node):
    if node == WEAK_INT:
        return default_int_dtype()
    if node == WEAK_FLOAT:
        return default_float_dtype()
    if node == WEAK_COMPLEX:
        return default_complex_dtype()
    return canonicalize_dtype(node)


class TypePromotionError(ValueError):
    """Mixed dtypes where jax_numpy_dtype_promotion="strict" allows no implicit promotion."""


def promote_types(a, b):
    """The dtype both strong dtypes promote to (jnp.promote_types)."""
    node = _least_upper_bound((as_dtype(a), as_dtype(b)))
    return _dtype_of_node(node)


def _dtype_and_weakness(x):
    if isinstance(x, builtins.bool):
        return bool_, False
    if isinstance(x, builtins.int):
        return default_int_dtype(), True
    if isinstance(x, builtins.float):
        return default_float_dtype(), True
    if isinstance(x, builtins.complex):
        return default_complex_dtype(), True
    if hasattr(x, "dtype"):
        return as_dtype(x.dtype), getattr(x, "weak_type", False)
    return as_dtype(x), False


def result_type(*args, return_weak_type_flag=False):
    """The dtype of combining `args` (dtypes, arrays, tracers or Python scalars).

    The result is weakly typed when the lattice's join is a weak kind: every argument is weak,
    or a weak scalar of a higher kind meets strong ones (int32 array + 1.0 is a weak float32).
    """
    if not args:
        raise ValueError("result_type needs at least one argument")
    try:
        pairs = [_dtype_and_weakness(x) for x in args]
    except TypeError:
        dtype = _extended_result_type(args)
        return (dtype, False) if return_weak_type_flag else dtype
    node = _least_upper_bound(tuple(_lattice_node(d, w) for d, w in pairs))
    dtype = _dtype_of_node(node)
    weak = isinstance(node, str)
    return (dtype, weak) if return_weak_type_flag else dtype


def _extended_result_type(args):
    """Values of one extended dtype (typed keys) combine only with each other, as in JAX."""
    found = {getattr(x, "dtype", x) for x in args}
    first = next(iter(found))
    if len(found) != 1 or not isinstance(first, ExtendedDType):
        shown = ", ".join(str(dtype_of(x) if not isinstance(getattr(x, "dtype", x), ExtendedDType)
                              else getattr(x, "dtype", x)) for x in args)
        raise TypeError(f"the dtypes {shown} have no common type: typed keys combine only with "
                        "keys of the same implementation")
    return first


def is_python_scalar(x):
    return type(x) in (builtins.bool, builtins.int, builtins.float, builtins.complex)


def is_weak_scalar(x):
    """A Python int, float or complex: the scalars that make weakly typed arrays (not bool)."""
    return type(x) in (builtins.int, builtins.float, builtins.complex)


def dtype_of(x):
    """The canonical dtype jaxlite gives `x` (Python scalars take the default types)."""
    if is_python_scalar(x):
        return _dtype_and_weakness(x)[0]
    return canonicalize_dtype(np.result_type(x) if not hasattr(x, "dtype") else x.dtype)


def scalar_to_numpy(x, dtype):
    """Convert a Python scalar to a numpy scalar of `dtype`, refusing silent overflow (except
    into the 1/2/4-bit integers, which wrap, as in JAX)."""
    dtype = as_dtype(dtype)
    if isinstance(x, builtins.int) and not isinstance(x, builtins.bool) and is_int(dtype) and \
            dtype not in _ml.narrow_ints:
        info = iinfo(dtype)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python int {x} too large to convert to {dtype}")
    return np.array(x, dtype=dtype)[()]
