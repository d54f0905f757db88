"""Decoding API JSON that anyone may have written: never an exception for its shape.

Objects come from users: a SpecialResource's ``spec.set`` or a labelled ConfigMap can nest
a thousand levels deep, and ``json.loads`` then raises ``RecursionError`` (not a
``ValueError``), on a list page or a watch line, for the whole page. One such object must
cost its own fields, not the operator's caches, so decoding:

1. tries ``orjson.loads`` on small text (the fast path: a watch event of a pod decodes
   in less than half of ``json.loads``'s time, and a converging fleet sends tens of
   thousands of them); text over ``FAST_MAX`` (list pages) goes to ``json.loads``, as
   orjson's parse briefly takes about thirteen times its input (4 MiB for a 320 KiB
   page, 60 MiB for a page of 500 nodes) where ``json.loads`` takes twice;
2. on anything orjson refuses, ``json.loads``, which decides what the text is: orjson
   is stricter (no ``NaN``, no lone surrogate escapes, 1,024 levels at most), and the
   standard decoder accepts or refuses as it always did; text with a run of 19 digits
   goes there at once, as orjson reads an integer past 64 bits as a float;
3. on ``RecursionError``, decodes again in a helper thread with a large stack and a
   recursion limit high enough for anything the API server stores (it refuses deeper
   than 10,000 levels), then
4. cuts every value nested deeper than ``MAX_DEPTH`` to the string ``TOO_DEEP``, walking
   iteratively, so no later recursive code (copies, hashes, templates) sees the depth.

The objects keep their identity (names, metadata) and the parts of them a reconcile reads;
a cut field is reported where it is read (the SpecialResource's parse refuses the marker).
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import msgspec
import orjson

MAX_DEPTH = 64
"""Deeper values are cut: Kubernetes objects nest a few dozen levels at most."""
TOO_DEEP = "<sro: nested too deeply>"
FAST_MAX = 64 * 1024
"""Longest text decoded with orjson (see step 1): every watch event and object, no list page."""
_DIGITS = bytes(0x31 if 0x30 <= b <= 0x39 else 0x30 for b in range(256))  # digit -> 1, else 0
_LONG_RUN = b"1" * 19  # a run of 19 digits: an integer orjson may not keep whole
_DEEP_LIMIT = 20_000  # recursion limit for the retry: past the API server's own 10,000
_DEEP_STACK = 512 * 1024 * 1024  # bytes of stack for the retry thread


def loads(data: bytes | str, *, int64: bool = False) -> Any:
    """``json.loads(data)`` for any nesting depth; ``ValueError`` for what is not JSON.

    ``int64``: the text is an object of a kind whose schema the API server enforces (a
    Node, a Pod), so no integer in it is wider than 64 bits and orjson keeps each whole:
    the scan for runs of 19 digits is skipped (a fifth of the decode of a node's
    heartbeat, thousands of them a minute on a large fleet)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) <= FAST_MAX and (int64 or _LONG_RUN not in raw.translate(_DIGITS)):  # microseconds
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # not JSON, or JSON only the standard decoder takes: it says which
    try:
        return json.loads(data)
    except RecursionError:
        return cut(_loads_deep(data))


TYPED_MISSES = (msgspec.MsgspecError, RecursionError)
"""What a typed decode raises for text that does not fit its type, is not JSON, or nests
past msgspec's own limit: each is then decoded whole (``loads``), which says which."""


class Typed:
    """Decodes JSON into ``body``, a ``TypedDict`` (``sro.model.bodies``): msgspec builds the
    fields it names and skips the rest without building them; text that does not fit is
    decoded whole by ``loads``, as without a type. For answers whose readers take a few
    fields of large objects (a node's metadata: its managedFields are most of it)."""

    def __init__(self, body: type) -> None:
        self._decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(body)

    def __call__(self, data: bytes) -> Any:
        try:
            return self._decoder.decode(data)
        except TYPED_MISSES:
            return loads(data)


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
