"""jaxlite.scipy.spatial.transform: 3-D rotations as unit quaternions, as jax.scipy offers them.

A Rotation holds quaternions (x, y, z, w), scalar last as scipy stores them: shape (4,) for
one rotation, (n, 4) for n. Every conversion is a composition of jnp operations, so jit,
vmap and grad go through them.
"""
import math as _math
from typing import NamedTuple as _NamedTuple

from jaxlite import numpy as _jnp
from jaxlite import random as _random

_AXES = "xyz"


def _quat_product(p, q):
    """The Hamilton product p q of (x, y, z, w) quaternions (the rotation q, then p)."""
    px, py, pz, pw = (p[..., i] for i in range(4))
    qx, qy, qz, qw = (q[..., i] for i in range(4))
    return _jnp.stack([pw * qx + px * qw + py * qz - pz * qy,
                       pw * qy - px * qz + py * qw + pz * qx,
                       pw * qz + px * qy - py * qx + pz * qw,
                       pw * qw - px * qx - py * qy - pz * qz], axis=-1)


def _normalized(quat):
    return quat / _jnp.linalg.norm(quat, axis=-1, keepdims=True)


def _canonical(quat):
    """q or -q (the same rotation), chosen with w >= 0 (and the first nonzero part positive
    when w is zero), as scipy's canonical form."""
    sign = _jnp.sign(quat[..., 3])
    for i in range(3):
        sign = _jnp.where(sign == 0, _jnp.sign(quat[..., i]), sign)
    return quat * _jnp.where(sign < 0, -1.0, 1.0)[..., None]


def _elementary(axis, angle):
    """Quaternions of rotations by `angle` about the coordinate axis `axis` (0, 1, 2)."""
    half = angle / 2
    parts = [_jnp.zeros_like(half)] * 3
    parts[axis] = _jnp.sin(half)
    return _jnp.stack(parts + [_jnp.cos(half)], axis=-1)


def _check_sequence(seq):
    if len(seq) != 3 or not (set(seq) <= set(_AXES) or set(seq) <= set(_AXES.upper())):
        raise ValueError(f"Expected 3 axes from 'xyz' (extrinsic) or 'XYZ' (intrinsic), got {seq!r}")
    if seq[0] == seq[1] or seq[1] == seq[2]:
        raise ValueError(f"Expected consecutive axes to be different, got {seq}")


