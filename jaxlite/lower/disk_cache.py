"""The persistent compilation cache: entries of executable code in a private directory.

Enabled by `config.update("jax_compilation_cache_dir", path)` or the environment
variable JAX_COMPILATION_CACHE_DIR. This module is the storage layer: what a key
covers, the entry format, and the safety rules; program_cache.py decides what is
stored under which key.

An entry file is a header followed by a cloudpickle payload:

    magic  b"JXLC" | format version (u16) | environment digest (32 bytes)
    | payload length (u64) | keyed BLAKE2b-256 of header fields and payload (32 bytes) | payload

The environment digest names everything the machine code depends on besides the
program itself: host CPU name and feature string, LLVM and llvmlite versions, the
jaxlite version and a digest of its source files (a change to a lowering changes
the code it generates even when the version number stays), Python, numpy and
cloudpickle versions (the payload is a pickle). The digest is also part of every
key, so a foreign entry is only ever seen when a file was copied or tampered with;
it is checked anyway, because entries hold code that will be jumped to. A short,
corrupt or foreign entry is never executed: it is reported with a warning, and the
caller compiles and overwrites it.

Writes go to a temporary file in the same directory and are renamed into place
(os.replace is atomic), so concurrent writers and readers see either no entry or
a whole one.

Loading an entry runs code (machine code, and a pickle, which runs code when
loaded), so three walls stand between a file and execution:
- the directory: one writable by group or others, or owned by another user, is
  refused (with a warning, once) and the process runs without a disk cache;
- the file: opened with O_NOFOLLOW (a symlink is refused, wherever it points) and
  checked on the open descriptor (so it cannot be swapped after the check): a
  regular file, owned by this user, not writable by group or others;
- the bytes: the header carries a MAC under a random per-user key kept in the
  directory (`.hmac-key`, mode 0600, created on first use). A file this process
  did not write, copied or forged by anyone who cannot read that key, fails the
  check before a byte of it is unpickled. A key file that is unsafe (not a
  regular private file of this user) makes the directory refused.
"""
import errno
import functools
import importlib.util
import logging
import os
import platform
import re
import stat
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

from jaxlite.core.config import config

try:    # CPython's own BLAKE2 and constant-time comparison: hashlib and hmac load OpenSSL
        # first, ~5 ms CPU of a process's first jit (which reads the kernel directory)
    from _blake2 import blake2b
    from _operator import _compare_digest as compare_digest
except ImportError:
    from hashlib import blake2b
    from hmac import compare_digest

logger = logging.getLogger("jaxlite.jit")


def digest(data=b"", key=b""):
    """A 32-byte BLAKE2b hash of `data` (keyed: a MAC), to update with more."""
    return blake2b(data, digest_size=32, key=key)


MAGIC = b"JXLC"
FORMAT_VERSION = 4     # 4: entries authenticated by keyed BLAKE2b instead of HMAC-SHA256
KEY_FILE = ".hmac-key"
_KEY_BYTES = 32
_ENTRY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_FIELDS = struct.Struct("<4sH32sQ")          # what the MAC covers, with the payload
_HEADER = struct.Struct(_FIELDS.format + "32s")

# hits: entries loaded and restored; misses: absent; rejected: present but unusable.
stats = {"hits": 0, "misses": 0, "writes": 0, "rejected": 0}
_refused = set()      # directories already warned about


def directory():
    """The usable cache directory, or None (unset, or refused as unsafe)."""
    path = config.jax_compilation_cache_dir
    return _usable(Path(path).expanduser()) if path else None


# jaxlite's own machine code (depending on no user program: the GEMM kernel families, the
# call trampoline, the worker pool) is kept on disk even with no compilation cache
# configured, as the prebuilt kernels of a library are: without it every fresh process
# compiled ~60-90 ms of GEMM family before its first product (JAX's run prebuilt Eigen
# code) and ~25 ms of helpers before its first call; loading them takes ~1 ms.
KERNEL_CACHE_VARIABLE = "JAXLITE_KERNEL_CACHE_DIR"


