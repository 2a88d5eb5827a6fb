"""The exceptions carton raises: one class per status code of the C++ library.

Every error the library reports keeps its message (which names the file,
entry or tensor and the rule broken) and its code (``err.code``, the
library's code name such as ``"corrupt"``). Each class also derives from the
builtin exception Python code would expect, so ``except ValueError`` and
``except OSError`` keep working.
"""

from . import _carton


class CartonError(Exception):
    """Base class of every error raised by carton.

    Attributes:
        code: the library's status code name: "invalid argument", "not found",
            "corrupt", "unsupported", "io error", "network error", "internal"
            or "model error".
    """

    code: str = "internal"

    @property
    def message(self) -> str:
        """The library's message (``str(err)``)."""
        return str(self.args[0]) if self.args else ""


class InvalidArgument(CartonError, ValueError):
    """The caller asked for something impossible (a bad option, value or name)."""

    code = "invalid argument"


class NotFound(CartonError, FileNotFoundError):
    """A named thing (a file, an entry, a runner) does not exist."""

    code = "not found"


class Corrupt(CartonError):
    """Bytes break the format, or a hash does not match."""

    code = "corrupt"


class Unsupported(CartonError):
    """Valid, but unknown to carton (a version, a dtype, a method)."""

    code = "unsupported"


class IOError(CartonError, OSError):  # noqa: A001 - the library's name for the code
    """The operating system failed a read, a write or an open."""

    code = "io error"


class NetworkError(CartonError, ConnectionError):
    """A transfer failed."""

    code = "network error"


class InternalError(CartonError, RuntimeError):
    """A bug in carton, or a runner that crashed, hung or broke the protocol."""

    code = "internal"


class ModelError(CartonError, RuntimeError):
    """The model's own code failed while it ran: a Python model raised, a
    TorchScript forward threw. The model stays loaded; the next call may
    succeed.

    Attributes:
        exception_type: the name of what the model raised ("ValueError").
        exception_message: its message, without carton's context or the
            traceback (``str(err)`` has both).
    """

    code = "model error"
    exception_type: str = ""
    exception_message: str = ""


_carton.set_exception_types(
    {
        cls.code: cls
        for cls in (
            InvalidArgument,
            NotFound,
            Corrupt,
            Unsupported,
            IOError,
            NetworkError,
            InternalError,
            ModelError,
        )
    }
)
