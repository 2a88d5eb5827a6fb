"""The plain data types of the carton API: what goes into carton.toml and what
comes back from info, verify and self-tests. They hold values only; the C++
library checks and writes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

# A shape: None (any shape, "*" in carton.toml), a str (a symbol naming the
# whole shape) or a sequence of dimensions, each an int, a str (a symbol that
# must have the same value wherever it appears) or None (any size, "*").
Dimension = Union[int, str, None]
Shape = Union[None, str, Sequence[Dimension]]

_NUMPY_DTYPES = {
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
}


def dtype_name(dtype: Any) -> str:
    """carton's name for `dtype`: a carton dtype name ("float32", "string"), or
    anything numpy.dtype takes (np.float32, "<f4", str for strings)."""
    if isinstance(dtype, str) and (dtype == "string" or dtype in _NUMPY_DTYPES):
        return dtype
    if dtype is str:
        return "string"
    try:
        d = np.dtype(dtype)
    except TypeError:
        return str(dtype)
    if d.kind in "UO":
        return "string"
    return d.name if d.name in _NUMPY_DTYPES else str(dtype)


@dataclass
class TensorSpec:
    """One [[input]] or [[output]] of carton.toml.

    Args:
        name: the tensor's name.
        dtype: "float32", "float64", "string", "int8" ... "uint64" (or a numpy
            dtype, converted to its name).
        shape: None for any shape, a str naming the whole shape, or a list of
            dimensions: ints, str symbols, or None for any size.
        description: free text.
        internal_name: the name the model itself uses, when it differs.
    """

    name: str
    dtype: Any
    shape: Shape = None
    description: Optional[str] = None
    internal_name: Optional[str] = None

    def _to_native(self) -> Dict[str, Any]:
        shape = self.shape
        if shape is not None and not isinstance(shape, str):
            shape = list(shape)
        return {
            "name": self.name,
            "dtype": dtype_name(self.dtype),
            "shape": shape,
            "description": self.description,
            "internal_name": self.internal_name,
        }

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "TensorSpec":
        return cls(
            name=d["name"],
            dtype=d["dtype"],
            shape=d["shape"],
            description=d["description"],
            internal_name=d["internal_name"],
        )


@dataclass
class MiscFile:
    """A file of misc/ in a loaded carton (an example may refer to one).

    Attributes:
        path: its path in the carton, "misc/input.png".
        local_path: where it is on disk (in the cache entry).
    """

    path: str
    local_path: str

    def read(self) -> bytes:
        """The file's bytes."""
        with open(self.local_path, "rb") as f:
            return f.read()


@dataclass
class SelfTest:
    """One [[self_test]]: inputs and, optionally, the outputs they must give.

    When packing, the values are tensors (numpy arrays, numbers, str, lists of
    str; anything ``Model.infer`` takes) and are written into tensor_data for
    you. From ``Model.info`` they are read-only numpy arrays of the loaded
    carton; from ``get_model_info`` they are references such as
    ``"@tensor_data/x"``.
    """

    name: Optional[str] = None
    inputs: Mapping[str, Any] = field(default_factory=dict)
    expected_out: Optional[Mapping[str, Any]] = None
    description: Optional[str] = None

    def _to_native(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputs": dict(self.inputs),
            "expected_out": None if self.expected_out is None else dict(self.expected_out),
        }


@dataclass
class Example:
    """One [[example]]: sample inputs and outputs, for people and docs.

    Values are tensors as for SelfTest; a value given as bytes becomes a file
    of misc/ (and comes back from ``Model.info`` as a MiscFile).
    """

    name: Optional[str] = None
    inputs: Mapping[str, Any] = field(default_factory=dict)
    sample_out: Mapping[str, Any] = field(default_factory=dict)
    description: Optional[str] = None

    def _to_native(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputs": dict(self.inputs),
            "sample_out": dict(self.sample_out),
        }


@dataclass(frozen=True)
class RunnerInfo:
    """The [runner] table of carton.toml."""

    runner_name: str
    required_framework_version: str
    runner_compat_version: int
    opts: Mapping[str, Union[bool, int, float, str]] = field(default_factory=dict)


