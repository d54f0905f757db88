"""Reading and validating the ``sro.dev/`` annotations of rendered objects.

Keys live under ``sro.dev/``; recipes written for the original operator use
``specialresource.openshift.io/``, accepted as an alias for every key with an sro hook.
Its ``state`` and ``driver-container-vendor`` keys are accepted and ignored (the
directory is the state; a build is a Job annotated ``sro.dev/builds``), with a warning
for ``sro lint``. Any other
key under either prefix, or an invalid value, is RecipeInvalid: a typo must not turn a
hook off silently.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from sro import errors
from sro.hooks import base
from sro.model import desired

PREFIX = "sro.dev/"
LEGACY_PREFIX = "specialresource.openshift.io/"
LEGACY_IGNORED = frozenset({"state", "driver-container-vendor"})


@functools.cache
def _keys(name: str) -> tuple[str, str]:
    # The same string objects every time: a string hashes once, and the planner reads
    # hook annotations of every object every pass.
    return PREFIX + name, LEGACY_PREFIX + name


def get(obj: desired.DesiredObject, name: str) -> str | None:
    """The value of hook annotation ``name`` (``sro.dev/`` first, then the legacy alias)."""
    annotations = obj.annotations
    key, legacy = _keys(name)
    value = annotations.get(key)
    if value is None:
        value = annotations.get(legacy)
    return None if value is None else str(value)


def flag(obj: desired.DesiredObject, name: str, *, default: bool = False) -> bool:
    value = get(obj, name)
    return default if value is None else value == "true"


def validate(obj: desired.DesiredObject, hooks: Sequence[base.Hook], *, ctx: base.Context) -> bool:
    """Check every sro annotation of ``obj``; False (and problems recorded) if any is wrong."""
    checks = {h.annotation: h.check for h in hooks if h.annotation}
    problems = ctx.problems
    ok = True
    for raw_key, value in obj.annotations.items():
        key = str(raw_key)
        if key.startswith(PREFIX):
            name = key.removeprefix(PREFIX)
        elif key.startswith(LEGACY_PREFIX):
            name = key.removeprefix(LEGACY_PREFIX)
            if name in LEGACY_IGNORED:
                problems.warn(
                    f"{ctx.locate(obj, key)}: {obj.ref}: annotation {key} is ignored in sro "
                    "(the state is the directory)"
                )
                continue
        else:
            continue
        where = f"{obj.ref}: annotation {key}"
        check = checks.get(name)
        if check is None:
            known = ", ".join(PREFIX + n for n in sorted(checks))
            problems.add(
                errors.RecipeInvalid(f"{where} is unknown (known: {known})", location=ctx.locate(obj, key))
            )
            ok = False
        elif not isinstance(value, str):
            problems.add(errors.RecipeInvalid(f"{where} must be a string", location=ctx.locate(obj, key)))
            ok = False
        elif problem := check(value):
            problems.add(errors.RecipeInvalid(f"{where}: {value!r} {problem}", location=ctx.locate(obj, key)))
            ok = False
    return ok
