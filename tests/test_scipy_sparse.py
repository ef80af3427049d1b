"""jaxlite.scipy.sparse.linalg: cg, bicgstab and gmres solve as numpy's dense solver does,
for matrices, operator functions and pytrees, eagerly and natively under jit."""
import numpy as np
import pytest

import jaxlite
from jaxlite.lower.fusion import EqnStep
from jaxlite.scipy.sparse import linalg

RNG = np.random.default_rng(0)
N = 24
_M = RNG.standard_normal((N, N)).astype(np.float32)
SPD = _M @ _M.T + N * np.eye(N, dtype=np.float32)
GENERAL = _M + 6 * np.eye(N, dtype=np.float32)
B = RNG.standard_normal(N).astype(np.float32)


@pytest.mark.parametrize("name,matrix", [("cg", SPD), ("bicgstab", GENERAL), ("gmres", GENERAL)])
def test_solves_as_numpy(name, matrix):
    solver = getattr(linalg, name)
    want = np.linalg.solve(matrix.astype(float), B)
    x, info = solver(matrix, B, tol=1e-6)
    np.testing.assert_allclose(np.asarray(x), want, atol=1e-4)
    x, _ = solver(lambda v: matrix @ v, B, tol=1e-6)
    np.testing.assert_allclose(np.asarray(x), want, atol=1e-4)
    x, _ = solver(matrix, B, x0=np.ones(N, np.float32), tol=1e-6)
    np.testing.assert_allclose(np.asarray(x), want, atol=1e-4)
    assert (info is None) == (name != "gmres")
    steps = jaxlite.jit(lambda b: solver(matrix, b)[0]).lower(B).program.steps
    assert [s for s in steps if isinstance(s, EqnStep) and s.kind == "fallback"] == []
    np.testing.assert_allclose(np.asarray(jaxlite.jit(lambda b: solver(matrix, b, tol=1e-6)[0])(B)), want, atol=1e-4)


def test_pytrees_preconditioner_and_restart():
    tree = {"a": B[:4], "b": B[4:].reshape(4, 5)}
    scale = {"a": 3.0, "b": 2.0}
    x, _ = linalg.cg(lambda t: {k: scale[k] * v for k, v in t.items()}, tree)
    np.testing.assert_allclose(np.asarray(x["a"]), B[:4] / 3, rtol=1e-5)
    assert x["b"].shape == (4, 5)
    jacobi = np.diag(1 / np.diag(SPD))
    x, _ = linalg.cg(SPD, B, M=jacobi, tol=1e-6)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(SPD.astype(float), B), atol=1e-4)
    x, _ = linalg.gmres(GENERAL, B, restart=5, tol=1e-6)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(GENERAL.astype(float), B), atol=1e-4)
    with pytest.raises(ValueError, match="solve_method"):
        linalg.gmres(GENERAL, B, solve_method="other")
