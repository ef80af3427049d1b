"""jaxlite.errors: the exception classes users catch, as in jax.errors."""
from jaxlite.core.errors import (ConcretizationTypeError, JaxliteTypeError, JaxRuntimeError,
                                 NonConcreteBooleanIndexError, TracerArrayConversionError,
                                 TracerBoolConversionError, TracerIntegerConversionError,
                                 UnexpectedTracerError)

__all__ = ["ConcretizationTypeError", "JaxliteTypeError", "JaxRuntimeError", "NonConcreteBooleanIndexError",
           "TracerArrayConversionError", "TracerBoolConversionError",
           "TracerIntegerConversionError", "UnexpectedTracerError"]
