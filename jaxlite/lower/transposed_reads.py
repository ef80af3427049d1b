"""Which loads of a store stage read their operand across its rows (a transposed read).

A store loop nest runs its innermost loop along the output's contiguous axis. An
operand read through a transpose is then walked with a stride of its row length: one
element per cache line, no vector loads. When such an operand is contiguous along
another loop of the stage (its `rows` loop here), codegen tiles that loop and the
innermost one (`columns`) in square tiles: it loads the tile's source rows as vectors,
transposes them in registers into a small stack buffer, and runs the fused body over
the tile reading that buffer, so both sides move whole vectors.
"""
from jaxlite.lower import kernel_ir
from jaxlite.lower.kernel_ir import Store

MAX_STAGED_LOADS = 4    # each staged load holds a tile of registers (and a stack buffer)


class TransposedTiles:
    """Tile `rows` x `columns` of a store stage; `loads` maps each staged load to its
    offset's step along `columns` (its step along `rows` is 1)."""

    def __init__(self, rows, columns, loads, tile):
        self.rows, self.columns, self.loads, self.tile = rows, columns, loads, tile


def plan(stage):
    """The tiling that makes `stage`'s transposed reads contiguous, or None."""
    if not isinstance(stage, Store) or stage.ordered or stage.guard is not None or len(stage.loops) < 2:
        return None
    columns = stage.loops[-1]
    if any(_step(index, columns) != 1 for _, index, _ in stage.writes):
        return None     # the output is not contiguous along the innermost loop: nothing to gain
    rows, loads = None, {}
    for load in kernel_ir.loads([value for _, _, value in stage.writes]):
        terms = affine_terms(load.args[0])
        if terms is None or terms.get(columns, 0) in (0, 1):
            continue
        contiguous = [loop for loop in stage.loops[:-1] if terms.get(loop) == 1]
        if contiguous and rows in (None, contiguous[0]) and len(loads) < MAX_STAGED_LOADS:
            rows = contiguous[0]
            loads[load] = terms[columns]
    if not loads:
        return None
    # 16 lanes fill a 512-bit register with float32; 64-bit elements and short axes take 8.
    extent = min(rows.extent, columns.extent)
    tile = 16 if max(load.dtype.itemsize for load in loads) <= 4 and extent >= 16 else 8
    if extent < tile:
        return None
    return TransposedTiles(rows, columns, loads, tile)


def _step(index, loop):
    terms = affine_terms(index)
    return None if terms is None else terms.get(loop, 0)


def affine_terms(index):
    """{loop: coefficient} of an index expression affine in the loops (constants
    dropped), or None when it is not (a div, rem or load in it)."""
    if index.op == "const":
        return {}
    if index.op == "loop":
        return {index.attr: 1}
    if index.op in ("add", "sub"):     # sub: reversed axes
        left, right = affine_terms(index.args[0]), affine_terms(index.args[1])
        if left is None or right is None:
            return None
        sign = 1 if index.op == "add" else -1
        return {loop: left.get(loop, 0) + sign * right.get(loop, 0) for loop in left.keys() | right.keys()}
    if index.op == "mul" and index.args[1].op == "const":
        terms = affine_terms(index.args[0])
        return None if terms is None else {loop: c * index.args[1].attr[1] for loop, c in terms.items()}
    return None