class Rotation(_NamedTuple):
    """Rotations in three dimensions (scipy.spatial.transform.Rotation)."""
    quat: object

    @classmethod
    def concatenate(cls, rotations):
        return cls(_jnp.concatenate([_jnp.atleast_2d(r.quat) for r in rotations]))

    @classmethod
    def from_euler(cls, seq, angles, degrees=False):
        """Rotations from three angles about the axes of seq: lowercase about the fixed axes
        (extrinsic), uppercase about the rotating ones (intrinsic)."""
        _check_sequence(seq)
        angles = _jnp.asarray(angles)
        angles = _jnp.deg2rad(angles) if degrees else angles
        if angles.shape[-1:] != (3,):
            raise ValueError(f"Expected angles of shape (3,) or (n, 3), got {angles.shape}")
        parts = [_elementary(_AXES.index(axis.lower()), angles[..., i]) for i, axis in enumerate(seq)]
        first, second, third = parts if seq.isupper() else parts[::-1]
        return cls(_quat_product(_quat_product(first, second), third))

    @classmethod
    def from_matrix(cls, matrix):
        """Rotations from 3x3 orthogonal matrices (Shepperd's method: from the largest of the
        trace and the diagonal, for accuracy)."""
        m = _jnp.asarray(matrix)
        trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
        candidates = _jnp.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], trace], axis=-1)
        best = _jnp.argmax(candidates, axis=-1)
        by_axis = []
        for i in range(3):
            j, k = (i + 1) % 3, (i + 2) % 3
            q = [None] * 4
            q[i] = 1 - trace + 2 * m[..., i, i]
            q[j] = m[..., j, i] + m[..., i, j]
            q[k] = m[..., k, i] + m[..., i, k]
            q[3] = m[..., k, j] - m[..., j, k]
            by_axis.append(_jnp.stack(q, axis=-1))
        by_trace = _jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                               m[..., 1, 0] - m[..., 0, 1], 1 + trace], axis=-1)
        choices = _jnp.stack(by_axis + [by_trace], axis=-2)
        quat = _jnp.take_along_axis(choices, best[..., None, None], axis=-2)[..., 0, :]
        return cls(_normalized(quat))

    @classmethod
    def from_mrp(cls, mrp):
        """Rotations from modified Rodrigues parameters p = axis tan(angle / 4)."""
        p = _jnp.asarray(mrp)
        squared = _jnp.sum(p * p, axis=-1, keepdims=True)
        return cls(_jnp.concatenate([2 * p, 1 - squared], axis=-1) / (1 + squared))

    @classmethod
    def from_quat(cls, quat):
        """Rotations from (x, y, z, w) quaternions, normalized."""
        return cls(_normalized(_jnp.asarray(quat)))

    @classmethod
    def from_rotvec(cls, rotvec, degrees=False):
        """Rotations from rotation vectors (axis times angle)."""
        v = _jnp.asarray(rotvec)
        v = _jnp.deg2rad(v) if degrees else v
        angle = _jnp.linalg.norm(v, axis=-1, keepdims=True)
        small = angle <= 1e-3
        safe = _jnp.where(small, 1.0, angle)
        # sin(angle / 2) / angle, by its Taylor series near 0
        scale = _jnp.where(small, 0.5 - angle ** 2 / 48 + angle ** 4 / 3840, _jnp.sin(safe / 2) / safe)
        return cls(_jnp.concatenate([scale * v, _jnp.cos(angle / 2)], axis=-1))

    @classmethod
    def identity(cls, num=None, dtype=float):
        quat = _jnp.zeros((4,) if num is None else (num, 4), dtype=dtype)
        return cls(quat.at[..., 3].set(1))

    @classmethod
    def random(cls, random_key, num=None):
        """Rotations uniform over SO(3): normalized Gaussian quaternions."""
        return cls.from_quat(_random.normal(random_key, (4,) if num is None else (num, 4)))

    def __getitem__(self, indexer):
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self):
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other):
        """The composition: other first, then self."""
        return Rotation(_quat_product(self.quat, other.quat))

    @property
    def single(self):
        return self.quat.ndim == 1

    def apply(self, vectors, inverse=False):
        """The rotated vectors (by the inverse rotations with inverse=True)."""
        matrix = self.as_matrix()
        if inverse:
            matrix = _jnp.swapaxes(matrix, -1, -2)
        return _jnp.einsum("...ij,...j->...i", matrix, _jnp.asarray(vectors))

    def as_euler(self, seq, degrees=False):
        """Three angles about the axes of seq (see from_euler), the middle one in [0, pi] for
        symmetric sequences (xzx) and [-pi/2, pi/2] for the others."""
        _check_sequence(seq)
        extrinsic = seq.islower()
        axes = [_AXES.index(a.lower()) for a in (seq if extrinsic else seq[::-1])]
        angles = _euler_from_quat(self.quat, *axes)
        angles = angles if extrinsic else angles[..., ::-1]
        return _jnp.rad2deg(angles) if degrees else angles

    def as_matrix(self):
        x, y, z, w = (self.quat[..., i] for i in range(4))
        rows = [[w * w + x * x - y * y - z * z, 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), w * w - x * x + y * y - z * z, 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), w * w - x * x - y * y + z * z]]
        return _jnp.stack([_jnp.stack(row, axis=-1) for row in rows], axis=-2)

    def as_mrp(self):
        quat = _canonical(self.quat)
        return quat[..., :3] / (1 + quat[..., 3:])

    def as_quat(self, canonical=False, scalar_first=False):
        quat = _canonical(self.quat) if canonical else self.quat
        return _jnp.roll(quat, 1, axis=-1) if scalar_first else quat

    def as_rotvec(self, degrees=False):
        quat = _canonical(self.quat)
        sine = _jnp.linalg.norm(quat[..., :3], axis=-1, keepdims=True)
        angle = 2 * _jnp.arctan2(sine, quat[..., 3:])
        small = angle <= 1e-3
        safe = _jnp.where(small, 1.0, angle)
        # angle / sin(angle / 2), by its Taylor series near 0
        scale = _jnp.where(small, 2 + angle ** 2 / 12 + 7 * angle ** 4 / 2880, safe / _jnp.sin(safe / 2))
        rotvec = scale * quat[..., :3]
        return _jnp.rad2deg(rotvec) if degrees else rotvec

    def inv(self):
        return Rotation(self.quat * _jnp.array([-1.0, -1.0, -1.0, 1.0], self.quat.dtype))

    def magnitude(self):
        """The rotation angles, in [0, pi]."""
        sine = _jnp.linalg.norm(self.quat[..., :3], axis=-1)
        return 2 * _jnp.arctan2(sine, _jnp.abs(self.quat[..., 3]))

    def mean(self, weights=None):
        """The rotation minimizing the weighted squared chordal distances: the eigenvector of
        sum w q q^T with the largest eigenvalue (Markley et al. 2007)."""
        quat = _jnp.atleast_2d(self.quat)
        weights = _jnp.ones(quat.shape[0], quat.dtype) if weights is None else _jnp.asarray(weights)
        moments = _jnp.einsum("n,ni,nj->ij", weights, quat, quat)
        _, vectors = _jnp.linalg.eigh(moments)
        return Rotation(vectors[:, -1])


