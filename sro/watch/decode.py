"""Decoding API JSON that anyone may have written: never an exception for its shape.

Objects come from users: a SpecialResource's ``spec.set`` or a labelled ConfigMap can nest
a thousand levels deep, and ``json.loads`` then raises ``RecursionError`` (not a
``ValueError``), on a list page or a watch line, for the whole page. One such object must
cost its own fields, not the operator's caches, so decoding:

1. tries ``json.loads`` (the fast path, every normal body);
2. on ``RecursionError``, decodes again in a helper thread with a large stack and a
   recursion limit high enough for anything the API server stores (it refuses deeper
   than 10,000 levels), then
3. cuts every value nested deeper than ``MAX_DEPTH`` to the string ``TOO_DEEP``, walking
   iteratively, so no later recursive code (copies, hashes, templates) sees the depth.

The objects keep their identity (names, metadata) and the parts of them a reconcile reads;
a cut field is reported where it is read (the SpecialResource's parse refuses the marker).
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

MAX_DEPTH = 64
"""Deeper values are cut: Kubernetes objects nest a few dozen levels at most."""
TOO_DEEP = "<sro: nested too deeply>"
_DEEP_LIMIT = 20_000  # recursion limit for the retry: past the API server's own 10,000
_DEEP_STACK = 512 * 1024 * 1024  # bytes of stack for the retry thread


def loads(data: bytes | str) -> Any:
    """``json.loads(data)`` for any nesting depth; ``ValueError`` for what is not JSON."""
    try:
        return json.loads(data)
    except RecursionError:
        return cut(_loads_deep(data))


def _loads_deep(data: bytes | str) -> Any:
    result: list[Any] = []
    failure: list[BaseException] = []

    def work() -> None:
        previous = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous, _DEEP_LIMIT))
        try:
            result.append(json.loads(data))
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)
        finally:
            sys.setrecursionlimit(previous)

    old_size = threading.stack_size()
    threading.stack_size(_DEEP_STACK)
    try:
        thread = threading.Thread(target=work, name="sro-deep-json")
        thread.start()
    finally:
        threading.stack_size(old_size)
    thread.join()
    if failure:
        if isinstance(failure[0], RecursionError):
            raise ValueError("JSON nested deeper than any object the API server stores") from None
        raise failure[0]
    return result[0]


def cut(value: Any, *, limit: int = MAX_DEPTH) -> Any:
    """``value`` with everything nested deeper than ``limit`` replaced by ``TOO_DEEP``
    (containers are modified in place; iterative, so any depth is fine)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if isinstance(child, dict | list):
                    if depth >= limit:
                        item[key] = TOO_DEEP
                    else:
                        stack.append((child, depth + 1))
        elif isinstance(item, list):
            for i, child in enumerate(item):
                if isinstance(child, dict | list):
                    if depth >= limit:
                        item[i] = TOO_DEEP
                    else:
                        stack.append((child, depth + 1))
    return value
