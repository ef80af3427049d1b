"""Jitted functions called from several Python threads at once: big kernels split over the
runtime's pool, GEMMs split over theirs, the native fast path, and compilation and cache
eviction racing with calls. Every result is checked."""
import ctypes
import gc
import threading
import time

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.core.array import Array
from jaxlite.lower import entry_points, runtime
from jaxlite.transforms import jit as jit_module

THREADS = 6


def _run_threads(work, count=THREADS):
    """Run `work(index)` on `count` threads started together; re-raise the first failure."""
    errors, barrier = [], threading.Barrier(count)

    def target(index):
        try:
            barrier.wait()
            work(index)
        except BaseException as err:      # noqa: BLE001 - reported to the main thread
            errors.append(err)
    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def test_big_split_kernels_from_many_threads():
    f = jaxlite.jit(lambda x, s: jnp.tanh(x * s) + x)
    size = 2 * entry_points.PARALLEL_MIN_POINTS
    inputs = [np.linspace(-2, 2, size, dtype=np.float32) * (i + 1) for i in range(THREADS)]
    f(Array(inputs[0]), Array(np.float32(1.0)))
    executable = f._entry((Array(inputs[0]), Array(np.float32(1.0))), {})[0].executable
    # One native call, whose kernel hands shares to the native pool.
    assert executable._native is not None and executable.uses_pool

    def work(index):
        x = Array(inputs[index])
        for step in range(6):
            scale = np.float32(step + 1)
            out = f(x, Array(scale))
            np.testing.assert_allclose(out, np.tanh(inputs[index] * scale) + inputs[index], rtol=2e-6, atol=2e-6)
    _run_threads(work)


def test_split_gemms_from_many_threads():
    rng = np.random.default_rng(0)
    a = [rng.standard_normal((320, 256)).astype(np.float32) for _ in range(THREADS)]
    b = rng.standard_normal((256, 288)).astype(np.float32)
    f = jaxlite.jit(lambda x, w: jnp.maximum(x @ w, 0.0))
    expected = [np.maximum(x @ b, 0) for x in a]

    def work(index):
        for _ in range(5):
            np.testing.assert_allclose(f(Array(a[index]), Array(b)), expected[index], rtol=1e-4, atol=1e-3)
    _run_threads(work)


def test_fast_path_from_many_threads_with_donation():
    step = jaxlite.jit(lambda p, g: p - 0.5 * g, donate_argnums=0)
    small = jaxlite.jit(lambda x: x * 2 + 1)

    def work(index):
        grads = Array(np.full(64, index, np.float32))
        params = Array(np.zeros(64, np.float32)) + 0
        for i in range(300):
            params = step(params, grads)
            assert float(small(Array(np.float32(i)))) == 2 * i + 1
        np.testing.assert_allclose(params, -0.5 * 300 * index)
    _run_threads(work)


def test_calls_racing_with_cache_eviction():
    """Evicted machine code must stay mapped while any thread (or fast-path table) holds it."""
    functions = [jaxlite.jit(lambda x, k=k: jnp.sin(x) * k) for k in range(2)]
    x = np.linspace(0, 1, 3, dtype=np.float32)
    stop = threading.Event()

    def evict():
        while not stop.wait(0.05):
            jit_module.clear_caches()

    def work(index):
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            k = index % 2
            np.testing.assert_allclose(functions[k](Array(x)), np.sin(x) * k, rtol=1e-6, atol=1e-7)
    evictor = threading.Thread(target=evict)
    evictor.start()
    try:
        _run_threads(work, 4)
    finally:
        stop.set()
        evictor.join()


