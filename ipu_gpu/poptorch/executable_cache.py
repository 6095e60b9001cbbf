"""PopTorch's executables on disk: ``PoplarExecutor.compileAndExport`` / ``save``,
``poptorch.load``, ``PoplarExecutor.loadExecutable`` and ``Options.enableExecutableCaching``
(research/poptorch_semantics.md §3.2).

PopTorch writes a PopEF file: the Poplar executable followed by PopTorch's metadata (the
inputs the executable was compiled for, the options and, with ``export_model=True``, the
pickled model and optimizer). ipu_gpu compiles no executable: what it can reuse is the
metadata, so its file holds exactly that, in this layout:

* ``MAGIC`` (``b"IPU_GPU POPTORCH EXECUTABLE\\n"``);
* an 8-byte little-endian length, then that many bytes of UTF-8 JSON: the header
  (``format``, ``version``, ``kind`` ``"export"`` or ``"cache"``, ``training``, ``key``, the
  input signature as text, and whether the model is inside), readable without torch;
* the payload, written by ``torch.save``: ``{"executable_inputs": [(shape, dtype), ...],
  "input_template" (the call's arguments, tensors as ``TensorSpec``), "options":
  poptorch.Options, "training", "model" (the module, pickled), "state_dict" (the host
  weights at export), "optimizer" ((class, state, PopTorch attributes) or None)}``.

A file from another ipu_gpu version is refused with PopTorch's version-mismatch message; a
file that is not one of these (a real PopEF file included) is a ``poptorch.Error``. Reading
a file unpickles it (as PopTorch's ``poptorch.load`` does): load only files you trust.

The executable cache (``Options.enableExecutableCaching(path)`` or ``POPTORCH_CACHE_DIR``)
keeps one such file (without the model) per compiled executable in ``path``, named by a
hash of what PopTorch's executable depends on: the model's class, structure, weight shapes
and dtypes (not their values), the input signature, training or inference, the optimizer's
type and the options. A compilation whose entry exists reads it back and logs a cache hit
(``poptorch::python`` logger, INFO); since ipu_gpu compiles nothing, a hit saves no time.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import struct
import tempfile

import torch

from . import host_sync
from .errors import Error

__all__ = ["MAGIC", "TensorSpec", "cache_entry", "load", "read", "save"]

logger = logging.getLogger("poptorch::python")

MAGIC = b"IPU_GPU POPTORCH EXECUTABLE\n"
FORMAT = 1
_NO_EXPORTED_MODEL = (
    "{f} is a valid PopTorch file but was created with 'export_model=False' which means you "
    "need to re-create the PopTorch model using poptorch.inferenceModel or "
    "poptorch.trainingModel then call poptorch_model.loadExecutable(\"{f}\").")


def version() -> str:
    """The version a file records (files from other versions are refused, as PopTorch
    refuses files of another PopTorch version)."""
    import ipu_gpu

    return f"ipu_gpu {ipu_gpu.__version__} (PopTorch 3.4 API)"


# ---- the file --------------------------------------------------------------------------------
class TensorSpec:
    """A tensor argument of the compiled call: its shape and dtype (the saved inputs)."""

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = dtype

    @classmethod
    def of(cls, tensor) -> TensorSpec:
        return cls(tensor.shape, tensor.dtype)

    def zeros(self):
        return torch.zeros(self.shape, dtype=self.dtype)

    def __repr__(self):
        return f"TensorSpec({list(self.shape)}, {self.dtype})"


def example_inputs(template):
    """The saved call's arguments with a zero tensor for every ``TensorSpec``."""
    if isinstance(template, TensorSpec):
        return template.zeros()
    if isinstance(template, tuple) and hasattr(template, "_fields"):
        return type(template)(*[example_inputs(v) for v in template])
    if isinstance(template, (list, tuple)):
        return type(template)(example_inputs(v) for v in template)
    if isinstance(template, dict):
        return {k: example_inputs(v) for k, v in template.items()}
    return template


def _signature_text(signature) -> list:
    return [f"{str(dtype).replace('torch.', '')}{list(shape)}" for shape, dtype in signature]


