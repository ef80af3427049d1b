"""The persistent compilation cache: reuse across processes, and every way an entry can be bad."""
import dataclasses
import json
import logging
import os
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import jaxlite
import jaxlite.numpy as jnp
from jaxlite.lower import disk_cache, program_cache
from jaxlite.transforms import jit as jit_module

ROOT = Path(__file__).resolve().parent.parent

# A dense layer: its dot runs on a GEMM kernel (an entry of its own), the rest in a fused kernel.
_PROGRAM = """
import json, sys
import numpy as np
import jaxlite, jaxlite.numpy as jnp
from jaxlite.lower import disk_cache
from jaxlite.transforms import jit as jit_module

layer = jaxlite.jit(lambda x, w, b: jnp.tanh(x @ w + b).sum(axis=0))
rng = np.random.default_rng(0)
x, w, b = (rng.normal(size=s).astype(np.float32) for s in ((32, 48), (48, 40), (40,)))
out = np.asarray(layer(x, w, b))
print(json.dumps({"out": out.tolist(), "compiles": jit_module.compile_count(), "disk": disk_cache.stats}))
"""


def _run_process(cache_dir):
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT), JAX_LOG_COMPILES="1")
    done = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_second_process_loads_instead_of_compiling(tmp_path):
    cache_dir = tmp_path / "cache"
    first, first_log = _run_process(cache_dir)
    second, second_log = _run_process(cache_dir)
    assert first["disk"]["misses"] >= 2 and first["disk"]["writes"] >= 2      # the program and its GEMM
    assert "Persistent compilation cache hit" not in first_log
    assert second["disk"]["hits"] >= 2
    assert second["disk"]["misses"] == second["disk"]["writes"] == second["disk"]["rejected"] == 0
    assert "Persistent compilation cache hit for jit(<lambda>)" in second_log
    np.testing.assert_array_equal(first["out"], second["out"])
    assert cache_dir.stat().st_mode & 0o777 == 0o700


def _run_without_compilation_cache(kernel_dir):
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    env.update(JAXLITE_KERNEL_CACHE_DIR=str(kernel_dir), PYTHONPATH=str(ROOT))
    program = _PROGRAM.replace('"disk": disk_cache.stats', '"disk": disk_cache.stats, "kernels": disk_cache.kernel_stats')
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_kernels_are_kept_without_a_compilation_cache(tmp_path):
    """jaxlite's own code (GEMM family, trampoline) goes to the kernel directory; programs do not."""
    kernel_dir = tmp_path / "kernels"
    first, second = _run_without_compilation_cache(kernel_dir), _run_without_compilation_cache(kernel_dir)
    assert first["kernels"]["writes"] >= 2 and first["kernels"]["hits"] == 0
    assert second["kernels"]["hits"] == first["kernels"]["writes"] and second["kernels"]["writes"] == 0
    assert first["disk"] == second["disk"] == {"hits": 0, "misses": 0, "writes": 0, "rejected": 0}
    assert {path.name.split("-")[0] for path in kernel_dir.iterdir() if not path.name.startswith(".")} == \
        {"gemm", "helper"}
    np.testing.assert_array_equal(first["out"], second["out"])
    assert kernel_dir.stat().st_mode & 0o777 == 0o700


def test_an_empty_kernel_directory_setting_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.KERNEL_CACHE_VARIABLE, "")
    previous = jaxlite.config.jax_compilation_cache_dir
    jaxlite.config.update("jax_compilation_cache_dir", None)
    try:
        assert disk_cache.kernel_directory() is None
        monkeypatch.setenv(disk_cache.KERNEL_CACHE_VARIABLE, str(tmp_path / "kernels"))
        assert disk_cache.kernel_directory() == tmp_path / "kernels"
    finally:
        jaxlite.config.update("jax_compilation_cache_dir", previous)


# ---------------------------------------------------------------- in one process

@contextmanager
def _cache_directory(path):
    """Use `path` as the cache directory, then restore the setting (JAX_COMPILATION_CACHE_DIR
    may be set for the whole suite)."""
    previous = jaxlite.config.jax_compilation_cache_dir
    jaxlite.config.update("jax_compilation_cache_dir", str(path))
    try:
        yield
    finally:
        jaxlite.config.update("jax_compilation_cache_dir", previous)


