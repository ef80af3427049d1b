"""The native passes that turn narrow operands into a low-precision GEMM's words (gemm_lowp:
pad_rows, pack_bf16, pack_int8), checked against the numpy algorithm they replaced, on
whole and split ranges, and the GEMM end to end through prepare_a / prepare_b."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jaxlite.core.dtypes import bfloat16
from jaxlite.lower import gemm_lowp
from jaxlite.lower.native_call import array_data

GROUP = {"bfloat16": 2, "int8": 4}
DTYPE = {"bfloat16": np.dtype(bfloat16), "int8": np.dtype(np.int8)}
SENTINEL = 0xA5      # what a pass must overwrite (every byte it owns) or leave (every other)

sizes = st.integers(1, 70)
dtypes = st.sampled_from(["bfloat16", "int8"])
panel_widths = st.sampled_from([16, 48])


def narrow(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == "int8":
        return rng.integers(-128, 128, shape).astype(np.int8)
    return rng.normal(size=shape).astype(bfloat16)


def k_words(k, dtype):
    return -(-k // GROUP[dtype])


# ----------------------------------------------------------------------------- numpy references

def reference_a_words(a, offset):
    """A's words as prepare_a made them with numpy: K zero-padded to whole groups, every byte
    xor 128 for the int8 activation offset; as uint32 words."""
    group = 4 // a.dtype.itemsize
    padded = np.pad(a, [(0, 0), (0, -a.shape[1] % group)])
    if offset:
        padded = padded.view(np.uint8) ^ np.uint8(gemm_lowp._ACTIVATION_OFFSET)
    return np.ascontiguousarray(padded).view(np.uint32)


def reference_panels(b, panel_width, offset):
    """(panels as uint32 words, correction) as prepare_b made them with numpy."""
    itemsize = b.dtype.itemsize
    group = 4 // itemsize
    padded = np.pad(b, [(0, -b.shape[0] % group), (0, 0)])
    rows = padded.view(f"u{itemsize}").reshape(-1, group, b.shape[1])
    words = np.zeros(rows[:, 0].shape, np.uint32)
    for j in range(group):
        words |= rows[:, j].astype(np.uint32) << np.uint32(8 * itemsize * j)
    correction = gemm_lowp._ACTIVATION_OFFSET * padded.sum(axis=0, dtype=np.int32) if offset else None
    tiles = -(-b.shape[1] // panel_width)
    columns = np.pad(words, [(0, 0), (0, tiles * panel_width - b.shape[1])])
    return columns.reshape(len(words), tiles, panel_width).transpose(1, 0, 2), correction


# ----------------------------------------------------------------------------- running a pass

def filled(shape, dtype):
    out = np.empty(shape, dtype)
    out.view(np.uint8)[...] = SENTINEL
    return out


def run_pass(function, arrays, sizes, ranges):
    """function(*pointers, *sizes, start, stop) for each (start, stop) of `ranges`."""
    pointers = [array_data(array) for array in arrays]
    for start, stop in ranges:
        function(*pointers, *sizes, start, stop)


def pad_rows(a, offset, ranges):
    words = filled((a.shape[0], -(-a.shape[1] * a.dtype.itemsize // 4)), np.uint32)
    sizes = (a.shape[1] * a.dtype.itemsize, 4 * words.shape[1], gemm_lowp._ACTIVATION_OFFSET if offset else 0)
    run_pass(gemm_lowp._compile_row_padder(), [a, words], sizes, ranges)
    return words


def pack(b, panel_width, ranges, source=None):
    """(panels, correction) from the bf16 or int8 packer (over word rows / column tiles)."""
    k, n = b.shape
    dtype = "int8" if b.dtype == np.int8 else "bfloat16"
    panels = filled((-(-n // panel_width), k_words(k, dtype), panel_width), np.uint32)
    if dtype == "int8":
        correction = filled(n, np.int32)
        run_pass(gemm_lowp._compile_int8_packer(k, n, panel_width), [b, panels, correction], (), ranges)
        return panels, correction
    packer = gemm_lowp._compile_bf16_packer(panel_width, source or "bfloat16")
    run_pass(packer, [b, panels], (k, n), ranges)
    return panels, None


def halves(count, cut):
    """range(count) as two slices cut at a point chosen by `cut` (0..1)."""
    middle = int(round(cut * count))
    return [(0, middle), (middle, count)]


# ----------------------------------------------------------------------------- the passes

@settings(deadline=None, max_examples=40)
@given(sizes, sizes, dtypes, st.booleans(), st.floats(0, 1))
def test_pad_rows_matches_numpy_on_whole_and_split_ranges(m, k, dtype, offset, cut):
    a = narrow(dtype, (m, k), seed=m * 100 + k)
    whole = pad_rows(a, offset, [(0, m)])
    np.testing.assert_array_equal(whole, reference_a_words(a, offset))
    np.testing.assert_array_equal(pad_rows(a, offset, halves(m, cut)), whole)


@settings(deadline=None, max_examples=20)
@given(st.integers(3, 70), sizes, dtypes)
def test_pad_rows_writes_only_its_rows(m, k, dtype):
    a = narrow(dtype, (m, k), seed=k)
    words = pad_rows(a, True, [(1, m - 1)])
    np.testing.assert_array_equal(words[1:-1], reference_a_words(a, True)[1:-1])
    assert np.all(words[[0, -1]].view(np.uint8) == SENTINEL)


@settings(deadline=None, max_examples=40)
@given(sizes, sizes, dtypes, panel_widths, st.floats(0, 1))
def test_packers_match_numpy_on_whole_and_split_ranges(k, n, dtype, panel_width, cut):
    b = narrow(dtype, (k, n), seed=k * 100 + n)
    count = k_words(k, dtype) if dtype == "bfloat16" else -(-n // panel_width)
    panels, correction = pack(b, panel_width, [(0, count)])
    expected_panels, expected_correction = reference_panels(b, panel_width, offset=dtype == "int8")
    np.testing.assert_array_equal(panels, expected_panels)
    np.testing.assert_array_equal(correction, expected_correction)
    split_panels, split_correction = pack(b, panel_width, halves(count, cut))
    np.testing.assert_array_equal(split_panels, panels)
    np.testing.assert_array_equal(split_correction, correction)


@settings(deadline=None, max_examples=20)
@given(st.integers(5, 70), st.integers(17, 70), dtypes)
def test_packers_write_only_their_range(k, n, dtype):
    """The bf16 packer's range is of word rows, the int8 packer's of column tiles."""
    b = narrow(dtype, (k, n), seed=n)
    panels, correction = pack(b, 16, [(1, 2)])
    expected_panels, expected_correction = reference_panels(b, 16, offset=dtype == "int8")
    owned = (slice(None), slice(1, 2)) if dtype == "bfloat16" else (slice(1, 2),)
    np.testing.assert_array_equal(panels[owned], expected_panels[owned])
    panels[owned] = SENTINEL * 0x01010101
    assert np.all(panels.view(np.uint8) == SENTINEL)
    if dtype == "int8":
        np.testing.assert_array_equal(correction[16:32], expected_correction[16:32])
        assert np.all(np.delete(correction, np.s_[16:32]).view(np.uint8) == SENTINEL)


@settings(deadline=None, max_examples=20)
@given(sizes, sizes, panel_widths)
def test_bf16_packer_from_float32_rounds_as_astype(k, n, panel_width):
    w = np.random.default_rng(k * 100 + n).normal(size=(k, n)).astype(np.float32)
    w.flat[:3] = [np.inf, -0.0, 1e-40][:w.size]
    rounded, _ = pack(w, panel_width, [(0, k_words(k, "bfloat16"))], source="float32")
    np.testing.assert_array_equal(rounded, reference_panels(w.astype(bfloat16), panel_width, offset=False)[0])


# ----------------------------------------------------------------------------- through the GEMM

def compile_gemm(m, n, k, dtype, portable):
    compile_ = gemm_lowp.compile_gemm_int8 if dtype == "int8" else gemm_lowp.compile_gemm_bf16
    return compile_(m, n, k, portable=portable or None)


@settings(deadline=None, max_examples=16)
@given(sizes, sizes, sizes, dtypes, st.booleans())
def test_prepared_operands_and_gemm_match_numpy(m, n, k, dtype, portable):
    a, b = narrow(dtype, (m, k), seed=1), narrow(dtype, (k, n), seed=2)
    kernel = compile_gemm(m, n, k, dtype, portable)
    words, prepared = kernel.prepare_a(a), kernel.prepare_b(b)
    assert words.shape == (m, k_words(k, dtype)) and words.dtype == kernel.product.dtype
    np.testing.assert_array_equal(words.view(np.uint32), reference_a_words(a, kernel.offsets_activations))
    expected_panels, expected_correction = reference_panels(b, kernel.panel_width, kernel.offsets_activations)
    np.testing.assert_array_equal(prepared.words.view(np.uint32), expected_panels)
    np.testing.assert_array_equal(prepared.column_correction, expected_correction)
    out = kernel.run_words(words, prepared)
    if dtype == "int8":
        np.testing.assert_array_equal(out, a.astype(np.int32) @ b.astype(np.int32))
    else:
        wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
        bound = k * np.finfo(np.float32).eps * (np.abs(wide_a) @ np.abs(wide_b)) + 1e-30
        assert out.dtype == np.float32 and np.all(np.abs(out - wide_a @ wide_b) <= bound)


@pytest.mark.parametrize("dtype", ["bfloat16", "int8"])
@pytest.mark.parametrize("portable", [False, True])
def test_prepare_on_two_threads_matches_one(dtype, portable, monkeypatch):
    monkeypatch.setattr(gemm_lowp, "PASS_MIN_ELEMENTS_PER_THREAD", 1)     # split even these small passes
    m, n, k = 150, 130, 67
    a, b = narrow(dtype, (m, k), seed=3), narrow(dtype, (k, n), seed=4)
    kernel = compile_gemm(m, n, k, dtype, portable)
    np.testing.assert_array_equal(kernel.prepare_a(a, threads=2), kernel.prepare_a(a))
    one, two = kernel.prepare_b(b), kernel.prepare_b(b, threads=2)
    np.testing.assert_array_equal(two.words, one.words)
    np.testing.assert_array_equal(two.column_correction, one.column_correction)


@pytest.mark.parametrize("dtype", ["bfloat16", "int8"])
def test_native_passes_describe_their_calls(dtype):
    """a_padder / b_packer give what a caller outside Python needs: calling the address with
    the named arrays and the sizes makes what prepare_a / prepare_b return."""
    import ctypes
    m, n, k = 5, 50, 7
    a, b = narrow(dtype, (m, k), seed=5), narrow(dtype, (k, n), seed=6)
    kernel = compile_gemm(m, n, k, dtype, portable=False)
    arrays = {"a": a, "b": b, "words": filled((m, kernel.k_words), np.uint32),
              "correction": filled(n, np.int32)}
    padder = kernel.a_padder()
    arrays_b = dict(arrays, words=filled(kernel.panels_shape, np.uint32))
    for native_pass, arrays_of_pass in [(padder, arrays), (kernel.b_packer(), arrays_b)]:
        signature = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(native_pass.pointers),
                                     *[ctypes.c_int64] * (len(native_pass.sizes) + 2))
        run_pass(signature(native_pass.address), [arrays_of_pass[name] for name in native_pass.pointers],
                 native_pass.sizes, [(0, native_pass.count)])
    np.testing.assert_array_equal(arrays["words"], kernel.prepare_a(a).view(np.uint32))
    prepared = kernel.prepare_b(b)
    np.testing.assert_array_equal(arrays_b["words"], prepared.words.view(np.uint32))
    # Only int8 on a host whose product offsets the activations (unsigned by signed) has a
    # correction; bfloat16, and int8 multiplied signed by signed, have none.
    if kernel.offsets_activations:
        np.testing.assert_array_equal(arrays["correction"], prepared.column_correction)
    else:
        assert prepared.column_correction is None
