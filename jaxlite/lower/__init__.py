"""Lowering: graph passes, fusion, kernel IR, LLVM code generation and the runtime."""