def test_executable_running_on_one_thread_survives_eviction_on_another():
    """The segfault once seen under load: clear_caches freed machine code mid-call."""
    x = np.linspace(0, 1, 200_000, dtype=np.float32)
    for _ in range(8):
        f = jaxlite.jit(lambda v: jnp.sin(v) * 2)
        f(x)
        executable = f._entry((x,), {})[0].executable
        results = []
        runner = threading.Thread(target=lambda: results.extend(executable([x]) for _ in range(10)))
        runner.start()
        time.sleep(0.001)
        jit_module.clear_caches()
        runner.join()
        assert len(results) == 10
        np.testing.assert_allclose(results[-1][0], np.sin(x) * 2, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("lowering", ["bf16", "int8"])
def test_fast_path_of_an_evicted_low_precision_program_keeps_its_tables(lowering):
    """Threads whose first calls race each compile the function, and only one executable
    stays cached; the others live on in fast-path tables, as an evicted one does. The
    builtin a fast path calls must keep what the code reads through raw addresses: the
    GEMM unit tables and the weights packed once (their loss read freed memory: wrong
    results, or a segfault)."""
    from jaxlite import precision
    rng = np.random.default_rng(2)
    w = rng.standard_normal((256, 192)).astype(np.float32)
    x = Array(rng.standard_normal((160, 256)).astype(np.float32))
    closed = jaxlite.jit(getattr(precision, lowering)(lambda x: jnp.maximum(x @ w, 0.0) @ w.T))
    expected = np.asarray(closed(x))
    np.testing.assert_allclose(closed(x), expected, rtol=0, atol=0)    # the fast path, now installed
    jit_module._calls_cache.clear()     # the executable dropped, as by eviction
    gc.collect()
    # Memory freed above is handed out again, filled with words no table holds.
    clutter = [(ctypes.c_int64 * n)(*[-(1 << 62)] * n) for n in range(1, 64) for _ in range(50)]
    np.testing.assert_allclose(closed(x), expected, rtol=0, atol=0)
    del clutter


def test_creating_jitted_functions_while_caches_are_cleared():
    """clear_caches walks the set of jitted functions, which others add to (and drop from)."""
    def work(index):
        alive = []
        for _ in range(8000):
            if index == 0:
                jit_module.clear_caches()
            else:
                alive.append(jaxlite.jit(lambda x: x))
                if len(alive) > 50:
                    alive.clear()
    _run_threads(work, 3)


def test_donated_buffer_written_by_a_split_kernel():
    f = jaxlite.jit(lambda x: jnp.sin(x) * 2 + x, donate_argnums=0)
    value = np.linspace(-3, 3, 2 * entry_points.PARALLEL_MIN_POINTS, dtype=np.float32)
    for _ in range(2):
        x = Array(value) + 0
        address = x._value.__array_interface__["data"][0]
        out = f(x)
        assert out._value.__array_interface__["data"][0] == address and x.is_deleted()
        np.testing.assert_allclose(out, np.sin(value) * 2 + value, rtol=2e-6, atol=2e-6)


def test_big_kernels_between_python_steps_hand_their_shares_to_the_pool():
    """A program with a step run from Python (here a debug callback) calls its kernels one
    by one; the big ones still split over the pool, through their own pool task."""
    seen = []

    def f(x):
        y = jnp.tanh(x * 0.5) + 1.0
        jaxlite.debug.callback(lambda v: seen.append(float(v[0])), y)
        return jnp.exp(-y) * 2.0

    x = np.linspace(-3, 3, 4 * entry_points.PARALLEL_MIN_POINTS, dtype=np.float32)
    executable = jaxlite.jit(f).lower(x).compile().executable
    kernels = [r for r in executable._runners if isinstance(r, runtime._NativeKernel)]
    assert kernels and all(r.share is not None for r in kernels)
    y = np.tanh(x * 0.5) + 1.0
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(jaxlite.jit(f)(x)), np.exp(-y) * 2.0, rtol=2e-6)
    assert len(seen) == 3


def test_low_precision_products_from_many_threads():
    """bf16/int8 job lists (their scratch in each calling thread's workspace; constant
    weights packed once and shared) called at once."""
    from jaxlite import precision
    rng = np.random.default_rng(1)
    w = rng.standard_normal((256, 192)).astype(np.float32)
    xs = [rng.standard_normal((160, 256)).astype(np.float32) for _ in range(THREADS)]
    layer = lambda x, w: jnp.maximum(x @ w, 0.0) @ w.T
    for lowering in (precision.bf16, precision.int8):
        closed, passed = jaxlite.jit(lowering(lambda x: layer(x, w))), jaxlite.jit(lowering(layer))
        expected = [np.asarray(lowering(layer)(x, w)) for x in xs]

        def work(index):
            for _ in range(4):
                np.testing.assert_allclose(closed(xs[index]), expected[index], rtol=1e-5, atol=1e-4)
                np.testing.assert_allclose(passed(xs[index], w), expected[index], rtol=1e-5, atol=1e-4)
        _run_threads(work)
