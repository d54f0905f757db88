"""Reading kubeconfig files: merged as kubectl merges them, one context chosen.

sro reads kubeconfigs itself rather than through kubernetes-asyncio's loader: that loader
imports the library's whole generated client (some 850 modules, about 36 MB resident) to
fill one ``Configuration``, and sro sends raw JSON over its own session and uses nothing
else of it. What is read here is what kubectl reads:

* ``KUBECONFIG`` may list several files; for every named cluster, user and context the
  first file that names it wins, and so does the first ``current-context`` set;
* a relative path in an entry (a certificate, a key, a token file, an exec command with a
  slash) is relative to the file that entry came from.

Every mistake is an ``errors.UsageError`` that names the file and says what is wrong, in
one line, before anything connects.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sro import errors

DEFAULT = Path("~/.kube/config")


@dataclass(frozen=True, kw_only=True)
class Entry:
    """A cluster or user stanza and the directory its relative paths start from."""

    body: Mapping[str, Any]
    base: Path

    def text(self, key: str) -> str:
        value = self.body.get(key)
        return "" if value is None else str(value)

    def path(self, key: str) -> str:
        """The file ``key`` names, made absolute from ``base``; "" when not given."""
        value = self.text(key)
        return str(self.base / Path(value).expanduser()) if value else ""


@dataclass(frozen=True, kw_only=True)
class Merged:
    """Every file of one ``KUBECONFIG`` taken together."""

    where: str
    contexts: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    clusters: dict[str, Entry] = field(default_factory=dict)
    users: dict[str, Entry] = field(default_factory=dict)
    current: str = ""


@dataclass(frozen=True, kw_only=True)
class Chosen:
    """The context in use: its name, cluster and user (an empty user: no credentials)."""

    context: str
    cluster: Entry
    user: Entry


def paths(value: str) -> list[Path]:
    """The files a ``KUBECONFIG`` value names, in order."""
    return [Path(p).expanduser() for p in value.split(os.pathsep) if p]


def merged(value: str) -> Merged:
    """The files ``value`` names, merged; a file that does not exist adds nothing."""
    contexts: dict[str, Mapping[str, Any]] = {}
    tables: dict[str, dict[str, Entry]] = {"cluster": {}, "user": {}}
    current = ""
    for path in paths(value):
        body = _read(path)
        for entry in _entries(body, "contexts"):
            context = entry.get("context")
            contexts.setdefault(str(entry.get("name")), context if isinstance(context, dict) else {})
        for stanza, table in tables.items():
            for entry in _entries(body, f"{stanza}s"):
                inner = entry.get(stanza)
                found = Entry(body=inner if isinstance(inner, dict) else {}, base=path.parent)
                table.setdefault(str(entry.get("name")), found)
        if not current and body.get("current-context"):
            current = str(body["current-context"])
    return Merged(
        where=value, contexts=contexts, clusters=tables["cluster"], users=tables["user"], current=current
    )


def choose(config: Merged, *, context: str | None) -> Chosen:
    """The context ``context`` names, else the current one, with its cluster and user."""
    name = context or config.current
    where = config.where
    if not name:
        hint = (
            f": pass --context (one of {_listed(config.contexts)})" if config.contexts else " and no context"
        )
        raise errors.UsageError(f"kubeconfig {where!r} has no current-context{hint}")
    if name not in config.contexts:
        raise errors.UsageError(
            f"kubeconfig {where!r} has no context {name!r} (it has {_listed(config.contexts)})"
        )
    chosen = config.contexts[name]
    cluster = str(chosen.get("cluster") or "")
    if cluster not in config.clusters:
        raise errors.UsageError(
            f"kubeconfig {where!r}: context {name!r} names no known cluster ({cluster!r})"
        )
    user = str(chosen.get("user") or "")
    if user and user not in config.users:
        raise errors.UsageError(f"kubeconfig {where!r}: context {name!r} names no known user ({user!r})")
    return Chosen(
        context=name,
        cluster=config.clusters[cluster],
        user=config.users.get(user, Entry(body={}, base=Path("."))),
    )


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        body = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise errors.UsageError(
            f"kubeconfig {str(path)!r} cannot be read: {' '.join(str(exc).split())}"
        ) from None
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise errors.UsageError(f"kubeconfig {str(path)!r} is not a mapping")
    return body


def _entries(body: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    found = body.get(key) or []
    return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []


def _listed(names: Sequence[str] | Mapping[str, Any]) -> str:
    return ", ".join(sorted(names)) or "none"
