"""Functions of (jax, jnp) -- the JAX namespace or jaxlite's -- whose values JAX recorded in
tests/data/jax_complex_autodiff.json (record_jax_complex_autodiff.py): the autodiff cookbook's
complex examples at fixed points, and JAX's conventions for non-holomorphic functions."""

Z = 3.0 + 4.0j
COEFFICIENTS = (0.3, 0.7, 0.2, 0.9)           # u = a x + b y, v = c x + d y
POINT, DIRECTION = (0.4, 0.8), (0.6, 0.1)


def _cookbook_fun(jnp):
    a, b, c, d = COEFFICIENTS

    def fun(z):
        x, y = jnp.real(z), jnp.imag(z)
        return (a * x + b * y) + (c * x + d * y) * 1j
    return fun


def _point():
    return complex(*POINT), complex(*DIRECTION)


def cookbook_jvp(jax, jnp):
    z, z_dot = _point()
    return jax.jvp(_cookbook_fun(jnp), (jnp.asarray(z),), (jnp.asarray(z_dot),))


def cookbook_vjp(jax, jnp):
    z, z_bar = _point()
    out, fun_vjp = jax.vjp(_cookbook_fun(jnp), jnp.asarray(z))
    return out, fun_vjp(jnp.asarray(z_bar))


def _squared_norm(jnp):
    def f(z):
        x, y = jnp.real(z), jnp.imag(z)
        return x ** 2 + y ** 2
    return f


def _sums(jnp):
    def f(z):
        return jnp.sum(jnp.abs(jnp.exp(z) * z) ** 2)
    return f


MATRIX = [[1.0 + 0.5j, -0.3 + 1j], [0.2 - 0.4j, 0.7 + 0.1j]]

CASES = {
    "cookbook_jvp": cookbook_jvp,
    "cookbook_vjp": cookbook_vjp,
    "cookbook_grad_squared_norm": lambda jax, jnp: jax.grad(_squared_norm(jnp))(Z),
    "cookbook_grad_sin_holomorphic": lambda jax, jnp: jax.grad(jnp.sin, holomorphic=True)(Z),
    "cookbook_grad_conjugate_holomorphic": lambda jax, jnp: jax.grad(jnp.conjugate, holomorphic=True)(Z),
    "grad_abs": lambda jax, jnp: jax.grad(jnp.abs)(Z),
    "grad_real_of_a_complex_path": lambda jax, jnp: jax.grad(lambda x: jnp.real(jnp.exp(1j * x) * (2 + 1j)))(0.7),
    "grad_matrix_sum": lambda jax, jnp: jax.grad(_sums(jnp))(jnp.asarray(MATRIX)),
    "grad_angle": lambda jax, jnp: jax.grad(jnp.angle)(Z),
    "value_and_grad_holomorphic": lambda jax, jnp: jax.value_and_grad(lambda z: z * z * jnp.exp(z), holomorphic=True)(Z),
    "jacfwd_holomorphic": lambda jax, jnp: jax.jacfwd(lambda z: jnp.sin(z) * z[::-1], holomorphic=True)(
        jnp.asarray(MATRIX[0])),
    "jacrev_holomorphic": lambda jax, jnp: jax.jacrev(lambda z: jnp.sin(z) * z[::-1], holomorphic=True)(
        jnp.asarray(MATRIX[0])),
    "jacrev_real_output": lambda jax, jnp: jax.jacrev(lambda z: jnp.abs(z) ** 3)(jnp.asarray(MATRIX[1])),
    "hessian_holomorphic": lambda jax, jnp: jax.hessian(lambda z: jnp.sum(z ** 3 * z[::-1]), holomorphic=True)(
        jnp.asarray(MATRIX[0])),
    "hessian_real_of_complex_path": lambda jax, jnp: jax.hessian(
        lambda x: jnp.abs(jnp.sum(jnp.exp(1j * x) * (1 + 2j))) ** 2)(jnp.asarray([0.3, -0.8])),
    "grad_of_matmul": lambda jax, jnp: jax.grad(lambda a: jnp.sum(jnp.abs(a @ a) ** 2))(jnp.asarray(MATRIX)),
    "vjp_of_abs": lambda jax, jnp: jax.vjp(jnp.abs, jnp.asarray(MATRIX[0]))[1](jnp.asarray([1.0, -2.0])),
    "jvp_of_abs": lambda jax, jnp: jax.jvp(jnp.abs, (jnp.asarray(MATRIX[0]),), (jnp.asarray(MATRIX[1]),)),
    "error_grad_complex_output": lambda jax, jnp: jax.grad(jnp.sin)(Z),
    "error_grad_holomorphic_real_input": lambda jax, jnp: jax.grad(jnp.sin, holomorphic=True)(1.0),
    "error_grad_holomorphic_real_output": lambda jax, jnp: jax.grad(jnp.abs, holomorphic=True)(Z),
    "error_jacfwd_complex_input": lambda jax, jnp: jax.jacfwd(jnp.abs)(Z),
    "error_jacrev_complex_output": lambda jax, jnp: jax.jacrev(jnp.sin)(Z),
    "error_jacrev_holomorphic_real_input": lambda jax, jnp: jax.jacrev(jnp.sin, holomorphic=True)(1.0),
    "error_jacfwd_holomorphic_real_input": lambda jax, jnp: jax.jacfwd(jnp.sin, holomorphic=True)(1.0),
}
