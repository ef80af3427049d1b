"""Transformations of functions: differentiation, batching, staging for jit, precision."""
