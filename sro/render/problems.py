"""Collecting recipe errors so one pass reports all of them.

``sro lint`` wants every problem in a recipe at once; the operator wants one error whose
class gives the condition reason. Validation code adds to a ``Problems`` and carries on;
``raise_first`` gives the operator its single error (the others attached as notes), and
``sro lint`` reads ``errors`` directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sro.errors import RecipeError


@dataclass
class Problems:
    errors: list[RecipeError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, error: RecipeError) -> None:
        if not any(str(e) == str(error) for e in self.errors):
            self.errors.append(error)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_first(self) -> None:
        """Raise the first error (by recipe order), with the rest as notes; do nothing if none."""
        if not self.errors:
            return
        first = self.errors[0]
        for other in self.errors[1:]:
            first.add_note(str(other))
        raise first
