"""jax._src.util, for code that walks jaxprs as JAX's custom-interpreter tutorial does."""


def safe_map(f, *args):
    """map over sequences that must have one length."""
    args = list(map(list, args))
    if len({len(a) for a in args}) > 1:
        raise ValueError(f"safe_map: length mismatch: {[len(a) for a in args]}")
    return list(map(f, *args))


def safe_zip(*args):
    """zip over sequences that must have one length."""
    args = list(map(list, args))
    if len({len(a) for a in args}) > 1:
        raise ValueError(f"safe_zip: length mismatch: {[len(a) for a in args]}")
    return list(zip(*args))
