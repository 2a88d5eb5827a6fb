"""Type hints for the carton package (see the docstrings in __init__.py)."""

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from ._errors import CartonError as CartonError
from ._errors import Corrupt as Corrupt
from ._errors import InternalError as InternalError
from ._errors import InvalidArgument as InvalidArgument
from ._errors import IOError as IOError
from ._errors import ModelError as ModelError
from ._errors import NetworkError as NetworkError
from ._errors import NotFound as NotFound
from ._errors import Unsupported as Unsupported
from ._types import Example as Example
from ._types import MiscFile as MiscFile
from ._types import ModelInfo as ModelInfo
from ._types import OutputCheck as OutputCheck
from ._types import RunnerInfo as RunnerInfo
from ._types import SelfTest as SelfTest
from ._types import SelfTestReport as SelfTestReport
from ._types import SelfTestResult as SelfTestResult
from ._types import TensorSpec as TensorSpec
from ._types import VerifyProblem as VerifyProblem
from ._types import VerifyReport as VerifyReport

__version__: str

PathLike = Union[str, os.PathLike[str]]
OptValue = Union[bool, int, float, str]
# What Model.infer takes for one tensor.
TensorValue = Union[np.ndarray, np.generic, bool, int, float, str, Sequence[Any]]

class Model:
    """A loaded carton and its runner process in serve mode."""

    @property
    def info(self) -> ModelInfo:
        """carton.toml's fields, the manifest hash, self-tests and examples as
        read-only arrays."""
    @property
    def model_dir(self) -> str:
        """The model/ directory the runner loaded."""
    @property
    def runner_path(self) -> str:
        """The runner executable serving the model."""
    def infer(self, tensors: Mapping[str, TensorValue]) -> Dict[str, np.ndarray]:
        """Runs the model once; outputs are writable arrays over the runner's
        shared memory, theirs for as long as they live, not copies (strings
        as arrays of str)."""
    def self_test(self, rtol: float = ..., atol: float = ...) -> SelfTestReport:
        """Runs every [[self_test]] and compares the outputs."""
    def close(self) -> None:
        """Ends the runner; idempotent."""
    @property
    def closed(self) -> bool:
        """True once closed."""
    def __enter__(self) -> Model: ...
    def __exit__(self, *exc: Any) -> None: ...

def load(
    path_or_url: PathLike,
    *,
    runner_name: Optional[str] = ...,
    required_framework_version: Optional[str] = ...,
    runner_opts: Optional[Mapping[str, OptValue]] = ...,
    lenient: bool = ...,
    visible_device: Optional[Union[int, str]] = ...,
) -> Model:
    """Loads a carton through the manifest-hash cache and starts its runner."""

def load_unpacked(
    path: PathLike,
    *,
    runner_name: str,
    required_framework_version: str,
    runner_compat_version: int = ...,
    runner_opts: Optional[Mapping[str, OptValue]] = ...,
    model_name: Optional[str] = ...,
    short_description: Optional[str] = ...,
    model_description: Optional[str] = ...,
    license: Optional[str] = ...,
    repository: Optional[str] = ...,
    homepage: Optional[str] = ...,
    required_platforms: Optional[Sequence[str]] = ...,
    inputs: Optional[Sequence[TensorSpec]] = ...,
    outputs: Optional[Sequence[TensorSpec]] = ...,
    self_tests: Optional[Sequence[SelfTest]] = ...,
    examples: Optional[Sequence[Example]] = ...,
    misc_files: Optional[Mapping[str, bytes]] = ...,
    visible_device: Optional[Union[int, str]] = ...,
) -> Model:
    """Loads a model directory or file in place, without packing it."""

def get_model_info(path_or_url: PathLike) -> ModelInfo:
    """A carton's metadata, without loading it (a few range requests for a URL)."""

def verify(
    path_or_url: PathLike, *, fetch_links: bool = ..., allow_file_links: bool = ...
) -> VerifyReport:
    """Every problem of a carton, as `carton verify --json`."""

def hash(path_or_url: PathLike) -> str:
    """The manifest hash (sha256 of MANIFEST), 64 hex digits."""

def pack(
    path: PathLike,
    *,
    output: Optional[PathLike] = ...,
    runner_name: Optional[str] = ...,
    required_framework_version: Optional[str] = ...,
    runner_compat_version: int = ...,
    runner_opts: Optional[Mapping[str, OptValue]] = ...,
    model_name: Optional[str] = ...,
    short_description: Optional[str] = ...,
    model_description: Optional[str] = ...,
    license: Optional[str] = ...,
    repository: Optional[str] = ...,
    homepage: Optional[str] = ...,
    required_platforms: Optional[Sequence[str]] = ...,
    inputs: Optional[Sequence[TensorSpec]] = ...,
    outputs: Optional[Sequence[TensorSpec]] = ...,
    self_tests: Optional[Sequence[SelfTest]] = ...,
    examples: Optional[Sequence[Example]] = ...,
    misc_files: Optional[Mapping[str, bytes]] = ...,
    linked_files: Optional[Mapping[str, Sequence[str]]] = ...,
    compression: str = ...,
) -> str:
    """Packs a model directory or file into a .carton; returns its path."""

def shrink(
    path: PathLike, urls: Mapping[str, Sequence[str]], *, output: Optional[PathLike] = ...
) -> str:
    """A copy of a carton whose files with the given sha256 are linked by URL."""
