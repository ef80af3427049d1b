"""jaxlite.scipy.cluster: vector quantization."""
from jaxlite.scipy.cluster import vq
