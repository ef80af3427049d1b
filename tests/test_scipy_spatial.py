"""jax.scipy.spatial.transform.Rotation and Slerp against scipy's, with jit, vmap and grad."""
import numpy as np
import pytest
import scipy.spatial.transform as reference
from hypothesis import given, settings, strategies as st

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.scipy.spatial.transform import Rotation, Slerp

SEQUENCES = ["xyz", "zyx", "xzx", "zyz", "XYZ", "ZXY", "XYX", "YZY"]


@st.composite
def quaternions(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    return rng.standard_normal((draw(st.integers(1, 4)), 4))


def close(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


@settings(deadline=None, max_examples=15)
@given(quaternions(), st.sampled_from(SEQUENCES))
def test_conversions_match_scipy(quat, seq):
    ours, theirs = Rotation.from_quat(quat.astype(np.float32)), reference.Rotation.from_quat(quat)
    matrix = theirs.as_matrix()
    close(ours.as_matrix(), matrix)
    close(ours.as_quat(canonical=True), theirs.as_quat(canonical=True))
    close(ours.as_rotvec(), theirs.as_rotvec())
    close(ours.as_mrp(), theirs.as_mrp())
    close(ours.as_euler(seq), theirs.as_euler(seq), 2e-5)
    close(ours.magnitude(), theirs.magnitude())
    for back in (Rotation.from_matrix(matrix.astype(np.float32)), Rotation.from_euler(seq, theirs.as_euler(seq)),
                 Rotation.from_rotvec(theirs.as_rotvec()), Rotation.from_mrp(theirs.as_mrp())):
        close(back.as_matrix(), matrix)
    vectors = np.arange(3.0 * len(quat)).reshape(-1, 3)
    close(ours.apply(vectors), theirs.apply(vectors), 1e-4)
    close(ours.apply(vectors, inverse=True), theirs.apply(vectors, inverse=True), 1e-4)
    close((ours[:1] * ours).as_matrix(), (theirs[:1] * theirs).as_matrix())
    close(ours.mean().as_matrix(), theirs.mean().as_matrix(), 1e-4)


def test_slerp_matches_scipy():
    quat = np.random.default_rng(1).standard_normal((4, 4))
    times, at = np.array([0.0, 1.0, 2.5, 4.0]), np.array([0.0, 0.3, 1.7, 2.5, 3.9, 4.0])
    ours = Slerp.init(jnp.asarray(times, jnp.float32), Rotation.from_quat(quat.astype(np.float32)))
    theirs = reference.Slerp(times, reference.Rotation.from_quat(quat))
    close(ours(at.astype(np.float32)).as_matrix(), theirs(at).as_matrix())
    close(jaxlite.jit(lambda t: ours(t).as_matrix())(at.astype(np.float32)), theirs(at).as_matrix())


def test_transformations_and_errors():
    angles = np.array([[0.1, 0.2, 0.3], [0.4, -0.5, 0.6]], np.float32)
    to_matrix = lambda a: Rotation.from_euler("xyz", a).as_matrix()
    close(jaxlite.jit(to_matrix)(angles), reference.Rotation.from_euler("xyz", angles).as_matrix())
    close(jaxlite.vmap(to_matrix)(angles), reference.Rotation.from_euler("xyz", angles).as_matrix())
    # d/dt of the angle of a rotation by t about z is 1.
    grad = jaxlite.grad(lambda t: Rotation.from_euler("xyz", jnp.stack([0.0, 0.0, t])).magnitude())(0.7)
    close(grad, 1.0)
    assert Rotation.identity().as_matrix().tolist() == np.eye(3).tolist()
    assert Rotation.random(jaxlite.random.key(0), 3).quat.shape == (3, 4)
    assert len(Rotation.concatenate([Rotation.identity(), Rotation.identity(2)])) == 3
    with pytest.raises(TypeError, match="not subscriptable"):
        Rotation.identity()[0]
    with pytest.raises(ValueError, match="Expected consecutive axes to be different"):
        Rotation.from_euler("xxy", angles)