def kernel_directory():
    """Where jaxlite's own machine code is stored: the compilation cache directory when one is
    configured, else $JAXLITE_KERNEL_CACHE_DIR (empty: none), by default
    $XDG_CACHE_HOME/jaxlite/kernels (~/.cache/jaxlite/kernels). The same rules as for the
    compilation cache keep foreign code out (a private directory, authenticated entries)."""
    configured = directory()
    if configured is not None or config.jax_compilation_cache_dir:
        return configured
    path = os.environ.get(KERNEL_CACHE_VARIABLE)
    if path is None:
        path = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jaxlite" / "kernels"
    return _usable(Path(path).expanduser()) if path else None


def _usable(path):
    reason = _unsafe_reason(path)
    if reason is None:
        try:
            _directory_key(path)
            return path
        except (BadEntry, OSError) as err:
            reason = f"its key file {KEY_FILE} is unusable ({err})"
    if str(path) not in _refused:
        _refused.add(str(path))
        logger.warning("jaxlite: not using the compilation cache directory %s: %s; "
                       "compiling without a disk cache", path, reason)
    return None


def _unsafe_reason(path):
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.stat()
    except OSError as err:
        return f"it cannot be created or read ({err})"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    if info.st_uid != os.getuid():
        return f"it is owned by another user (uid {info.st_uid}); it holds code this process runs"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"it is writable by group or others (mode {stat.S_IMODE(info.st_mode):o}); "
                f"it holds code this process runs, so make it private: chmod 700")
    return None


# ---------------------------------------------------------------- keys

_environment_lock = threading.Lock()


def environment_digest():
    """A digest of everything besides the program that the stored code depends on. Computed
    once: the warm-up thread and a first call made at once both ask (each computing it cost
    ~1.7 ms more CPU)."""
    with _environment_lock:
        return _environment_digest()


@functools.lru_cache(maxsize=None)
def _environment_digest():
    import llvmlite
    import llvmlite.binding as llvm
    import numpy as np

    import jaxlite
    from jaxlite.lower import llvm_target
    parts = [f"cpu={llvm_target.host_cpu_name()}", f"features={llvm_target.host_cpu_features()}",
             f"llvm={llvm.llvm_version_info}", f"llvmlite={llvmlite.__version__}",
             f"jaxlite={jaxlite.__version__}", f"source={_source_digest()}",
             f"python={platform.python_implementation()} {sys.version_info[:3]}",
             f"numpy={np.__version__}", f"cloudpickle={_file_stamp('cloudpickle')}"]
    return digest("\n".join(parts).encode()).digest()


def _file_stamp(module_name):
    """Where a module's file is, its size and modification time: its version, without the
    import (cloudpickle's takes ~3 ms, and a process that only loads entries needs none)."""
    origin = importlib.util.find_spec(module_name).origin
    info = os.stat(origin)
    return f"{origin}:{info.st_size}:{info.st_mtime_ns}"


def _source_digest():
    """A digest of jaxlite's source files, by name, size and modification time (as Python's
    bytecode cache tells a changed source file): reading and hashing every file took ~13 ms,
    paid before a fresh process's first call could load anything (os.walk and relpath ~2.5 ms,
    os.scandir ~0.8)."""
    stamps = []
    _stamp_sources(Path(__file__).resolve().parent.parent, "", stamps)
    return digest("".join(stamps).encode()).hexdigest()


def _stamp_sources(directory_path, prefix, stamps):
    for entry in sorted(os.scandir(directory_path), key=lambda entry: entry.name):
        if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
            _stamp_sources(entry.path, f"{prefix}{entry.name}/", stamps)
        elif entry.name.endswith(".py"):
            info = entry.stat()
            stamps.append(f"{prefix}{entry.name}\0{info.st_size}\0{info.st_mtime_ns}\0")


def make_key(kind, *parts):
    """A file name: a digest of the environment, the kind of entry and its parts (bytes)."""
    key = digest(environment_digest())
    key.update(kind.encode() + b"\0")
    for part in parts:
        key.update(len(part).to_bytes(8, "little") + part)
    return f"{kind}-{key.hexdigest()}"


# ---------------------------------------------------------------- the key and private files

_keys = {}            # directory -> its MAC key, read or created once per process


