"""jaxlite.scipy.sparse: the iterative linear solvers of jax.scipy.sparse.linalg."""
from jaxlite.scipy.sparse import linalg
