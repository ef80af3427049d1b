"""The compiler's own machinery: concurrent compilation and the loop hints it emits."""
import threading

import re

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.lower import codegen, disk_cache, gemm, kernel_ir, llvm_target


def _kernel_module(scale):
    x = np.linspace(-3, 3, 4096, dtype=np.float32)
    return jaxlite.jit(lambda v: jnp.tanh(v * scale) + jnp.sum(v)).lower(x).compile()


def test_concurrent_compilations_give_the_same_machine_code():
    executable = _kernel_module(2.0).executable
    serial = [llvm_target.compile_ir(executable.llvm_ir).objects for _ in range(2)]
    futures = [llvm_target.in_background(llvm_target.compile_ir, executable.llvm_ir) for _ in range(4)]
    concurrent = [future.result().objects for future in futures]
    assert serial[0] == serial[1]
    assert all(code == serial[0] for code in concurrent)


def test_concurrently_compiled_modules_run_correctly():
    x = np.linspace(-3, 3, 4096, dtype=np.float32)
    results = {}

    def run(scale):
        results[scale] = np.asarray(jaxlite.jit(lambda v: jnp.tanh(v * scale) + jnp.max(v))(x))

    threads = [threading.Thread(target=run, args=(scale,)) for scale in (0.5, 1.5, 2.5, 3.5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for scale, got in results.items():
        np.testing.assert_allclose(got, np.tanh(x * scale) + x.max(), rtol=1e-5, atol=1e-5)
    assert len(results) == 4


def test_compile_once_builds_each_key_once_for_concurrent_callers():
    calls, started = [], threading.Event()

    @llvm_target.compile_once
    def build(key):
        calls.append(key)
        started.wait(1.0)
        return object()

    futures = [llvm_target.in_background(build, "family") for _ in range(4)]
    started.set()
    results = {id(future.result()) for future in futures}
    assert calls == ["family"] and len(results) == 1


def test_compile_once_retries_after_a_failed_build():
    attempts = []

    @llvm_target.compile_once
    def build(key):
        attempts.append(key)
        if len(attempts) == 1:
            raise RuntimeError("first build fails")
        return key * 2

    try:
        build(3)
    except RuntimeError:
        pass
    assert build(3) == 6 and attempts == [3, 3]


def test_only_reduction_loops_ask_for_interleaving():
    x = np.ones((64, 256), np.float32)
    text = jaxlite.jit(lambda v: jnp.exp(v) / jnp.sum(v, axis=1, keepdims=True)).lower(x).compile().executable.llvm_ir
    hinted = [line for line in text.splitlines() if "!llvm.loop" in line]
    assert hinted and f"i32 {codegen.REDUCTION_INTERLEAVE}" in text
    assert text.count("llvm.loop.interleave.count") == 1       # one hint node, shared
    assert len(hinted) < sum(line.lstrip().startswith("br i1") for line in text.splitlines())


def test_a_gemm_family_asked_for_by_several_threads_compiles_once(monkeypatch, tmp_path):
    monkeypatch.setenv(disk_cache.KERNEL_CACHE_VARIABLE, str(tmp_path / "kernels"))     # none stored yet
    builds = []
    build = gemm._build_family
    monkeypatch.setattr(gemm, "_build_family", lambda family: builds.append(family) or build(family))
    identity = gemm.Epilogue("identity", (), lambda ctx, acc: acc)     # a family no test compiled yet
    futures = [llvm_target.in_background(gemm.compile_gemm, 20 + i, 30, 40, "float32", False, False, 1, None, identity)
               for i in range(4)]
    kernels = [future.result() for future in futures]
    assert len(builds) == 1 and len({id(k.native) for k in kernels}) == 1
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(21, 40)).astype(np.float32), rng.normal(size=(40, 30)).astype(np.float32)
    np.testing.assert_allclose(kernels[1](a, b), a @ b, rtol=1e-4, atol=1e-4)


def _softmax(x, axis):
    z = jnp.exp(x - jnp.max(x, axis=axis, keepdims=True))
    return z / jnp.sum(z, axis=axis, keepdims=True)


def _numpy_softmax(x, axis):
    z = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("shape, axis", [((64, 300), 1), ((4, 5, 33), 2), ((37, 20), 0), ((8, 16, 8), 1)])
def test_softmax_is_right_whatever_the_axis(shape, axis):
    x = np.random.default_rng(1).normal(size=shape).astype(np.float32) * 4
    np.testing.assert_allclose(np.asarray(jaxlite.jit(lambda v: _softmax(v, axis))(x)), _numpy_softmax(x, axis),
                               rtol=2e-6, atol=1e-7)


def test_row_softmax_is_one_kernel_computing_exp_once():
    x = np.random.default_rng(2).normal(size=(128, 256)).astype(np.float32)
    lowered = jaxlite.jit(lambda v: _softmax(v, 1)).lower(x)
    kernels = [step.kernel for step in lowered.program.steps]
    assert len(kernels) == 1
    text = str(kernels[0])
    assert text.count("exp(") == 1 and "sum-reduce" in text and text.count("load[b0]") == 1


def test_a_store_recomputing_no_transcendental_is_left_alone():
    x = np.random.default_rng(3).normal(size=(64, 128)).astype(np.float32)

    def layernorm(v):
        centered = v - jnp.mean(v, axis=1, keepdims=True)
        return centered / jnp.sqrt(jnp.mean(centered * centered, axis=1, keepdims=True) + 1e-5)

    (kernel,) = [step.kernel for step in jaxlite.jit(layernorm).lower(x).program.steps]
    assert all(not stage.writes for stage in kernel.stages[:-1])
    centered = x - x.mean(axis=1, keepdims=True)
    want = centered / np.sqrt((centered ** 2).mean(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(np.asarray(jaxlite.jit(layernorm)(x)), want, rtol=1e-5, atol=1e-5)


def test_log_softmax_keeps_its_single_exp():
    x = np.random.default_rng(4).normal(size=(32, 64)).astype(np.float32)

    def log_softmax(v):
        z = v - jnp.max(v, axis=1, keepdims=True)
        return z - jnp.log(jnp.sum(jnp.exp(z), axis=1, keepdims=True))

    (kernel,) = [step.kernel for step in jaxlite.jit(log_softmax).lower(x).program.steps]
    assert str(kernel).count("exp(") == 1
    want = np.log(_numpy_softmax(x, 1))
    np.testing.assert_allclose(np.asarray(jaxlite.jit(log_softmax)(x)), want, rtol=1e-5, atol=1e-5)


def test_kernels_differing_only_in_name_share_their_code():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(2, 64, 32)).astype(np.float32)
    w = rng.normal(size=(32, 32)).astype(np.float32)

    def f(a, b):       # the same column sum twice, split by GEMMs, and one of another dtype
        s1 = jnp.sum(jnp.tanh(a), axis=0)
        s2 = jnp.sum(jnp.tanh(a @ w), axis=0)
        return s1, s2, jnp.sum(jnp.tanh(b.astype(jnp.float16)), axis=0)

    executable = jaxlite.jit(f).lower(x, y).compile().executable
    kernels = [step.kernel for step in executable.steps if hasattr(step, "kernel")]
    keys = {kernel_ir.structure_key(k) for k in kernels}
    assert len(keys) < len(kernels)
    # (Kernels are the functions named fused_*; a module cut in pieces exports those it moves.)
    assert len(re.findall(r'define (?:internal )?void @"fused_', executable.llvm_ir)) == len(keys)
    got = [np.asarray(v) for v in jaxlite.jit(f)(x, y)]
    np.testing.assert_allclose(got[0], np.tanh(x).sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], np.tanh(x @ w).sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[2], np.tanh(y.astype(np.float16)).sum(0), rtol=2e-2, atol=2e-2)


def _many_kernels(x, y):
    """Several fused kernels with GEMMs and reductions between them: a module worth cutting."""
    h = jnp.tanh(x @ y) * jnp.exp(-x.sum(axis=1, keepdims=True))
    g = jnp.log1p(jnp.abs(h @ y.T)) - jnp.max(h, axis=0)
    return jnp.sum(jnp.sin(g) * g, axis=1), jnp.cumsum(jnp.cos(h), axis=0)


def _many_kernels_numpy(x, y):
    h = np.tanh(x @ y) * np.exp(-x.sum(axis=1, keepdims=True))
    g = np.log1p(np.abs(h @ y.T)) - h.max(axis=0)
    return np.sum(np.sin(g) * g, axis=1), np.cumsum(np.cos(h), axis=0)


def _operands():
    rng = np.random.default_rng(6)
    return rng.normal(size=(48, 40)).astype(np.float32) * 0.3, rng.normal(size=(40, 40)).astype(np.float32) * 0.3


@pytest.mark.parametrize("pieces", [1, 2, 3])
def test_a_module_cut_in_pieces_computes_what_the_whole_one_does(monkeypatch, pieces):
    split = llvm_target.split_module
    monkeypatch.setattr(llvm_target, "split_module", lambda module: split(module, pieces))
    monkeypatch.setattr(llvm_target, "SPLIT_MIN_INSTRUCTIONS", 0)
    x, y = _operands()
    compiled = jaxlite.jit(_many_kernels).lower(x, y).compile()
    assert len(compiled.executable.compiled.objects) == pieces
    for got, want in zip(compiled(x, y), _many_kernels_numpy(x, y)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
    assert "ret" in compiled.asm()


def test_only_leaf_functions_leave_the_first_piece():
    x, y = _operands()
    executable = jaxlite.jit(_many_kernels).lower(x, y).compile().executable
    first, *others = llvm_target.split_module(executable.module, 2)
    assert others, "the program is big enough to cut"
    moved = {line.split("@")[1].split("(")[0] for piece in others for line in piece.splitlines()
             if line.startswith("define ")}
    defined = moved | {line.split("@")[1].split("(")[0] for line in first.splitlines() if line.startswith("define ")}
    assert moved and all(re.search(rf"declare \w+ @{re.escape(name)}\(", first) for name in moved)
    calls = {line.split("@")[1].split("(")[0] for piece in others for line in piece.splitlines() if " call " in line}
    assert not calls & defined


def test_small_modules_stay_whole():
    assert len(llvm_target.split_module(_kernel_module(2.0).executable.module)) == 1


def test_the_first_call_runs_in_a_workspace_mapped_while_compiling():
    x, y = _operands()
    big = np.tile(x, (40, 1))           # intermediates of a few hundred KB: a kept workspace
    executable = jaxlite.jit(_many_kernels).lower(big, y).compile().executable
    first = executable._kept_workspace.take()
    assert first is not None and first.size == executable.workspace_size
    executable._kept_workspace.give_back(first)
    got = executable([big, y])
    assert executable._kept_workspace.take() is first
    for g, want in zip(got, _many_kernels_numpy(big, y)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4)
    elsewhere = {}
    thread = threading.Thread(target=lambda: elsewhere.update(out=executable([big, y])))
    thread.start()
    thread.join()
    np.testing.assert_allclose(elsewhere["out"][0], got[0], rtol=1e-6)
