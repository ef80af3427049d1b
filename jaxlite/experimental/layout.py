"""jaxlite.experimental.layout: how an array's bytes are laid out (as jax.experimental.layout).

jaxlite's arrays are always row-major on its one CPU device, so the only layout is
the default one: these classes carry a request through code that builds them
(flax maps shardings inside Formats), and `with_layout_constraint` returns its input.
"""


class Layout:
    """A layout request: the order of the dimensions in memory, major to minor."""

    def __init__(self, major_to_minor=None, tiling=(), sub_byte_element_size_in_bits=0):
        self.major_to_minor = None if major_to_minor is None else tuple(major_to_minor)
        self.tiling, self.sub_byte_element_size_in_bits = tuple(tiling), sub_byte_element_size_in_bits

    def __repr__(self):
        return f"Layout(major_to_minor={self.major_to_minor})"


class Format:
    """A layout together with a sharding."""

    def __init__(self, layout=None, sharding=None):
        self.layout, self.sharding = layout, sharding

    def __repr__(self):
        return f"Format({self.layout!r}, {self.sharding!r})"


def with_layout_constraint(x, layout):
    """x itself: row-major is the only layout."""
    return x
