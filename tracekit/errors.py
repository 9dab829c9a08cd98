"""The one exception tree of tracekit.

Every error a user can cause (a bad file, a limit, an unwritable output) is a
:class:`TracekitError`; the CLI turns it into one line on stderr and exit 1.
Any other exception escaping a reader is a bug.

::

    TracekitError
     ├── UnknownFormatError     the input is not a format tracekit reads (E-FORMAT)
     ├── CorruptTraceError      recognised, but damaged beyond use (E-CORRUPT)
     │    └── TruncatedError    cut short where --strict forbids keeping the rest
     ├── LimitError             over a configured limit (E-LIMIT)
     ├── OutputError            an output cannot be written safely (E-OUTPUT)
     ├── SchemaError            a parser returned frames that break the schema
     └── UsageError             a bad option, rubric or manifest
"""

from __future__ import annotations

__all__ = [
    "CorruptTraceError",
    "LimitError",
    "OutputError",
    "SchemaError",
    "TracekitError",
    "TruncatedError",
    "UnknownFormatError",
    "UsageError",
]


class TracekitError(Exception):
    """Root of every error tracekit raises on purpose.

    Args:
        message: What is wrong, and what was expected.
        path: The file concerned, if any.
        offset: Byte offset in the (decompressed) file.
        line: 1-based line number in a text trace.
        frame: 1-based record/frame number in a capture.
        hint: How to fix it, shown after the message.
    """

    code = "E-TRACEKIT"

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        offset: int | None = None,
        line: int | None = None,
        frame: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.offset = offset
        self.line = line
        self.frame = frame
        self.hint = hint

    def where(self) -> str:
        """Return ``file: frame N at byte M`` / ``file: line N``, as far as known."""
        parts: list[str] = []
        if self.frame is not None:
            parts.append(f"frame {self.frame:,}")
        if self.line is not None:
            parts.append(f"line {self.line:,}")
        if self.offset is not None:
            parts.append(f"at byte {self.offset:,}")
        loc = " ".join(parts)
        if self.path and loc:
            return f"{self.path}: {loc}"
        return self.path or loc

    def __str__(self) -> str:
        where = self.where()
        text = f"{where}: {self.message}" if where else self.message
        if self.hint:
            text += f" Hint: {self.hint}"
        return text

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready description (used by batch summaries)."""
        return {
            "error": type(self).__name__,
            "code": self.code,
            "message": self.message,
            "path": self.path,
            "offset": self.offset,
            "line": self.line,
            "frame": self.frame,
            "hint": self.hint,
        }


class UnknownFormatError(TracekitError):
    """The input is not in any format tracekit reads."""

    code = "E-FORMAT"


class CorruptTraceError(TracekitError):
    """The format was recognised but the content is damaged."""

    code = "E-CORRUPT"


class TruncatedError(CorruptTraceError):
    """The file ends inside a record and ``strict`` forbids keeping what came before."""

    code = "E-TRUNCATED"


class LimitError(TracekitError):
    """A size, count or time limit was exceeded (see docs/limits.md)."""

    code = "E-LIMIT"


class OutputError(TracekitError):
    """An output file or folder cannot be written (or would escape its folder)."""

    code = "E-OUTPUT"


class SchemaError(TracekitError):
    """A frame does not match the schema; ``problems`` lists every one of them."""

    code = "E-SCHEMA"

    def __init__(self, message: str, problems: list[str] | None = None, **kw: object) -> None:
        self.problems = list(problems or [])
        if self.problems:
            message = message + "\n  - " + "\n  - ".join(self.problems)
        super().__init__(message, **kw)  # type: ignore[arg-type]


class NothingToAnalyzeError(TracekitError):
    """The input was read, but it holds neither a connection that carried data nor a tool's series."""

    code = "E-NOTHING"


class UsageError(TracekitError):
    """An option, rubric, manifest or mapping given by the user is invalid."""

    code = "E-USAGE"
