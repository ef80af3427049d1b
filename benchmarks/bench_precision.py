"""Low-precision GEMMs against the float32 GEMM: 1024^3 matmul and an MLP inference batch.

Run: PYTHONPATH=. python benchmarks/bench_precision.py [--jit | --eager]

All three are jaxlite's generated kernels (gemm.py's blocking and packing), so the ratios
measure the inner-product instruction: float32 FMA (16 multiply-adds per instruction),
vdpbf16ps (32) and vpdpbusd (64). Weights (B) are prepared once, as in inference; the
bf16/int8 rows include preparing A on every call (the int8 activation offset), and the
"B repacked per call" rows show the cost when B is not a weight. Best of several repeats,
since the machine is shared.

The "under jit" section times what users run: `jit(f)`, `jit(precision.bf16(f))` and
`jit(precision.int8(f))` side by side (interleaved rounds, best of each, so a noisy
neighbour slows all three alike), with the weights either passed as arguments
(quantized/rounded and repacked on every call) or closed over, as in inference
(prepared once, when the function is compiled).
"""
import functools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gemm import best_time  # noqa: E402

import jaxlite  # noqa: E402
from jaxlite import numpy as jnp  # noqa: E402
from jaxlite.core.dtypes import bfloat16  # noqa: E402
from jaxlite.examples import mlp  # noqa: E402
from jaxlite.lower import gemm, gemm_lowp  # noqa: E402
from jaxlite.transforms import precision  # noqa: E402

SIZE = 1024
MLP_SIZES = [784, 1024, 1024, 10]
MLP_BATCH = 512


def matmul_times(threads):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((SIZE, SIZE), dtype=np.float32)
    b = rng.standard_normal((SIZE, SIZE), dtype=np.float32)
    out_f32, out_i32 = np.empty((SIZE, SIZE), np.float32), np.empty((SIZE, SIZE), np.int32)
    f32 = gemm.compile_gemm(SIZE, SIZE, SIZE, "float32")
    bf16 = gemm_lowp.compile_gemm_bf16(SIZE, SIZE, SIZE)
    int8 = gemm_lowp.compile_gemm_int8(SIZE, SIZE, SIZE)
    a16, b16 = a.astype(bfloat16), b.astype(bfloat16)
    a8 = np.clip(np.rint(a * 30), -127, 127).astype(np.int8)
    b8 = np.clip(np.rint(b * 30), -127, 127).astype(np.int8)
    b16_prepared, b8_prepared = bf16.prepare_b(b16), int8.prepare_b(b8)
    return {
        "float32": best_time(lambda: f32.run(a, b, out=out_f32, threads=threads)),
        f"bf16 ({bf16.product.name})": best_time(lambda: bf16.run(a16, b16_prepared, out=out_f32, threads=threads)),
        f"int8 ({int8.product.name})": best_time(lambda: int8.run(a8, b8_prepared, out=out_i32, threads=threads)),
        "bf16, B repacked per call": best_time(lambda: bf16.run(a16, b16, out=out_f32, threads=threads)),
        "int8, B repacked per call": best_time(lambda: int8.run(a8, b8, out=out_i32, threads=threads)),
    }


class MlpInference:
    """logits = relu(relu(x W1 + b1) W2 + b2) W3 + b3, each layer one kernel (bias+relu fused
    where the kernel allows). Returns the per-layer kernels' callables."""

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.layers = [(rng.standard_normal((m, n), dtype=np.float32) / float(np.sqrt(m)),
                        rng.standard_normal(n, dtype=np.float32) * 0.1)
                       for m, n in zip(MLP_SIZES[:-1], MLP_SIZES[1:])]
        self.x = rng.standard_normal((MLP_BATCH, MLP_SIZES[0]), dtype=np.float32)

    def float32(self, threads):
        kernels = [gemm.compile_gemm(MLP_BATCH, w.shape[1], w.shape[0],
                                     epilogue=gemm.chain(gemm.BIAS, gemm.RELU) if i < 2 else gemm.BIAS)
                   for i, (w, _) in enumerate(self.layers)]

        def run():
            h = self.x
            for kernel, (w, b) in zip(kernels, self.layers):
                h = kernel.run(h, w, b, threads=threads)
            return h
        return run

    def bf16(self, threads):
        kernels = [gemm_lowp.compile_gemm_bf16(MLP_BATCH, w.shape[1], w.shape[0],
                                               epilogue=gemm.chain(gemm.BIAS, gemm.RELU) if i < 2 else gemm.BIAS)
                   for i, (w, _) in enumerate(self.layers)]
        weights = [kernel.prepare_b(w.astype(bfloat16)) for kernel, (w, _) in zip(kernels, self.layers)]

        def run():
            h = self.x
            for kernel, w, (_, b) in zip(kernels, weights, self.layers):
                h = kernel.run(h.astype(bfloat16), w, b, threads=threads)
            return h
        return run

    def int8(self, threads):
        """Activations quantized per row by a compiled pass; dequantization, bias and relu
        fused into the GEMM's epilogue."""
        kernels = [gemm_lowp.compile_gemm_int8(
            MLP_BATCH, w.shape[1], w.shape[0],
            epilogue=gemm_lowp.DEQUANTIZE_RELU if i < 2 else gemm_lowp.DEQUANTIZE)
            for i, (w, _) in enumerate(self.layers)]
        scales, weights = [], []
        for kernel, (w, _) in zip(kernels, self.layers):
            scale = (np.abs(w).max(axis=0) / 127).astype(np.float32)
            scales.append(scale)
            weights.append(kernel.prepare_b(np.rint(w / scale).astype(np.int8)))

        def run():
            h = self.x
            for kernel, w, w_scale, (_, b) in zip(kernels, weights, scales, self.layers):
                words, row_scale = kernel.quantize_a(h)
                h = kernel.run_words(words, w, row_scale, w_scale, b, threads=threads)
            return h
        return run


