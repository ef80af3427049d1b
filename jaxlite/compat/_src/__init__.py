"""The few pieces of JAX private modules that libraries import (each named in docs/compat.md)."""