def _optimizer_record(optimizer):
    if optimizer is None:
        return None
    skip = {"defaults", "state", "param_groups"}
    extras = {k: v for k, v in vars(optimizer).items()
              if not k.startswith("_") and k not in skip and not callable(v)}
    return type(optimizer), optimizer.__getstate__(), extras


def _optimizer_from_record(record):
    if record is None:
        return None
    cls, state, extras = record
    optimizer = cls.__new__(cls)
    optimizer.__setstate__(dict(state))
    optimizer.__dict__.update(extras)
    return optimizer


def _write(filename, header: dict, payload: dict) -> None:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    head = json.dumps(header, sort_keys=True).encode()
    directory = os.path.dirname(os.path.abspath(filename))
    # write then rename, so that a reader (another process sharing a cache) never sees half
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".popef")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC)
            f.write(struct.pack("<Q", len(head)))
            f.write(head)
            f.write(buffer.getvalue())
        os.replace(tmp, filename)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read(filename: str):
    """``(header, payload)`` of a file written by :func:`save` (or a cache entry).

    Raises:
      poptorch.Error: the file is not one (wrong header, truncated, unreadable payload)."""
    with open(filename, "rb") as f:
        blob = f.read()
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + 8:
        raise Error(f"Invalid file {filename}: it is not a PopTorch executable exported by "
                    "ipu_gpu (PoplarExecutor.compileAndExport / save). A PopEF file from "
                    "Graphcore's PopTorch holds a Poplar executable, which ipu_gpu cannot "
                    "run: export the model again under ipu_gpu.")
    start = len(MAGIC) + 8
    (length,) = struct.unpack("<Q", blob[len(MAGIC):start])
    try:
        header = json.loads(blob[start:start + length].decode())
        payload = torch.load(io.BytesIO(blob[start + length:]), weights_only=False)
    except Exception as err:  # noqa: BLE001 - any decoding failure means a damaged file
        raise Error(f"Invalid file {filename}: the ipu_gpu PopTorch executable is damaged "
                    f"({type(err).__name__}: {err})") from None
    return header, payload


def _parse(header: dict, payload: dict) -> dict:
    """The payload, checked as PopTorch's ``_poptorch_data.parse`` checks (AssertionError),
    with its options made usable again: unfrozen, the offline-target settings dropped."""
    assert header.get("version") == version(), (
        "PopTorch version mismatch: File was created with version: "
        f"{header.get('version')} and this is version {version()}")
    assert payload.get("executable_inputs") and "input_template" in payload, (
        "Executable inputs are missing")
    options = payload.get("options")
    if options is not None:
        from .enums import ConnectionType

        options._unfreeze()
        options.deleteIfExists("ipu_version")
        if options.connection_type == ConnectionType.Never.value:
            options.connectionType(ConnectionType.Always)
    return payload


def save(executor, filename: str, export_model: bool = True, rng_state=None) -> str:
    """Write ``executor``'s compiled executable (and with ``export_model`` its model and
    optimizer, and ``rng_state`` unless None) to ``filename``; a directory gets
    ``model.poptorch`` inside (with a warning, as PopTorch). Returns the path written."""
    dst_dir = os.path.dirname(filename)
    if dst_dir:
        if os.path.exists(dst_dir):
            assert os.path.isdir(dst_dir), f"Destination folder {dst_dir} is not a directory"
        else:
            os.makedirs(dst_dir)
    if os.path.isdir(filename):
        dirname = filename
        filename = os.path.join(dirname, "model.poptorch")
        logger.warning("save(): %s is a directory, saving model to %s", dirname, filename)
    signature = list(executor._signature)
    header = {"format": FORMAT, "version": version(), "kind": "export",
              "training": bool(executor.training) if export_model else None,
              "inputs": _signature_text(signature), "model": bool(export_model),
              "key": cache_key(executor)}
    payload = {"executable_inputs": signature, "input_template": executor._input_template,
               "options": executor.options, "training": None, "model": None,
               "state_dict": None, "optimizer": None, "rng_state": rng_state}
    if export_model:
        payload.update(training=bool(executor.training), model=executor.model,
                       state_dict=executor.model.state_dict(),
                       optimizer=_optimizer_record(executor.optimizer))
    _write(filename, header, payload)
    return filename


