"""x ** n for a static integer n >= 1 by repeated squaring, for any multiplication: numbers
in kernel IR or LLVM, complex values as pairs of parts, matrices."""


def power_by_squaring(base, exponent, multiply):
    """base ** exponent (exponent >= 1) from log2(exponent) squarings and a product for each
    set bit, the lowest bits' factors multiplied first (every caller rounds alike)."""
    if exponent < 1:
        raise ValueError(f"power_by_squaring needs an exponent >= 1, got {exponent}")
    result = None
    while exponent:
        if exponent & 1:
            result = base if result is None else multiply(result, base)
        exponent >>= 1
        if exponent:
            base = multiply(base, base)
    return result
