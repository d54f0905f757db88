"""Reading an administrator's recipe policy file (``--recipe-policy``) strictly.

The same loader serves ``sro run``, ``sro lint`` and ``sro render``, so the three agree on
what a recipe may create. The file is YAML read by the strict loader (duplicate keys,
bombs and deep nesting refused, with the file and line); its shape is checked by
``model.recipe_policy.from_document``.
"""

from __future__ import annotations

from pathlib import Path

from sro import errors
from sro.model import recipe_policy
from sro.render import yamlstrict

MAX_BYTES = 64 * 1024
"""A policy is a few lines; a larger file is refused before it is parsed."""


def load(path: str | Path | None) -> recipe_policy.RecipePolicy:
    """The policy in ``path``; the default policy when no path is given."""
    if not path:
        return recipe_policy.DEFAULT
    source = str(path)
    try:
        if not Path(path).is_file():  # a device or a pipe would never end
            raise OSError("not a regular file")
        with Path(path).open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise errors.RecipeInvalid(
            f"cannot read the recipe policy: {exc.strerror or exc}", location=errors.Location(file=source)
        ) from None
    if len(raw) > MAX_BYTES:
        raise errors.RecipeInvalid(
            f"the recipe policy is larger than {MAX_BYTES} bytes", location=errors.Location(file=source)
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise errors.RecipeInvalid(
            "the recipe policy is not UTF-8 text", location=errors.Location(file=source)
        ) from None
    return recipe_policy.from_document(yamlstrict.load(text, file=source), source=source)