@pytest.fixture
def cache_dir(tmp_path):
    """A fresh private cache directory for one test; memory caches cleared around it."""
    path = tmp_path / "cache"
    jit_module.clear_caches()
    with _cache_directory(path):
        yield path
    jit_module.clear_caches()


def _f(x):
    return jnp.sin(x) * 2.0 + x


_X = np.linspace(-2, 2, 37, dtype=np.float32)


def _call_fresh():
    """Call a new jitted function (nothing in memory), return (result, compiled?)."""
    jit_module.clear_caches()
    hits = disk_cache.stats["hits"]
    out = np.asarray(jaxlite.jit(_f)(_X))
    return out, disk_cache.stats["hits"] == hits


def _program_entry(cache_dir):
    (entry,) = cache_dir.glob("program-*")
    return entry


def test_entry_is_reused_in_process(cache_dir):
    out, compiled = _call_fresh()
    assert compiled
    again, compiled = _call_fresh()
    assert not compiled
    np.testing.assert_array_equal(out, again)
    np.testing.assert_allclose(out, np.sin(_X) * 2 + _X, rtol=1e-6)


def test_a_program_compiled_in_pieces_round_trips(cache_dir, monkeypatch):
    from jaxlite.lower import llvm_target
    monkeypatch.setattr(llvm_target, "SPLIT_MIN_INSTRUCTIONS", 0)
    x = np.linspace(-1, 1, 24 * 16, dtype=np.float32).reshape(24, 16)

    def f(v):
        h = jnp.tanh(v @ v.T) + jnp.max(v)
        return jnp.sum(jnp.exp(h) * h, axis=1), jnp.cumsum(jnp.sin(h), axis=0)
    first = [np.asarray(r) for r in jaxlite.jit(f)(x)]
    jit_module.clear_caches()
    restored = []
    restore = program_cache._restore_code
    monkeypatch.setattr(program_cache, "_restore_code", lambda code: restored.append(code) or restore(code))
    again = [np.asarray(r) for r in jaxlite.jit(f)(x)]
    assert max(len(code["objects"]) for code in restored) > 1
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


def _flip_bytes(data):
    data = bytearray(data)
    middle = len(data) - 40
    data[middle:middle + 8] = bytes(b ^ 0xFF for b in data[middle:middle + 8])
    return bytes(data)


