"""jaxlite.scipy.spatial: rotations (transform.Rotation, transform.Slerp)."""
from jaxlite.scipy.spatial import transform