def _directory_key(root):
    key = _keys.get(str(root))
    if key is None:
        key = _keys[str(root)] = _read_or_create_key(root / KEY_FILE)
    return key


def _read_or_create_key(path):
    """The key in `path`; created first if absent. The new key is written to a private
    temporary file and linked into place, so concurrent creators agree on one key and no
    reader ever sees a partly written one."""
    if not os.path.lexists(path):
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".key-", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(os.urandom(_KEY_BYTES))
            os.link(temporary, path)
        except FileExistsError:
            pass                                  # another process made it first: use theirs
        finally:
            os.unlink(temporary)
    key, info = _read_private_file(path)
    if info.st_mode & 0o077:
        raise BadEntry(f"mode {stat.S_IMODE(info.st_mode):o}: others can read it; it must be 600")
    if len(key) != _KEY_BYTES:
        raise BadEntry(f"it holds {len(key)} bytes, not {_KEY_BYTES}")
    return key


def _read_private_file(path, touch=False):
    """(bytes, stat) of `path` if it is a regular file of this user that nobody else can
    write, else BadEntry. Checked on the open descriptor, so the file cannot be swapped
    between the check and the read; O_NONBLOCK keeps a FIFO planted there from blocking.
    `touch`: its modification time becomes now (an entry's last use, for `prune`)."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise BadEntry("it is a symbolic link") from None
        raise
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise BadEntry("it is not a regular file")
        if info.st_uid != os.getuid():
            raise BadEntry(f"it is owned by another user (uid {info.st_uid})")
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise BadEntry(f"it is writable by group or others (mode {stat.S_IMODE(info.st_mode):o})")
    except BaseException:
        os.close(handle)
        raise
    with os.fdopen(handle, "rb") as file:
        if touch:
            _renew(handle)
        return file.read(), info


def _renew(handle):
    try:
        os.utime(handle)
    except OSError:
        pass                    # (a read-only file system: the entry just ages)


# ---------------------------------------------------------------- entries

class BadEntry(Exception):
    """An entry that must not be used; the message says why."""


def _authenticator(fields, payload, root=None):
    root = root or directory()
    if root is None:
        raise BadEntry("no usable cache directory")
    mac = digest(key=_directory_key(root))
    mac.update(fields)
    mac.update(payload)
    return mac.digest()


def encode(payload, root=None):
    """An entry's bytes; authenticated with the key of `root` (default: the cache directory)."""
    fields = _FIELDS.pack(MAGIC, FORMAT_VERSION, environment_digest(), len(payload))
    return fields + _authenticator(fields, payload, root) + payload


def decode(data, root=None):
    """The payload of an entry file's bytes, or BadEntry."""
    if len(data) < _HEADER.size:
        raise BadEntry("truncated header")
    magic, version, environment, length, mac = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise BadEntry("not a jaxlite cache entry")
    if version != FORMAT_VERSION:
        raise BadEntry(f"entry format {version}, this jaxlite reads {FORMAT_VERSION}")
    if environment != environment_digest():
        raise BadEntry("made for another CPU, LLVM, Python or jaxlite version")
    payload = data[_HEADER.size:]
    if len(payload) != length:
        raise BadEntry(f"payload of {len(payload)} bytes, header says {length} (truncated?)")
    if not compare_digest(_authenticator(data[:_FIELDS.size], payload, root), mac):
        raise BadEntry("authentication failed (corrupt, or not written by this user's jaxlite)")
    return payload


def read(key, root=None):
    """The verified payload stored under `key` in `root` (default: the cache directory), or
    None (absent, refused or bad)."""
    root = root or directory()
    if root is None:
        return None
    path = _entry_path(root, key)
    try:
        data, _ = _read_private_file(path, touch=True)
        return decode(data, root)
    except FileNotFoundError:
        counts_of(root)["misses"] += 1
    except BadEntry as err:
        reject(key, err, root)
    except OSError as err:
        logger.warning("jaxlite: cannot read cache entry %s (%s); recompiling", path, err)
        counts_of(root)["misses"] += 1
    return None


