"""jax._src.util's helpers that JAX's documentation uses."""


def safe_map(f, *args):
    """map over sequences of one length, as a list (a length mismatch is an error)."""
    return [f(*xs) for xs in safe_zip(*args)]


def safe_zip(*args):
    """zip of sequences of one length, as a list (a length mismatch is an error)."""
    lengths = {len(a) for a in map(list, args)}
    if len(lengths) > 1:
        raise ValueError(f"safe_zip: arguments of different lengths {sorted(lengths)}")
    return list(zip(*args))