def report(title, times):
    print(title)
    base = times["float32"]
    for name, seconds in times.items():
        print(f"  {name:32s} {1e3 * seconds:8.2f} ms   {base / seconds:5.2f}x vs float32")


# ----------------------------------------------------------------------------- under jit

VARIANTS = {"float32": lambda f: f, "bf16": precision.bf16, "int8": precision.int8}


def interleaved_best(runs, clock, rounds=15):
    """Best time of each callable on `clock` over rounds that run them all in turn."""
    for run in runs.values():
        jaxlite.block_until_ready(run())
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(rounds):
        for name, run in runs.items():
            start = clock()
            jaxlite.block_until_ready(run())
            best[name] = min(best[name], clock() - start)
    return best


def jit_times(fun, args, clock):
    compiled = {name: jaxlite.jit(lower(fun)) for name, lower in VARIANTS.items()}
    return interleaved_best({name: functools.partial(f, *args) for name, f in compiled.items()}, clock)


def jit_workloads():
    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.standard_normal((SIZE, SIZE), dtype=np.float32))
    w = jnp.asarray(rng.standard_normal((SIZE, SIZE), dtype=np.float32))
    params = [(jnp.asarray(wi), jnp.asarray(bi)) for wi, bi in mlp.init_params(MLP_SIZES, seed=0)]
    x = jnp.asarray(rng.standard_normal((MLP_BATCH, MLP_SIZES[0]), dtype=np.float32))
    return {
        f"{SIZE}^3 matmul, weights closed over": (lambda a: a @ w, (a,)),
        f"{SIZE}^3 matmul, weights as arguments": (lambda a, w: a @ w, (a, w)),
        f"MLP {MLP_SIZES} batch {MLP_BATCH}, weights closed over": (lambda x: mlp.logits(jnp, params, x), (x,)),
        f"MLP {MLP_SIZES} batch {MLP_BATCH}, weights as arguments": (lambda p, x: mlp.logits(jnp, p, x), (params, x)),
    }


# Wall time is what a user waits; CPU time (summed over both cores) is steadier when other
# processes compete for the two cores, and its ratios are the work each variant does.
CLOCKS = {"wall time": time.perf_counter, "CPU time": time.process_time}


def main_jit():
    for title, (fun, args) in jit_workloads().items():
        for clock_name, clock in CLOCKS.items():
            report(f"under jit: {title} ({clock_name})", jit_times(fun, args, clock))


def main_eager():
    """No jit: float32 runs numpy's matmul (OpenBLAS); a big bf16/int8 product runs as a
    compiled program cached by its shape (precision.EAGER_COMPILE_MIN_WORK)."""
    fun, (a, w) = jit_workloads()[f"{SIZE}^3 matmul, weights as arguments"]
    for clock_name, clock in CLOCKS.items():
        runs = {name: functools.partial(lower(fun), a, w) for name, lower in VARIANTS.items()}
        report(f"eager: {SIZE}^3 matmul ({clock_name})", interleaved_best(runs, clock, rounds=5))


def main():
    for threads in (1, 2):
        report(f"{SIZE}^3 matmul, {threads} thread(s)", matmul_times(threads))
    net = MlpInference()
    for threads in (1, 2):
        runs = {name: getattr(net, name)(threads) for name in ("float32", "bf16", "int8")}
        reference = runs["float32"]()
        report(f"MLP {MLP_SIZES} inference, batch {MLP_BATCH}, {threads} thread(s)",
               {name: best_time(run) for name, run in runs.items()})
        for name in ("bf16", "int8"):
            outputs = runs[name]()
            error = np.linalg.norm(outputs - reference) / np.linalg.norm(reference)
            agreement = np.mean(outputs.argmax(1) == reference.argmax(1))
            print(f"    {name}: relative error {error:.2e}, argmax agreement {100 * agreement:.1f}%")


if __name__ == "__main__":
    if sys.argv[1:] == ["--jit"]:
        main_jit()
    elif sys.argv[1:] == ["--eager"]:
        main_eager()
    else:
        main()
        main_jit()
        main_eager()
