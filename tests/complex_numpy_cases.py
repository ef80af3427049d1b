"""jnp functions on complex values as functions of (jnp, random): JAX's results are recorded in
tests/data/jax_complex_numpy.json (record_jax_complex_numpy.py), and the test calls the same
functions with jaxlite."""
import numpy as np

Z = [1 + 2j, -3 - 0.5j, 0.5j, 2.0]
M = [[1 + 1j, 2], [3j, -1 + 0.5j]]


def _z(jnp):
    return jnp.array(Z)


def _m(jnp):
    return jnp.array(M)


CASES = {
    "linspace": lambda jnp, random: jnp.linspace(0, 1j, 3),
    "arange_times_1j": lambda jnp, random: jnp.arange(3) * 1j,
    "sort": lambda jnp, random: jnp.sort(_z(jnp)),
    "argsort": lambda jnp, random: jnp.argsort(_z(jnp)),
    "max_min": lambda jnp, random: (jnp.max(_z(jnp)), jnp.min(_z(jnp))),
    "prod_cumprod_cumsum": lambda jnp, random: (jnp.prod(_z(jnp)), jnp.cumprod(_z(jnp)), jnp.cumsum(_z(jnp))),
    "mean_var_std": lambda jnp, random: (jnp.mean(_z(jnp)), jnp.var(_z(jnp)), jnp.std(_z(jnp))),
    "vdot_vecdot_inner": lambda jnp, random: (jnp.vdot(_z(jnp), _z(jnp) * 1j), jnp.vecdot(_z(jnp), _z(jnp)),
                                              jnp.inner(_z(jnp), _z(jnp))),
    "dot_einsum_kron": lambda jnp, random: (jnp.dot(_m(jnp), _m(jnp)), jnp.einsum("ij,jk->ik", _m(jnp), _m(jnp).T),
                                            jnp.kron(_m(jnp), _m(jnp))),
    "correlate_convolve": lambda jnp, random: (jnp.correlate(_z(jnp), _z(jnp)[:2]), jnp.convolve(_z(jnp), _z(jnp))),
    "cov_corrcoef": lambda jnp, random: (jnp.cov(_z(jnp)), jnp.corrcoef(jnp.stack([_z(jnp), _z(jnp) * 1j]))),
    "round_nan_to_num": lambda jnp, random: (jnp.round(_z(jnp) * 1.3),
                                             jnp.nan_to_num(jnp.array([complex(np.nan, np.inf), 1j]))),
    "isfinite_isinf_isnan": lambda jnp, random: (jnp.isfinite(jnp.array([complex(np.inf, 0), 1j])),
                                                 jnp.isinf(jnp.array([complex(0, -np.inf), 1j])),
                                                 jnp.isnan(jnp.array([complex(0, np.nan), 1j]))),
    "ordering": lambda jnp, random: (jnp.less(_z(jnp), 1j), jnp.greater_equal(_z(jnp), 0.5j),
                                     jnp.maximum(_z(jnp), 1j), jnp.minimum(_z(jnp), 0)),
    "transcendental": lambda jnp, random: (jnp.log2(_z(jnp)), jnp.log10(_z(jnp)), jnp.exp2(_z(jnp)),
                                           jnp.sinc(_z(jnp)), jnp.logaddexp(_z(jnp), _z(jnp))),
    "powers": lambda jnp, random: (jnp.power(_z(jnp), 3), jnp.float_power(_z(jnp), 2), jnp.reciprocal(_z(jnp))),
    "take_fill": lambda jnp, random: jnp.take(_z(jnp), jnp.array([0, 7]), mode="fill"),
    "interp": lambda jnp, random: jnp.interp(jnp.array([0.5, 3.0]), jnp.array([0.0, 1.0]), jnp.array([0j, 1j])),
    "casts": lambda jnp, random: (_z(jnp).astype(jnp.float32), _z(jnp).astype(jnp.int32),
                                  jnp.array([1.5, 2]).astype(jnp.complex64)),
    "at_updates": lambda jnp, random: (_z(jnp).at[1].multiply(2j), _z(jnp).at[1:].add(1j)),
    "angle_abs_sign": lambda jnp, random: (jnp.angle(_z(jnp)), jnp.abs(_z(jnp)), jnp.sign(_z(jnp))),
    "iscomplex_isreal": lambda jnp, random: (jnp.iscomplex(_z(jnp)), jnp.isreal(_z(jnp))),
    "random_normal": lambda jnp, random: random.normal(random.PRNGKey(0), (3,), jnp.complex64),
    "norm_trace_diff": lambda jnp, random: (jnp.linalg.norm(_z(jnp)), jnp.trace(_m(jnp)), jnp.diff(_z(jnp))),
}
