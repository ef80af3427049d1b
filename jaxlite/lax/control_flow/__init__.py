"""Structured control flow: cond, switch, while_loop, fori_loop, scan and map."""
from jaxlite.lax.control_flow.conditionals import cond, cond_p, switch
from jaxlite.lax.control_flow.loops import (fori_loop, map, scan, scan_p, while_loop,
                                            while_p)
from jaxlite.lax.control_flow.solves import custom_linear_solve, custom_root, linear_solve_p