@dataclass
class ModelInfo:
    """Every field of a carton's carton.toml, and its manifest hash.

    ``self_tests`` and ``examples`` hold arrays for a loaded model
    (``Model.info``) and ``@tensor_data/...`` references for
    ``get_model_info``. ``files`` and ``tensors`` (the MANIFEST files with
    their sizes and methods, and the tensor_data index) are filled by
    ``get_model_info``; ``misc_files`` by ``Model.info``.
    """

    model_name: Optional[str]
    short_description: Optional[str]
    model_description: Optional[str]
    license: Optional[str]
    repository: Optional[str]
    homepage: Optional[str]
    required_platforms: List[str]
    inputs: List[TensorSpec]
    outputs: List[TensorSpec]
    self_tests: List[SelfTest]
    examples: List[Example]
    runner: RunnerInfo
    manifest_sha256: Optional[str]
    spec_version: int = 1
    files: List[Dict[str, Any]] = field(default_factory=list)
    tensors: List[Dict[str, Any]] = field(default_factory=list)
    misc_files: List[MiscFile] = field(default_factory=list)

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "ModelInfo":
        def value(v: Any) -> Any:
            if isinstance(v, dict) and set(v) == {"path", "local_path"}:
                return MiscFile(v["path"], v["local_path"])
            return v

        def values(m: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
            return None if m is None else {k: value(v) for k, v in m.items()}

        r = d["runner"]
        return cls(
            model_name=d["model_name"],
            short_description=d["short_description"],
            model_description=d["model_description"],
            license=d["license"],
            repository=d["repository"],
            homepage=d["homepage"],
            required_platforms=list(d["required_platforms"]),
            inputs=[TensorSpec._from_native(s) for s in d["inputs"]],
            outputs=[TensorSpec._from_native(s) for s in d["outputs"]],
            self_tests=[
                SelfTest(
                    name=t["name"],
                    inputs=values(t["inputs"]),
                    expected_out=values(t["expected_out"]),
                    description=t["description"],
                )
                for t in d["self_tests"]
            ],
            examples=[
                Example(
                    name=x["name"],
                    inputs=values(x["inputs"]),
                    sample_out=values(x["sample_out"]),
                    description=x["description"],
                )
                for x in d["examples"]
            ],
            runner=RunnerInfo(
                runner_name=r["runner_name"],
                required_framework_version=r["required_framework_version"],
                runner_compat_version=r["runner_compat_version"],
                opts=dict(r["opts"]),
            ),
            manifest_sha256=d["manifest_sha256"],
            spec_version=d["spec_version"],
            files=list(d.get("files", [])),
            tensors=list(d.get("tensors", [])),
            misc_files=[value(f) for f in d.get("misc_files", [])],
        )


@dataclass(frozen=True)
class VerifyProblem:
    """One problem found by verify: the entry at fault ("" for the archive) and
    the rule it breaks, with the values."""

    where: str
    problem: str


@dataclass(frozen=True)
class VerifyReport:
    """What ``carton.verify`` found, as ``carton verify --json`` reports it
    (``carton`` is its ``model``). True when the carton is valid (``ok``)."""

    carton: str
    ok: bool
    manifest_hash: Optional[str]
    files_hashed: int
    bytes_hashed: int
    linked_files: int
    linked_fetched: int
    problems: List[VerifyProblem]
    # Unknown carton.toml keys (not problems), as the CLI's ``warnings``.
    warnings: List[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        """The same as ``ok`` (its earlier name)."""
        return self.ok

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class OutputCheck:
    """One output of one self-test compared with its expected value."""

    name: str
    passed: bool
    message: str


@dataclass(frozen=True)
class SelfTestResult:
    """One self-test: passed, or the inference error, or the outputs that
    differ."""

    name: str
    passed: bool
    error: str
    outputs: List[OutputCheck]
    seconds: float


@dataclass(frozen=True)
class SelfTestReport:
    """Every self-test of a model. True when all passed."""

    passed: bool
    tests: List[SelfTestResult]

    def __bool__(self) -> bool:
        return self.passed

    @classmethod
    def _from_native(cls, d: Mapping[str, Any]) -> "SelfTestReport":
        return cls(
            passed=d["passed"],
            tests=[
                SelfTestResult(
                    name=t["name"],
                    passed=t["passed"],
                    error=t["error"],
                    outputs=[OutputCheck(**o) for o in t["outputs"]],
                    seconds=t["seconds"],
                )
                for t in d["tests"]
            ],
        )
