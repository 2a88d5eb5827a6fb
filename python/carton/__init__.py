"""carton: pack, verify, cache and run machine-learning models as .carton files.

A thin layer over the C++ library: every rule and every byte of I/O stays
in the library; this package converts Python values and raises exceptions.

    import carton
    with carton.load("model.carton") as model:
        out = model.infer({"x": numpy.ones((2, 3), numpy.float32)})

``carton.safetensors`` is a strict, zero-copy implementation of the
safetensors reference's Python API.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _carton, _paths
from ._errors import (
    CartonError,
    Corrupt,
    InternalError,
    InvalidArgument,
    IOError,
    ModelError,
    NetworkError,
    NotFound,
    Unsupported,
)
from ._types import (
    Example,
    MiscFile,
    ModelInfo,
    OutputCheck,
    RunnerInfo,
    SelfTest,
    SelfTestReport,
    SelfTestResult,
    TensorSpec,
    VerifyProblem,
    VerifyReport,
)

__version__ = "0.1.0"

__all__ = [
    "CartonError",
    "Corrupt",
    "Example",
    "InternalError",
    "InvalidArgument",
    "MiscFile",
    "Model",
    "ModelError",
    "ModelInfo",
    "NetworkError",
    "NotFound",
    "OutputCheck",
    "RunnerInfo",
    "SelfTest",
    "SelfTestReport",
    "SelfTestResult",
    "TensorSpec",
    "Unsupported",
    "VerifyProblem",
    "VerifyReport",
    "get_model_info",
    "hash",
    "load",
    "load_unpacked",
    "pack",
    "shrink",
    "verify",
]

PathLike = Union[str, "os.PathLike[str]"]


def _add_runner_dirs() -> None:
    # Runners are found on $CARTON_RUNNER_PATH (runner/PROTOCOL.md); the
    # directories of the runners built or installed with this package come
    # after the caller's own.
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = [
        os.path.normpath(os.path.join(here, d)) if _paths.RUNNER_DIRS_RELATIVE else d
        for d in _paths.RUNNER_DIRS
    ]
    current = [d for d in os.environ.get("CARTON_RUNNER_PATH", "").split(":") if d]
    extra = [d for d in dirs if os.path.isdir(d) and d not in current]
    if extra:
        os.environ["CARTON_RUNNER_PATH"] = ":".join(current + extra)


_add_runner_dirs()


def _location(path_or_url: PathLike) -> str:
    return path_or_url if isinstance(path_or_url, str) else os.fspath(path_or_url)


class Model:
    """A loaded carton with its runner: one long-lived runner process in serve
    mode, which every ``infer`` and ``self_test`` goes through.

    Use it as a context manager, or call ``close()``; otherwise the runner ends
    when the Model is garbage-collected. Calls from several threads are
    serialized; the GIL is released while the runner works.
    """

    def __init__(self, native: "_carton.Model") -> None:
        self._native = native
        self._info: Optional[ModelInfo] = None

    @property
    def info(self) -> ModelInfo:
        """carton.toml's fields, the manifest hash, and the self-tests and
        examples with their tensors (read-only numpy arrays viewing the
        loaded carton)."""
        if self._info is None:
            self._info = ModelInfo._from_native(self._native.info())
        return self._info

    @property
    def model_dir(self) -> str:
        """The model/ directory the runner loaded (in the cache)."""
        return self._native.model_dir

    @property
    def runner_path(self) -> str:
        """The runner executable serving this model."""
        return self._native.runner_path

    def infer(self, tensors: Mapping[str, Any]) -> Dict[str, np.ndarray]:
        """Runs the model once.

        Args:
            tensors: {name: value}; values are numpy arrays (float32, float64,
                int8...int64, uint8...uint64, bool as uint8, str arrays as
                string tensors), numbers, str, or lists of str or numbers.
                Python numbers take the dtype the carton declares for that
                input. Contiguous arrays are copied once, into the shared
                memory the runner reads.

        Returns:
            {name: numpy.ndarray} of the outputs; string outputs are arrays
            of str (dtype object). Numeric outputs are not copied: they are
            writable arrays over the shared memory the runner wrote them
            to, which stays theirs (the runner writes later calls' outputs
            elsewhere) for as long as they, or views of them, live.

        Raises:
            InvalidArgument: a value that is not a tensor, or the runner
                refused the inputs; ModelError: the model's own code raised
                (``err.exception_type``, ``err.exception_message``; the
                model stays usable); InternalError: the runner crashed or
                timed out (the model cannot be used any more); the runner's
                own errors with their codes.
        """
        return self._native.infer(tensors)

    def self_test(self, rtol: float = 1e-5, atol: float = 1e-8) -> SelfTestReport:
        """Runs every [[self_test]] of the carton through the runner and compares
        each output with expected_out (all-close for numbers, within rtol and
        atol; exact for strings). A failing test is a report, not an error;
        InternalError means the runner crashed or hung."""
        return SelfTestReport._from_native(self._native.self_test(rtol, atol))

    def close(self) -> None:
        """Asks the runner to exit and waits for it. Calling it again does
        nothing; ``infer`` afterwards raises InvalidArgument."""
        self._native.close()

    @property
    def closed(self) -> bool:
        """True once ``close()`` was called."""
        return self._native.closed

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        name = self.info.model_name or self.info.runner.runner_name
        return f"<carton.Model {name!r}{' (closed)' if self.closed else ''}>"


def load(
    path_or_url: PathLike,
    *,
    runner_name: Optional[str] = None,
    required_framework_version: Optional[str] = None,
    runner_opts: Optional[Mapping[str, Union[bool, int, float, str]]] = None,
    lenient: bool = False,
    visible_device: Optional[Union[int, str]] = None,
) -> Model:
    """Loads a carton (a path, an http(s) URL, an oci:// reference, or an
    unpacked carton directory) and starts its runner.

    The carton goes through the manifest-hash cache, as ``carton load`` does:
    materialized once per machine, every file checked against MANIFEST; a
    later load of any copy is a hit. The runner is selected by name,
    framework version and compat version (``$CARTON_RUNNER_PATH``, then the
    runners installed with carton).

    Args:
        runner_name: use this runner instead of carton.toml's runner_name
            (the runner itself must accept the carton).
        required_framework_version: replaces carton.toml's requirement.
        runner_opts: override [runner.opts] for this load; the runner receives
            them as ``--opt KEY=VALUE`` (true/false, integers and floats are
            typed again; other text stays a string).
        lenient: run a carton whose declarations do not hold (inputs that
            break its [[input]]s, as some cartons packed by the original
            implementation have): ``infer`` reports them as RuntimeWarnings,
            and the runner as warnings, instead of refusing the call.
        visible_device: where the runner runs the model: ``"cpu"``, a GPU's
            index (``1``, ``"1"`` or ``"cuda:1"``, as ``carton devices``
            lists them) or UUID (``"GPU-..."``, ``"MIG-..."``). None: the
            first GPU when there is one, else the CPU. The runner is started
            with ``CUDA_VISIBLE_DEVICES`` naming that device alone.

    Raises:
        NotFound: no such carton, or no runner fits (the message lists each
            runner found and why it was rejected, or a GPU visible_device
            names that is not there); InvalidArgument: a visible_device that
            is none of the forms above; Corrupt: the carton is
            damaged (the message names the entry); NetworkError, IOError, and
            the runner's load errors.
    """
    opts = None if runner_opts is None else dict(runner_opts)
    return Model(
        _carton.Model.load(
            _location(path_or_url),
            runner_name,
            required_framework_version,
            opts,
            lenient,
            visible_device,
        )
    )


def _config(
    runner_name: str,
    required_framework_version: str,
    runner_compat_version: int,
    runner_opts: Optional[Mapping[str, Any]],
    model_name: Optional[str],
    short_description: Optional[str],
    model_description: Optional[str],
    license: Optional[str],
    repository: Optional[str],
    homepage: Optional[str],
    required_platforms: Optional[Sequence[str]],
    inputs: Optional[Sequence[TensorSpec]],
    outputs: Optional[Sequence[TensorSpec]],
) -> Dict[str, Any]:
    def specs(v: Optional[Sequence[TensorSpec]], what: str) -> Optional[List[Dict[str, Any]]]:
        if v is None:
            return None
        for s in v:
            if not isinstance(s, TensorSpec):
                raise InvalidArgument(f"{what} must be carton.TensorSpec, not {type(s).__name__}")
        return [s._to_native() for s in v]

    return {
        "runner_name": runner_name,
        "required_framework_version": required_framework_version,
        "runner_compat_version": runner_compat_version,
        "runner_opts": None if runner_opts is None else dict(runner_opts),
        "model_name": model_name,
        "short_description": short_description,
        "model_description": model_description,
        "license": license,
        "repository": repository,
        "homepage": homepage,
        "required_platforms": None if required_platforms is None else list(required_platforms),
        "inputs": specs(inputs, "inputs"),
        "outputs": specs(outputs, "outputs"),
    }


def _tensor_sets(values: Optional[Sequence[Any]], cls: type, what: str) -> List[Dict[str, Any]]:
    out = []
    for v in values or []:
        if not isinstance(v, cls):
            raise InvalidArgument(f"{what} must be carton.{cls.__name__}, not {type(v).__name__}")
        out.append(v._to_native())
    return out


def load_unpacked(
    path: PathLike,
    *,
    runner_name: str,
    required_framework_version: str,
    runner_compat_version: int = 1,
    runner_opts: Optional[Mapping[str, Union[bool, int, float, str]]] = None,
    model_name: Optional[str] = None,
    short_description: Optional[str] = None,
    model_description: Optional[str] = None,
    license: Optional[str] = None,
    repository: Optional[str] = None,
    homepage: Optional[str] = None,
    required_platforms: Optional[Sequence[str]] = None,
    inputs: Optional[Sequence[TensorSpec]] = None,
    outputs: Optional[Sequence[TensorSpec]] = None,
    self_tests: Optional[Sequence[SelfTest]] = None,
    examples: Optional[Sequence[Example]] = None,
    misc_files: Optional[Mapping[str, bytes]] = None,
    visible_device: Optional[Union[int, str]] = None,
) -> Model:
    """Loads a model directory (or a single model file) without packing it, with
    the metadata ``pack`` takes, and starts its runner (on ``visible_device``,
    as ``load`` takes it).

    The model files are used in place: a temporary carton directory (removed
    when the model is closed) holds carton.toml, a link to ``path`` as model/,
    and the self-tests' tensors. Raises as ``load`` and ``pack``.
    """
    config = _config(
        runner_name,
        required_framework_version,
        runner_compat_version,
        runner_opts,
        model_name,
        short_description,
        model_description,
        license,
        repository,
        homepage,
        required_platforms,
        inputs,
        outputs,
    )
    return Model(
        _carton.Model.load_unpacked(
            _location(path),
            config,
            _tensor_sets(self_tests, SelfTest, "self_tests"),
            _tensor_sets(examples, Example, "examples"),
            None if misc_files is None else dict(misc_files),
            visible_device,
        )
    )


def get_model_info(path_or_url: PathLike) -> ModelInfo:
    """The metadata of a carton without loading it: carton.toml, the manifest
    hash, the files (size, method, linked) and the tensor_data index. For a
    URL only a few kilobytes are read, with HTTP range requests. Self-tests
    and examples hold their ``@tensor_data/...`` references."""
    return ModelInfo._from_native(_carton.get_model_info(_location(path_or_url)))


def verify(
    path_or_url: PathLike, *, fetch_links: bool = False, allow_file_links: bool = False
) -> VerifyReport:
    """Checks every rule of the format and every hash, and returns every problem
    found (as ``carton verify --json``); a bad carton is a report with
    ``ok`` False, not an exception. ``fetch_links`` also downloads linked
    files through the blob cache and hashes them.

    Raises:
        NotFound, IOError, NetworkError: verification could not run.
    """
    d = _carton.verify(_location(path_or_url), fetch_links, allow_file_links)
    return VerifyReport(
        carton=d["carton"],
        ok=d["ok"],
        manifest_hash=d["manifest_hash"],
        files_hashed=d["files_hashed"],
        bytes_hashed=d["bytes_hashed"],
        linked_files=d["linked_files"],
        linked_fetched=d["linked_fetched"],
        problems=[VerifyProblem(**p) for p in d["problems"]],
        warnings=list(d["warnings"]),
    )


def hash(path_or_url: PathLike) -> str:  # noqa: A001 - the original's name
    """The manifest hash of a carton (sha256 of its MANIFEST, 64 hex digits),
    read from the central directory and MANIFEST only."""
    return _carton.manifest_hash(_location(path_or_url))


def _default_output(path: str, suffix: str) -> str:
    name = os.path.basename(os.path.normpath(path)) or "model"
    return os.path.join(tempfile.mkdtemp(prefix="carton-"), name + suffix)


def pack(
    path: PathLike,
    *,
    output: Optional[PathLike] = None,
    runner_name: Optional[str] = None,
    required_framework_version: Optional[str] = None,
    runner_compat_version: int = 1,
    runner_opts: Optional[Mapping[str, Union[bool, int, float, str]]] = None,
    model_name: Optional[str] = None,
    short_description: Optional[str] = None,
    model_description: Optional[str] = None,
    license: Optional[str] = None,
    repository: Optional[str] = None,
    homepage: Optional[str] = None,
    required_platforms: Optional[Sequence[str]] = None,
    inputs: Optional[Sequence[TensorSpec]] = None,
    outputs: Optional[Sequence[TensorSpec]] = None,
    self_tests: Optional[Sequence[SelfTest]] = None,
    examples: Optional[Sequence[Example]] = None,
    misc_files: Optional[Mapping[str, bytes]] = None,
    linked_files: Optional[Mapping[str, Sequence[str]]] = None,
    compression: str = "auto",
) -> str:
    """Packs a model into a .carton and returns its path.

    Args:
        path: what ``carton pack PATH`` takes: a folder in the carton layout
            (model/, carton.toml, tensor_data/, misc/), any other folder (its
            files become model/), or a single file (placed at model/<its
            name>).
        output: where to write the carton; by default a new temporary
            directory. The carton is written atomically.
        runner_name, required_framework_version, runner_compat_version,
        runner_opts: the [runner] table. With them the arguments describe
            the model and replace a carton.toml in ``path``; without them
            ``path`` must hold carton.toml, which is packed as it is.
        model_name ... required_platforms: the optional fields of carton.toml.
        inputs, outputs: TensorSpec lists.
        self_tests, examples: SelfTest / Example lists; their tensors are
            written into tensor_data/ for you.
        misc_files: {name: bytes}, written as misc/<name>.
        linked_files: {sha256: [url, ...]}: files with those hashes leave the
            zip and LINKS lists the URLs (as ``shrink``).
        compression: "auto" (zstd where it pays; files under 4 KiB stored so
            any zip tool reads the metadata, large files stored so they can
            be mapped), "stored", "deflate" or "zstd".

    The carton is written once, from ``path`` in place (nothing is staged or
    copied): the same path packed by ``carton pack`` with the same carton.toml
    gives the same bytes.

    Raises:
        InvalidArgument: a bad value (naming the field); NotFound: no such
            path; IOError.
    """
    location = _location(path)
    out = _default_output(location, ".carton") if output is None else os.fspath(output)
    if (runner_name is None) != (required_framework_version is None):
        raise InvalidArgument(
            "runner_name and required_framework_version describe the model together: give both, "
            "or neither to pack the carton.toml in path"
        )
    config = None if runner_name is None else _config(
        runner_name,
        required_framework_version,
        runner_compat_version,
        runner_opts,
        model_name,
        short_description,
        model_description,
        license,
        repository,
        homepage,
        required_platforms,
        inputs,
        outputs,
    )
    _carton.pack(
        location,
        out,
        config,
        _tensor_sets(self_tests, SelfTest, "self_tests"),
        _tensor_sets(examples, Example, "examples"),
        None if misc_files is None else dict(misc_files),
        None if linked_files is None else {k: list(v) for k, v in linked_files.items()},
        compression,
    )
    return out


def shrink(
    path: PathLike, urls: Mapping[str, Sequence[str]], *, output: Optional[PathLike] = None
) -> str:
    """Writes a copy of a carton whose files with the given sha256 are left out
    of the zip and listed in LINKS with their URLs (merged with any LINKS it
    had), and returns its path (by default in a new temporary directory). The
    manifest hash does not change; carton.toml and tensor_data/index.toml
    always stay in the zip.

    Args:
        urls: {sha256 (64 hex digits): [url, ...]}.

    Raises:
        InvalidArgument: a sha256 that names no file, or URLs LINKS cannot
            hold; Corrupt: the input is damaged.
    """
    location = _location(path)
    out = _default_output(location, "") if output is None else os.fspath(output)
    if output is None and not out.endswith(".carton"):
        out += ".carton"
    _carton.shrink(location, out, {k: list(v) for k, v in urls.items()})
    return out