@pytest.mark.parametrize("damage, reason", [
    (_flip_bytes, "authentication failed"),
    (lambda data: data[:len(data) // 2], "truncated"),
    (lambda data: data[:10], "truncated header"),
    (lambda data: b"", "truncated header"),
])
def test_damaged_entry_is_recompiled(cache_dir, caplog, damage, reason):
    expected, _ = _call_fresh()
    entry = _program_entry(cache_dir)
    entry.write_bytes(damage(entry.read_bytes()))
    with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        out, compiled = _call_fresh()
    assert compiled
    assert any(reason in r.getMessage() and "recompiling" in r.getMessage() for r in caplog.records)
    np.testing.assert_array_equal(out, expected)
    disk_cache.decode(entry.read_bytes())       # rewritten whole
    assert not _call_fresh()[1]


def _rewrite_header(data, **fields):
    magic, version, environment, length, checksum = disk_cache._HEADER.unpack_from(data)
    values = dict(magic=magic, version=version, environment=environment, length=length, checksum=checksum)
    values.update(fields)
    header = disk_cache._HEADER.pack(*values.values())
    return header + data[disk_cache._HEADER.size:]


@pytest.mark.parametrize("fields, reason", [
    ({"version": disk_cache.FORMAT_VERSION + 1}, "entry format"),
    ({"environment": b"\0" * 32}, "another CPU"),
    ({"magic": b"ELF\0"}, "not a jaxlite cache entry"),
])
def test_foreign_entry_is_ignored(cache_dir, caplog, fields, reason):
    expected, _ = _call_fresh()
    entry = _program_entry(cache_dir)
    entry.write_bytes(_rewrite_header(entry.read_bytes(), **fields))
    with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        out, compiled = _call_fresh()
    assert compiled
    assert any(reason in r.getMessage() for r in caplog.records)
    np.testing.assert_array_equal(out, expected)


def test_entry_that_fails_to_restore_is_recompiled(cache_dir, caplog):
    expected, _ = _call_fresh()
    entry = _program_entry(cache_dir)
    entry.write_bytes(disk_cache.encode(b"not a pickle"))    # valid header and checksum
    with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        out, compiled = _call_fresh()
    assert compiled and any("cannot be restored" in r.getMessage() for r in caplog.records)
    np.testing.assert_array_equal(out, expected)


# ---------------------------------------------------------------- attacks: nothing planted is unpickled

class _Payload:
    """Unpickling this creates `marker`: it stands for any code a forged pickle would run."""
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def _forged_entry(marker):
    """An entry holding a pickle that runs code, authenticated with this directory's key
    (as if the attacker had the key: the file checks must stop it on their own)."""
    return disk_cache.encode(program_cache.dumps(_Payload(marker)))


def _plant_symlink(entry, marker, tmp_path):
    outside = tmp_path / "outside"
    outside.write_bytes(_forged_entry(marker))
    entry.unlink()
    entry.symlink_to(outside)


def _plant_writable(entry, marker, tmp_path):
    entry.write_bytes(_forged_entry(marker))
    entry.chmod(0o666)


def _plant_group_writable(entry, marker, tmp_path):
    entry.write_bytes(_forged_entry(marker))
    entry.chmod(0o620)


def _plant_foreign_owned(entry, marker, tmp_path):
    if os.getuid() != 0:
        pytest.skip("changing a file's owner needs root")
    entry.write_bytes(_forged_entry(marker))
    os.chown(entry, 54321, 54321)
    entry.chmod(0o600)


def _plant_directory(entry, marker, tmp_path):
    entry.unlink()
    entry.mkdir()


def _plant_fifo(entry, marker, tmp_path):
    entry.unlink()
    os.mkfifo(entry, 0o600)


def _plant_keyless_forgery(entry, marker, tmp_path):
    """Bytes with a right header and a plain sha256 where the HMAC goes: what anyone who
    cannot read the key file could make."""
    import hashlib
    payload = program_cache.dumps(_Payload(marker))
    fields = disk_cache._FIELDS.pack(disk_cache.MAGIC, disk_cache.FORMAT_VERSION,
                                     disk_cache.environment_digest(), len(payload))
    entry.write_bytes(fields + hashlib.sha256(payload).digest() + payload)


@pytest.mark.parametrize("plant, reason", [
    (_plant_symlink, "symbolic link"),
    (_plant_writable, "writable by group or others"),
    (_plant_group_writable, "writable by group or others"),
    (_plant_foreign_owned, "owned by another user"),
    (_plant_directory, "not a regular file"),
    (_plant_fifo, "not a regular file"),
    (_plant_keyless_forgery, "authentication failed"),
])
def test_planted_entry_is_never_unpickled(cache_dir, tmp_path, caplog, plant, reason):
    expected, _ = _call_fresh()
    marker = tmp_path / "pwned"
    plant(_program_entry(cache_dir), marker, tmp_path)
    with caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        out, compiled = _call_fresh()
    assert not marker.exists(), "a planted pickle ran"
    assert compiled
    assert any(reason in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]
    np.testing.assert_array_equal(out, expected)


def test_the_forged_payload_does_run_when_trusted(cache_dir, tmp_path):
    """The attack tests' payload is live: a genuine private entry holding it is unpickled."""
    _call_fresh()
    marker = tmp_path / "pwned"
    _program_entry(cache_dir).write_bytes(_forged_entry(marker))
    _call_fresh()
    assert marker.exists()


def test_key_file_is_private_and_shared_by_processes(cache_dir):
    _call_fresh()
    key_file = cache_dir / disk_cache.KEY_FILE
    assert key_file.stat().st_mode & 0o777 == 0o600
    disk_cache._keys.clear()                  # as a fresh process: the same key is read back
    assert not _call_fresh()[1]


@pytest.mark.parametrize("spoil, reason", [
    (lambda key_file, tmp_path: key_file.chmod(0o644), "others can read it"),
    (lambda key_file, tmp_path: key_file.chmod(0o620), "writable by group or others"),
    (lambda key_file, tmp_path: (key_file.unlink(), (tmp_path / "k").write_bytes(b"k" * 32),
                                 key_file.symlink_to(tmp_path / "k")), "symbolic link"),
    (lambda key_file, tmp_path: key_file.write_bytes(b"short"), "holds 5 bytes"),
])
def test_unsafe_key_file_refuses_the_directory(tmp_path, caplog, spoil, reason):
    path = tmp_path / "cache"
    with _cache_directory(path):
        assert disk_cache.directory() == path
    spoil(path / disk_cache.KEY_FILE, tmp_path)
    disk_cache._keys.clear()
    with _cache_directory(path), caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        assert disk_cache.directory() is None
    assert any(reason in r.getMessage() and disk_cache.KEY_FILE in r.getMessage() for r in caplog.records)


def test_entry_keys_are_plain_file_names(cache_dir):
    for key in ("../program-x", "a/b", ".hmac-key", ""):
        with pytest.raises(ValueError, match="plain file name"):
            disk_cache.read(key)


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777])
def test_shared_directory_is_refused(tmp_path, caplog, mode):
    shared = tmp_path / f"shared{mode:o}"
    shared.mkdir()
    shared.chmod(mode)
    with _cache_directory(shared), caplog.at_level(logging.WARNING, logger="jaxlite.jit"):
        out, compiled = _call_fresh()
    assert compiled
    assert any("writable by group or others" in r.getMessage() for r in caplog.records)
    assert list(shared.iterdir()) == []
    np.testing.assert_allclose(out, np.sin(_X) * 2 + _X, rtol=1e-6)


