"""Import problems that name the file, the line and the field, and say how to fix them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .limits import limits


@dataclass(frozen=True)
class ImportProblem:
    file: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f", line {self.line}"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.message}"

    def as_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "field": self.field, "message": self.message}


class UserFacingError(Exception):
    """An error whose message tells the user what went wrong and what to do; shown as is.

    ``field`` names the input it is about, when it is about one (an API answers ``{field: [message]}``).
    """

    def __init__(self, message: str = "", *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class ImportFailed(UserFacingError):
    """An import found problems; nothing was written."""

    def __init__(self, problems: list[ImportProblem], *, truncated: bool = False) -> None:
        self.problems = problems
        self.truncated = truncated
        more = " (stopped after the first problems; fix these and import again)" if truncated else ""
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"Nothing was imported: {len(problems)} problem(s){more}\n{lines}")


#: A file that a reader reads twice (checked, then imported) was changed in between.
CHANGED = "the file changed while it was being imported; import it again once it is complete"


class ProblemCollector:
    """Collect problems up to a limit; the import stops (and rolls back) once any were found."""

    def __init__(self, file: str, limit: int | None = None) -> None:
        self.file = file
        self.limit = limit if limit is not None else limits().problems
        self.problems: list[ImportProblem] = []
        self.truncated = False

    def add(self, line: int | None, field: str | None, message: str) -> None:
        if len(self.problems) >= self.limit:
            self.truncated = True
            return
        self.problems.append(ImportProblem(self.file, line, field, message))

    @property
    def full(self) -> bool:
        return len(self.problems) >= self.limit

    def __bool__(self) -> bool:
        return bool(self.problems)

    def mark(self) -> tuple[int, bool]:
        """Where the collector stands, for :meth:`rewind`."""
        return len(self.problems), self.truncated

    def rewind(self, mark: tuple[int, bool]) -> None:
        """Take back the problems added since ``mark``: a reader that starts a file over reports them again."""
        del self.problems[mark[0] :]
        self.truncated = mark[1]

    def raise_if_any(self) -> None:
        if self.problems:
            raise ImportFailed(self.problems, truncated=self.truncated)


T = TypeVar("T")


def about_field(field: str, check: Callable[[], T]) -> T:
    """Run a check of one input; a refusal that names no input is said to be about ``field``."""
    try:
        return check()
    except UserFacingError as error:
        if error.field is None:
            error.field = field
        raise
