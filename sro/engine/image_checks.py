"""Asking the registry about a render's per-kernel images, between render and plan.

Before a per-kernel DaemonSet is created or a node moves to a new kernel group, the
images of that group must exist (``sro.plan.images`` decides what follows when they do
not). This step asks: the images ``needs.kernel_images`` names, only those of the
registries the operator lists (``--image-check-registries``; ``*`` for every one, none
by default: a cluster whose registries the operator cannot reach must not see every
group held), each with the pull secrets the kubelet would use (the pod's and its
service account's, read through a one-minute cache), all at once. The ``Resolver``
caches answers with TTLs, so most passes send nothing; the first question about an
unreachable registry costs at most its connect timeout, awaited, never blocking the
event loop. The checked render comes back pinned by digest (``sro.images.pins``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import structlog

from sro import errors
from sro.images import answers, client, needs, pins, secrets
from sro.images import credentials as credentials_
from sro.kube import http
from sro.model import desired
from sro.plan import observed

PINNED_KEPT = 256
"""SpecialResources whose last pinned render is kept (one each)."""

log = structlog.get_logger(__name__)

Checks = Mapping[str, tuple[observed.ImageCheck, ...]]


@dataclass(frozen=True, kw_only=True)
class Settings:
    registries: tuple[str, ...] = ()
    """Registry hosts whose images are checked (``*``: every registry); empty: no checks."""
    resolver: client.Settings = field(default_factory=client.Settings)


@dataclass(frozen=True, kw_only=True)
class Checked:
    """A render with its checked images pinned, and what the registry said per group."""

    state: desired.DesiredState
    images: Checks


class ImageChecks:
    """One per process: its resolver's cache and tokens serve every SpecialResource."""

    def __init__(
        self,
        settings: Settings,
        *,
        api: Callable[[], http.Api],
        metrics: client.RegistryMetrics | None = None,
    ) -> None:
        self._settings = settings
        self._api = api
        self._metrics = metrics
        self._resolver: client.Resolver | None = None
        self._secrets: secrets.Cached | None = None
        # By SpecialResource: the render last pinned, the answers, and the pinned render.
        self._pinned: dict[
            str,
            tuple[desired.DesiredState, Mapping[str, tuple[observed.ImageCheck, ...]], desired.DesiredState],
        ] = {}

    @property
    def enabled(self) -> bool:
        return bool(self._settings.registries)

    async def close(self) -> None:
        if self._resolver is not None:
            await self._resolver.close()

    async def check(self, wanted: desired.DesiredState) -> Checked:
        """``wanted`` pinned, and the answers per kernel group (empty: nothing checked)."""
        chosen = [n for n in needs.kernel_images(wanted) if pins.checked(n.image, self._settings.registries)]
        if not chosen:
            return Checked(state=wanted, images={})
        if self._resolver is None:
            self._resolver = client.Resolver(self._settings.resolver, metrics=self._metrics)
        if self._secrets is None:
            self._secrets = secrets.Cached(self._api())
        found = await asyncio.gather(*(self._ask(n) for n in chosen))
        images = pins.checks(chosen, {n.image: a for n, a in zip(chosen, found, strict=True)})
        return Checked(state=self._pin(wanted, images), images=images)

    def _pin(
        self, wanted: desired.DesiredState, images: Mapping[str, tuple[observed.ImageCheck, ...]]
    ) -> desired.DesiredState:
        """``pins.pin``, the same objects again for the same render and answers: the
        planner then reuses the last walk's objects and index whole (``walk_memo``)."""
        last = self._pinned.get(wanted.sr_name)
        if last is not None and last[0] is wanted and last[1] == images:
            return last[2]
        pinned = pins.pin(wanted, images)
        self._pinned.pop(wanted.sr_name, None)
        self._pinned[wanted.sr_name] = (wanted, images, pinned)
        while len(self._pinned) > PINNED_KEPT:
            del self._pinned[next(iter(self._pinned))]
        return pinned

    def forget(self, images: Iterable[str]) -> None:
        """Drop the answers about ``images`` (a build in the cluster just pushed them)."""
        if self._resolver is not None:
            for image in images:
                self._resolver.cache.forget(image)

    async def _ask(self, need: needs.Need) -> answers.Answer:
        assert self._resolver is not None and self._secrets is not None
        held: Sequence[credentials_.PullSecret] = ()
        try:
            held, _ = await self._secrets.read(namespace=need.namespace, pod_spec=need.pod_spec)
        except errors.SroError as exc:  # a secret unread is no pull secret: said in the log
            log.warning("pull secrets not read", namespace=need.namespace, error=str(exc))
        return await self._resolver.resolve(need.image, secrets=held)