def _euler_from_quat(quat, i, j, k):
    """Extrinsic angles about axes i, j, k from quaternions (Bernardes and Viollet, 2022):
    the middle angle from the quaternion's two halves, the outer two from their phases; in
    gimbal lock (middle angle 0 or pi) the third angle is taken as 0."""
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2        # the parity of (i, j, k)
    w, qi, qj, qk = quat[..., 3], quat[..., i], quat[..., j], quat[..., k] * sign
    if symmetric:
        a, b, c, d = w, qi, qj, qk
    else:
        a, b, c, d = w - quat[..., j], qi + qk, qj + w, qk - qi
    middle = 2 * _jnp.arctan2(_jnp.hypot(c, d), _jnp.hypot(a, b))
    half_sum, half_diff = _jnp.arctan2(b, a), _jnp.arctan2(d, c)
    eps = 1e-7
    at_zero, at_pi = _jnp.abs(middle) <= eps, _jnp.abs(middle - _math.pi) <= eps
    first = _jnp.where(at_zero, 2 * half_sum, _jnp.where(at_pi, 2 * half_diff, half_sum - half_diff))
    third = _jnp.where(at_zero | at_pi, 0.0, half_sum + half_diff)
    if not symmetric:
        third = third * sign
        middle = middle - _math.pi / 2
    wrap = lambda angle: (angle + _math.pi) % (2 * _math.pi) - _math.pi
    return _jnp.stack([wrap(first), middle, wrap(third)], axis=-1)


class Slerp(_NamedTuple):
    """Spherical linear interpolation between rotations at increasing times."""
    times: object
    timedelta: object
    rotations: Rotation
    rotvecs: object

    @classmethod
    def init(cls, times, rotations):
        if rotations.single:
            raise ValueError("`rotations` must be a sequence of rotations.")
        times = _jnp.asarray(times)
        if times.ndim != 1 or times.shape[0] != len(rotations):
            raise ValueError(f"Expected times of shape ({len(rotations)},), got {times.shape}.")
        steps = rotations[:-1].inv() * rotations[1:]
        return cls(times, _jnp.diff(times), rotations, steps.as_rotvec())

    def __call__(self, times):
        """The interpolated rotations at `times` (within the span of self.times)."""
        t = _jnp.asarray(times)
        index = _jnp.clip(_jnp.searchsorted(self.times, t, side="right") - 1, 0, self.timedelta.shape[0] - 1)
        alpha = (t - self.times[index]) / self.timedelta[index]
        step = Rotation.from_rotvec(self.rotvecs[index] * alpha[..., None])
        return self.rotations[index] * step