def load_payload(filename: str, errors=Error) -> dict:
    """The checked payload of ``filename``; a version mismatch or missing inputs raise
    ``errors("Invalid file <f>: <why>")``."""
    header, payload = read(filename)
    try:
        return _parse(header, payload)
    except AssertionError as err:
        raise errors(f"Invalid file {filename}: {err}") from err


def load(filename: str, edit_opts_fn=None):
    """``poptorch.load``: the PopTorch model a file from ``compileAndExport`` (with
    ``export_model=True``) holds, re-created as ``trainingModel``/``inferenceModel`` with the
    saved options (``edit_opts_fn(options)`` may change them first, e.g. to pick an IPU)
    and the saved optimizer, and its executable loaded (``loadExecutable``).

    Raises:
      poptorch.Error: not such a file.
      AssertionError: another version's file, or one exported with ``export_model=False``
        (PopTorch's messages)."""
    payload = load_payload(filename, errors=AssertionError)
    assert payload["model"] is not None and payload["training"] is not None, \
        _NO_EXPORTED_MODEL.format(f=filename)
    options = payload["options"]
    if edit_opts_fn:
        edit_opts_fn(options)
    model = payload["model"]
    if getattr(model, "_poptorch_wrapped", False):
        # it was saved while wrapped by its trainingModel; this is a new model
        model._poptorch_wrapped = False
    from .executor import inferenceModel, trainingModel

    optimizer = _optimizer_from_record(payload["optimizer"])
    if payload["training"]:
        executor = trainingModel(model, options, optimizer)
    else:
        executor = inferenceModel(model, options)
    executor._load_executable_payload(filename, payload)
    if payload.get("rng_state") is not None:  # as PopTorch's load
        executor.rng_state = payload["rng_state"]
    return executor


# ---- the cache -------------------------------------------------------------------------------
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_NOT_IN_KEY = ("compilation_progress_bar_fn", "cachePath", "enableEngineCaching")


def cache_key(executor) -> str:
    """A hash of what PopTorch's executable for ``executor`` depends on (see the module
    doc): equal keys mean PopTorch would reuse the executable."""
    model = executor.model
    options = {k: v for k, v in executor.options.toDict().items() if k not in _NOT_IN_KEY}
    weights = [(name, tuple(t.shape), str(t.dtype))
               for name, t in list(model.named_parameters()) + list(model.named_buffers())]
    optimizer = type(executor.optimizer).__qualname__ if executor.optimizer is not None else None
    cls = host_sync.plain_type(model)  # the user's class, not the training wrapper
    with host_sync.unwrapped(model):
        text = repr(model)
    parts = [FORMAT, version(), bool(executor.training), cls.__module__, cls.__qualname__, text,
             weights,
             _signature_text(executor._signature), optimizer,
             sorted((k, repr(v)) for k, v in options.items())]
    text = _ADDRESS.sub("", repr(parts))
    return hashlib.sha256(text.encode()).hexdigest()


def cache_entry(executor) -> str | None:
    """Look ``executor``'s executable up in its options' cache directory, storing it when
    absent; returns the entry's path (None when caching is off)."""
    popart = executor.options._Popart.options
    if not popart.get("enableEngineCaching", False):
        return None
    directory = popart.get("cachePath", "")
    if not directory:
        return None
    os.makedirs(directory, exist_ok=True)
    key = cache_key(executor)
    path = os.path.join(directory, f"{key}.popef")
    if os.path.exists(path):
        try:
            header, _ = read(path)
            if header.get("key") == key and header.get("version") == version():
                logger.info("Executable cache hit: loaded the executable from %s", path)
                return path
        except Error as err:
            logger.warning("Ignoring a damaged executable cache entry: %s", err)
    signature = list(executor._signature)
    header = {"format": FORMAT, "version": version(), "kind": "cache",
              "training": bool(executor.training), "inputs": _signature_text(signature),
              "model": False, "key": key}
    payload = {"executable_inputs": signature, "input_template": executor._input_template,
               "options": executor.options, "training": None, "model": None,
               "state_dict": None, "optimizer": None}
    _write(path, header, payload)
    logger.info("Executable cache miss: compiled and saved the executable to %s", path)
    return path
