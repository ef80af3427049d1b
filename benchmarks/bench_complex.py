"""Complex kernels side by side: numpy eager, jaxlite jit and JAX jit.

    PYTHONPATH=. /work/jaxref/bin/python benchmarks/bench_complex.py [--only NAME ...]

(JAX joins when it imports.) Workloads on complex64: an elementwise multiply-add
`z * w + z` and a transcendental one `exp(z) * w` over 1M elements (jaxlite runs them as
one fused real kernel reading and writing the interleaved parts, lower/complex_split.py),
a modulus-and-phase mix `|z|^2 + angle(z) * re(w)`, and complex matmuls at 256^2 and 1024^2
(real products of the parts on the generated GEMM: 4 of them, or Gauss's 3 from a contraction
of 256); on a 1024^2 complex64 matrix, cumprod along each axis and prod along each and all
(one native sequential routine per axis, lower/complex_products.py); complex svd at 128^2 and
256^2 (zgesdd from native code on one OpenBLAS thread). Times are medians, as in run.py.
"""

import numpy as np

from run import run_side_by_side


def _complex(rng, shape):
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(np.complex64)


def _elementwise(name, make):
    def workload(b):
        rng = np.random.default_rng(0)
        z, w = _complex(rng, 1 << 20), _complex(rng, 1 << 20)
        return b.compile(make(b.xp)), (b.asarray(z), b.asarray(w))
    workload.__name__ = name
    return workload


def _matmul(size):
    def workload(b):
        rng = np.random.default_rng(0)
        x, y = _complex(rng, (size, size)), _complex(rng, (size, size))
        return b.compile(lambda x, y: x @ y), (b.asarray(x), b.asarray(y))
    workload.__name__ = f"cmatmul_{size}"
    return workload


def _one_matrix(name, size, make):
    def workload(b):
        z = _complex(np.random.default_rng(0), (size, size))
        return b.compile(make(b.xp)), (b.asarray(z),)
    workload.__name__ = name
    return workload


WORKLOADS = {f.__name__: f for f in [
    _elementwise("mul_add_1m", lambda xp: lambda z, w: z * w + z),
    _elementwise("exp_mul_1m", lambda xp: lambda z, w: xp.exp(z) * w),
    _elementwise("abs_angle_1m", lambda xp: lambda z, w: xp.abs(z) ** 2 + xp.angle(z) * w.real),
    _matmul(256), _matmul(1024),
    _one_matrix("cumprod_axis0_1024", 1024, lambda xp: lambda z: xp.cumprod(z, axis=0)),
    _one_matrix("cumprod_axis1_1024", 1024, lambda xp: lambda z: xp.cumprod(z, axis=1)),
    _one_matrix("prod_axis0_1024", 1024, lambda xp: lambda z: xp.prod(z, axis=0)),
    _one_matrix("prod_axis1_1024", 1024, lambda xp: lambda z: xp.prod(z, axis=1)),
    _one_matrix("prod_all_1024", 1024, lambda xp: lambda z: xp.prod(z)),
    _one_matrix("svd_128", 128, lambda xp: lambda z: xp.linalg.svd(z)),
    _one_matrix("svd_256", 256, lambda xp: lambda z: xp.linalg.svd(z))]}


if __name__ == "__main__":
    run_side_by_side(WORKLOADS, __doc__)
