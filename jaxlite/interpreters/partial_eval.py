"""Partial evaluation as jax.interpreters.partial_eval names it, on jaxlite's PartialEvalTrace."""
from jaxlite.core.staging import JaxprTracer, trace_to_jaxpr as _trace_to_jaxpr
from jaxlite.core.trace import current_trace as _current_trace
from jaxlite.core.trace import set_current_trace as _set_current_trace
from jaxlite.transforms.partial_eval import PartialEvalTrace as _PartialEvalTrace
from jaxlite.transforms.partial_eval import partial_eval_rules as custom_partial_eval_rules


class PartialVal(tuple):
    """(aval, None) for an unknown value of that type; (None, const) for a known value."""

    @classmethod
    def unknown(cls, aval):
        return cls((aval, None))

    @classmethod
    def known(cls, const):
        return cls((None, const))

    def is_known(self):
        return self[0] is None

    def get_known(self):
        return self[1] if self[0] is None else None

    def get_aval(self):
        return self[0]


def trace_to_jaxpr_nounits(fun, pvals):
    """Run fun on known and unknown inputs: (jaxpr of the unknown part, out PartialVals, consts).

    Outputs computed from known inputs alone come back as known values; the
    jaxpr takes the unknown inputs and returns the unknown outputs.
    """
    trace = _PartialEvalTrace(_current_trace(), "partial evaluation")
    try:
        args = [pv.get_known() if pv.is_known() else trace.new_arg(pv.get_aval()) for pv in pvals]
        with _set_current_trace(trace):
            outs = fun(*args)
        unknown = [x for x in outs if trace.is_unknown(x)]
        out_pvals = [PartialVal.unknown(x.aval) if trace.is_unknown(x) else PartialVal.known(x) for x in outs]
        closed = trace.to_closed_jaxpr(unknown)
    finally:
        trace.finish()
    return closed.jaxpr, out_pvals, closed.consts


def trace_to_jaxpr_dynamic(fun, in_avals, debug_info=None):
    """(jaxpr, out avals, consts) of fun traced on abstract inputs."""
    closed = _trace_to_jaxpr(fun, in_avals)
    return closed.jaxpr, closed.out_avals, closed.consts

