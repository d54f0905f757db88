"""``recipe.yaml``: its keys, the default node selector, the defaults and the state graph.

Exactly four keys are allowed, so a misspelt ``nodeSelector`` is an error rather than a
recipe that silently selects every node. State names become node label names next to
the SpecialResource's name, hence the DNS-label rule and the 40-character bound; each
state is one row of the SpecialResource's status, and the CRD allows at most
``crd_limits.STATES_MAX`` rows, so a longer list could never be reported (every status
write would be refused) and is an error here;
``complete`` is reserved for the label set once every state is complete. ``after``
defaults to the previous state and must form a graph without cycles. Every problem is
reported at the line of the key or state entry it concerns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from sro import errors
from sro.model import crd_limits, names, specialresource
from sro.render import problems as problems_
from sro.render import yamlstrict

RECIPE_KEYS = frozenset({"description", "nodeSelector", "defaults", "states"})
STATE_KEYS = frozenset({"name", "after"})
STATE_NAME_MAX = 40  # goes into node label names next to the SpecialResource name
STATES_MAX = crd_limits.STATES_MAX  # rows of status.states
RESERVED_STATES = frozenset({"complete", "upgrade"})  # node labels of their own (all done; upgrade walk)


@dataclass(frozen=True, kw_only=True)
class StateEntry:
    name: str
    after: tuple[str, ...]
    location: errors.Location


@dataclass(frozen=True, kw_only=True)
class Header:
    description: str
    node_selector: dict[str, str]
    defaults: dict[str, Any]
    states: tuple[StateEntry, ...]

    @classmethod
    def parse(cls, text: str, *, file: str, problems: problems_.Problems) -> Header:
        data = yamlstrict.load(text, file=file)
        lines = _key_lines(text)
        if not isinstance(data, Mapping):
            raise errors.RecipeInvalid(
                "must be a mapping with description, nodeSelector, defaults, states",
                location=errors.Location(file=file, line=1),
            )

        def at(key: str) -> errors.Location:
            return errors.Location(file=file, line=lines.get(key, 1))

        for key in sorted(set(data) - RECIPE_KEYS, key=str):
            problems.add(
                errors.RecipeInvalid(
                    f"unknown key {key!r} (allowed: {', '.join(sorted(RECIPE_KEYS))})", location=at(str(key))
                )
            )
        description = data.get("description") or ""
        if not isinstance(description, str):
            problems.add(errors.RecipeInvalid("description must be a string", location=at("description")))
        selector = _selector(data.get("nodeSelector"), location=at("nodeSelector"), problems=problems)
        defaults = data.get("defaults") or {}
        if not isinstance(defaults, Mapping):
            problems.add(errors.RecipeInvalid("defaults must be a mapping", location=at("defaults")))
            defaults = {}
        elif problem := specialresource.key_problem(defaults, at="defaults"):
            problems.add(errors.RecipeInvalid(problem, location=at("defaults")))
            defaults = {}
        states = _states(data.get("states"), text=text, file=file, location=at("states"), problems=problems)
        return cls(
            description=str(description), node_selector=selector, defaults=dict(defaults), states=states
        )


def _key_lines(text: str) -> dict[str, int]:
    """Line of each top-level key of a YAML mapping (for messages)."""
    try:
        node = yaml.compose(text, Loader=yamlstrict.StrictLoader)
    except yaml.YAMLError:
        return {}
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): k.start_mark.line + 1 for k, _ in node.value}


def _state_lines(text: str) -> list[int]:
    """Line of each item of the top-level ``states`` list."""
    node = yaml.compose(text, Loader=yamlstrict.StrictLoader)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == "states" and isinstance(value, yaml.SequenceNode):
                return [item.start_mark.line + 1 for item in value.value]
    return []


def _selector(value: Any, *, location: errors.Location, problems: problems_.Problems) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        problems.add(
            errors.RecipeInvalid(
                "nodeSelector must be a mapping of label keys to string values", location=location
            )
        )
        return {}
    out: dict[str, str] = {}
    for key, val in value.items():
        if not isinstance(val, str):
            problems.add(
                errors.RecipeInvalid(
                    f"nodeSelector value of {key!r} must be a string (quote it)", location=location
                )
            )
            continue
        problem = names.label_key_problem(str(key)) or names.label_value_problem(val)
        if problem:
            problems.add(errors.RecipeInvalid(f"nodeSelector {key}={val}: {problem}", location=location))
        out[str(key)] = val
    return out


def _states(
    value: Any, *, text: str, file: str, location: errors.Location, problems: problems_.Problems
) -> tuple[StateEntry, ...]:
    if not isinstance(value, list) or not value:
        problems.add(errors.RecipeInvalid("states must be a non-empty list", location=location))
        return ()
    if len(value) > STATES_MAX:
        problems.add(
            errors.RecipeInvalid(
                f"{len(value)} states, more than the {STATES_MAX} a SpecialResource's status can show "
                f"(status.states maxItems in the CRD)",
                location=location,
            )
        )
        return ()
    lines = _state_lines(text)
    entries: list[StateEntry] = []
    seen: set[str] = set()
    previous: str | None = None
    for i, item in enumerate(value):
        here = errors.Location(file=file, line=lines[i] if i < len(lines) else location.line)
        if not isinstance(item, Mapping):
            problems.add(errors.RecipeInvalid("a state is a mapping with name and after", location=here))
            continue
        for key in sorted(set(item) - STATE_KEYS, key=str):
            problems.add(
                errors.RecipeInvalid(f"unknown state key {key!r} (allowed: after, name)", location=here)
            )
        raw_name = item.get("name", "")
        name = str(raw_name)
        if not isinstance(raw_name, str):
            problems.add(
                errors.RecipeInvalid(f"state name {raw_name!r} must be a string (quote it)", location=here)
            )
        elif not names.is_dns_label(name, max_length=STATE_NAME_MAX):
            problems.add(
                errors.RecipeInvalid(
                    f"state name {name!r} must be a DNS label of at most {STATE_NAME_MAX} characters",
                    location=here,
                )
            )
        elif name in RESERVED_STATES:
            problems.add(errors.RecipeInvalid(f"state name {name!r} is reserved", location=here))
        elif name in seen:
            problems.add(errors.RecipeInvalid(f"state {name!r} is listed twice", location=here))
        seen.add(name)
        if "after" in item:
            after_raw = item["after"]
            if after_raw is None:
                after_raw = []
            if not isinstance(after_raw, list) or not all(isinstance(a, str) for a in after_raw):
                problems.add(
                    errors.RecipeInvalid(
                        f"state {name!r}: after must be a list of state names", location=here
                    )
                )
                after_raw = []
            after = tuple(dict.fromkeys(after_raw))
        else:
            after = (previous,) if previous else ()
        entries.append(StateEntry(name=name, after=after, location=here))
        previous = name
    _check_graph(entries, problems=problems)
    return tuple(entries)


def _check_graph(entries: list[StateEntry], *, problems: problems_.Problems) -> None:
    """``after`` names existing states, not the state itself, and forms no cycle."""
    by_name = {e.name: e for e in entries}
    for entry in entries:
        for dep in entry.after:
            if dep == entry.name:
                problems.add(
                    errors.RecipeInvalid(
                        f"state {entry.name!r} cannot come after itself", location=entry.location
                    )
                )
            elif dep not in by_name:
                problems.add(
                    errors.RecipeInvalid(
                        f"state {entry.name!r} comes after unknown state {dep!r}", location=entry.location
                    )
                )
    visiting: list[str] = []
    done: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        if name in visiting:
            cycle = [*visiting[visiting.index(name) :], name]
            problems.add(
                errors.RecipeInvalid(
                    f"states form a cycle: {' -> '.join(cycle)}", location=by_name[name].location
                )
            )
            return
        visiting.append(name)
        for dep in by_name[name].after:
            if dep in by_name and dep != name:
                visit(dep)
        visiting.pop()
        done.add(name)

    for entry in entries:
        visit(entry.name)
