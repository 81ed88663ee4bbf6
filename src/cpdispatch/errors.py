"""Errors a user can cause: each names the file, line and field so it can be fixed."""

from __future__ import annotations


class CpdispatchError(Exception):
    """Base class of errors reported to the user as one line, without a traceback."""


class InputError(CpdispatchError):
    """Bad input: names the file, the line (1-based, when known) and the field."""

    def __init__(self, path: str, line: int | None, field: str | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        super().__init__(self.describe())

    def describe(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
        if self.field:
            where += f": field '{self.field}'"
        return f"{where}: {self.message}"