# The kernel directory's own counts, when it is not the compilation cache (whose are `stats`).
kernel_stats = {"hits": 0, "misses": 0, "writes": 0, "rejected": 0}


def counts_of(root):
    return stats if root is None or root == directory() else kernel_stats


def _entry_path(root, key):
    """The entry's path; a key is a plain file name, so every entry stays inside `root`."""
    if not _ENTRY_NAME.match(key):
        raise ValueError(f"cache entry key {key!r} is not a plain file name")
    return root / key


def reject(key, reason, root=None):
    """Count and report an entry that cannot be used; the caller recompiles over it."""
    counts_of(root)["rejected"] += 1
    logger.warning("jaxlite: ignoring compilation cache entry %s: %s; recompiling", key, reason)


def write(key, payload, root=None):
    """Store atomically: a temporary file in `root` (default: the cache directory), then
    renamed over `key`."""
    root = root or directory()
    if root is None:
        return
    try:
        handle, temporary = tempfile.mkstemp(dir=root, prefix=f".{key[:16]}-", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(encode(payload, root))
            os.replace(temporary, _entry_path(root, key))
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as err:
        logger.warning("jaxlite: cannot write cache entry %s (%s)", root / key, err)
        return
    counts_of(root)["writes"] += 1
    if root != directory():
        prune_now_and_then(root)


# ---------------------------------------------------------------- pruning the kernel directory

# The kernel directory fills by itself: every change to jaxlite's source (or an upgrade of
# LLVM, numpy, Python) makes a new environment whose entries never match the old ones. So
# after a write (a compile took far longer) it is scanned, at most once a day: an entry of
# another environment unused for a day goes, and any entry unused for 30 days (a hit
# renews its modification time). An entry another process is reading stays readable (its
# file is open); one deleted just before a read is a miss, compiled again. Only regular files of
# this user named as make_key names entries are deleted, and stale temporaries of interrupted writers.
# The compilation cache directory the user configures is not pruned (JAX does not either).
PRUNE_INTERVAL = 24 * 3600
FOREIGN_UNUSED_FOR = 24 * 3600
UNUSED_FOR = 30 * 24 * 3600
_TEMPORARY_UNUSED_FOR = 3600
PRUNE_MARKER = ".last-pruned"
_MADE_KEY = re.compile(r"[a-z]+-[0-9a-f]{64}\Z")      # make_key's names: nothing else is deleted


def prune_now_and_then(root):
    """`prune(root)` unless it was done less than PRUNE_INTERVAL ago (the marker file's time)."""
    marker = root / PRUNE_MARKER
    try:
        if time.time() - os.stat(marker, follow_symlinks=False).st_mtime < PRUNE_INTERVAL:
            return
        os.unlink(marker)
    except FileNotFoundError:
        pass
    except OSError:
        return
    try:
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except OSError:
        return                  # another process made it first: it prunes
    prune(root)


def prune(root, now=None):
    """Delete the entries of `root` that `_is_stale`; returns their names."""
    now = time.time() if now is None else now
    removed = []
    for entry in os.scandir(root):
        try:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and _is_stale(entry, info, now):
                os.unlink(entry.path)
                removed.append(entry.name)
        except OSError:
            continue            # gone meanwhile, or not ours to read
    if removed:
        logger.debug("jaxlite: pruned %d unused entries from %s", len(removed), root)
    return removed


def _is_stale(entry, info, now):
    unused = now - info.st_mtime
    if entry.name.startswith(".") and entry.name.endswith(".tmp"):
        return unused >= _TEMPORARY_UNUSED_FOR
    if not _MADE_KEY.match(entry.name):
        return False
    return unused >= UNUSED_FOR or unused >= FOREIGN_UNUSED_FOR and not _of_this_environment(entry.path)


def _of_this_environment(path):
    """Whether the entry's header names this format and environment (read without following a link)."""
    handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(handle, "rb") as file:
        fields = file.read(_FIELDS.size)
    if len(fields) < _FIELDS.size:
        return False
    magic, version, environment, _ = _FIELDS.unpack(fields)
    return magic == MAGIC and version == FORMAT_VERSION and environment == environment_digest()
