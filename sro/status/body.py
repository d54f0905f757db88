"""The ``status`` sro writes on a SpecialResource, as ``TypedDict``s (contract section 1).

The builders in ``sro.status.summary`` return a ``StatusBody`` and the planner, ``finish``
and the Events read it by these names, so a misspelt field is a type error rather than a
status the CRD silently prunes. It stays a plain JSON-ready dict (the writer sends it as
it is, and comparing it with the stored status is a dict comparison). What the API server
hands back as the *previous* status is another matter: it is whatever someone stored, so
readers of ``previous`` take ``Mapping[str, Any]`` and check each field they use.
"""

from __future__ import annotations

from typing import NotRequired, Required, TypedDict


class ConditionBody(TypedDict):
    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str
    observedGeneration: int


class NodeCount(TypedDict):
    complete: int
    total: int


class FailingNode(TypedDict):
    node: str
    reason: str


class StateRow(TypedDict):
    """One row of ``status.states``: a state's progress over the selected nodes."""

    name: str
    phase: str
    nodes: NodeCount
    message: str
    failingNodes: list[FailingNode]


class KernelRow(TypedDict):
    kernel: str
    os: str
    nodes: int
    image: NotRequired[str]
    digest: NotRequired[str]


class PreflightImage(TypedDict):
    """One image of a ``status.preflight`` row, as its registry answered."""

    image: str
    state: str
    result: str
    digest: NotRequired[str]


class PreflightRow(TypedDict):
    """One row of ``status.preflight``: an expected kernel on one OS (``sro.plan.preflight``)."""

    kernel: str
    os: str
    ready: bool
    images: list[PreflightImage]


class HeldNode(TypedDict):
    """One row of ``status.heldNodes``: a node kept as it was after losing labels."""

    node: str
    until: str
    missingLabels: list[str]


class UpgradeStatus(TypedDict):
    """``status.upgrade``: where a driver upgrade stands (``sro.plan.upgrade``)."""

    phase: str
    revision: str
    nodes: dict[str, int]
    skipped: list[str]
    failingNodes: list[FailingNode]


class RecipeSource(TypedDict):
    name: str
    source: str


class NodeTotals(TypedDict):
    selected: int
    complete: int


class StatusBody(TypedDict, total=False):
    """The whole ``status``; the first five fields are always written."""

    observedGeneration: Required[int]
    state: Required[str]
    phase: Required[str]
    ready: Required[str]
    conditions: Required[list[ConditionBody]]
    recipe: RecipeSource
    nodes: NodeTotals
    kernels: list[KernelRow]
    heldNodes: list[HeldNode]
    states: list[StateRow]
    upgrade: UpgradeStatus
    preflight: list[PreflightRow]