def test_missing_directory_is_created_private(tmp_path):
    path = tmp_path / "a" / "b"
    with _cache_directory(path):
        assert disk_cache.directory() == path
    assert path.stat().st_mode & 0o777 == 0o700


def test_concurrent_writers_leave_one_whole_entry(cache_dir):
    payloads = [bytes([i]) * (200_000 + i) for i in range(6)]
    seen, errors = [], []
    rejected = disk_cache.stats["rejected"]

    def writer(payload):
        for _ in range(15):
            disk_cache.write("program-race", payload)

    def reader():
        for _ in range(60):
            try:
                data = disk_cache.read("program-race")
            except Exception as err:       # noqa: BLE001 (collected for the assertion)
                errors.append(err)
                return
            if data is not None:
                seen.append(data)

    threads = [threading.Thread(target=writer, args=(p,)) for p in payloads]
    threads.append(threading.Thread(target=reader))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and disk_cache.stats["rejected"] == rejected
    assert all(data in payloads for data in seen)
    assert disk_cache.read("program-race") in payloads
    assert sorted(p.name for p in cache_dir.iterdir()) == [disk_cache.KEY_FILE, "program-race"]  # no temporaries


def test_key_depends_on_values_and_options():
    closed = jaxlite.make_jaxpr(_f)(_X)
    other_literal = jaxlite.make_jaxpr(lambda x: jnp.sin(x) * 3.0 + x)(_X)
    other_shape = jaxlite.make_jaxpr(_f)(_X[:5])
    keys = {program_cache.program_key(c, "f") for c in (closed, other_literal, other_shape)}
    assert len(keys) == 3
    assert program_cache.program_key(closed, "f") == program_cache.program_key(jaxlite.make_jaxpr(_f)(_X), "f")
    assert program_cache.program_key(closed, "f") != program_cache.program_key(closed, "g")


def test_parameters_without_canonical_text_are_not_cached():
    class Opaque:
        pass
    text = program_cache._Canonicalizer([])
    with pytest.raises(program_cache.Uncacheable):
        text.value(Opaque())
    with pytest.raises(program_cache.Uncacheable):
        text.value(lambda: None)


def test_parameter_texts_are_exact():
    @dataclasses.dataclass(frozen=True)
    class Numbers:
        axes: tuple
        dtype: np.dtype

    text = program_cache._Canonicalizer([])
    assert text.value(Numbers((0, 1), np.dtype("float32"))) != text.value(Numbers((0, 2), np.dtype("float32")))
    assert text.value({"b": 1, 2: "a"}) == text.value({2: "a", "b": 1})
    assert text.value(1) != text.value(1.0) != text.value(True)
    assert text.value(np.float32(0.1)) != text.value(np.float64(0.1))


# ---------------------------------------------------------------- pruning the kernel directory

_DAY = 24 * 3600


def _kernel_entries(root, monkeypatch, environments):
    """Entries written under each environment digest in `environments` (name -> digest)."""
    for name, environment in environments.items():
        monkeypatch.setattr(disk_cache, "environment_digest", lambda environment=environment: environment)
        disk_cache.write(disk_cache.make_key("helper", name.encode()), b"payload of " + name.encode(), root)
    monkeypatch.undo()
    return {path.name: path for path in root.iterdir() if not path.name.startswith(".")}


def _age(path, days):
    when = path.stat().st_mtime - days * _DAY
    os.utime(path, (when, when), follow_symlinks=False)


def test_prune_deletes_unused_foreign_and_long_unused_entries_only(tmp_path, monkeypatch):
    root = tmp_path / "kernels"
    monkeypatch.setenv(disk_cache.KERNEL_CACHE_VARIABLE, str(root))
    assert disk_cache.kernel_directory() == root
    current, foreign = disk_cache.environment_digest(), b"\x01" * 32
    entries = _kernel_entries(root, monkeypatch, {"fresh_foreign": foreign})
    (fresh_foreign,) = entries.values()
    old_foreign, recent_current, old_current, ancient_current = (
        root / disk_cache.make_key("helper", name.encode()) for name in ("a", "b", "c", "d"))
    old_foreign.write_bytes(fresh_foreign.read_bytes())
    for path in (recent_current, old_current, ancient_current):
        disk_cache.write(path.name, b"ours", root)
    _age(old_foreign, 2)
    _age(old_current, 2)
    _age(ancient_current, 31)
    stray = root / ".program-0123-abcd.tmp"        # an interrupted writer's temporary
    stray.write_bytes(b"")
    _age(stray, 1)
    foreign_file = root / "notes.txt"              # not named as entries are: never deleted
    foreign_file.write_bytes(b"")
    _age(foreign_file, 40)
    link = root / "helper-link"
    link.symlink_to(old_foreign)
    _age(link, 40)
    removed = disk_cache.prune(root)
    assert sorted(removed) == sorted([old_foreign.name, ancient_current.name, stray.name])
    assert all(p.exists() for p in (fresh_foreign, recent_current, old_current, foreign_file))
    assert link.is_symlink() and (root / disk_cache.KEY_FILE).exists()
    assert current == disk_cache.environment_digest()


def test_a_hit_renews_an_entry_and_pruning_runs_once_a_day(tmp_path, monkeypatch):
    root = tmp_path / "kernels"
    monkeypatch.setenv(disk_cache.KERNEL_CACHE_VARIABLE, str(root))
    root = disk_cache.kernel_directory()
    key = disk_cache.make_key("helper", b"renewed")
    disk_cache.write(key, b"ours", root)
    _age(root / key, 40)
    assert disk_cache.read(key, root) == b"ours"
    assert disk_cache.prune(root) == []                  # the hit made it recent
    marker = root / disk_cache.PRUNE_MARKER
    assert marker.exists()                               # the write pruned, and left the marker
    _age(root / key, 40)
    disk_cache.write(disk_cache.make_key("helper", b"second"), b"ours", root)
    assert (root / key).exists()                         # pruned less than a day ago: not again
    _age(marker, 2)
    disk_cache.write(disk_cache.make_key("helper", b"third"), b"ours", root)
    assert not (root / key).exists()
