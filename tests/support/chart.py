"""The Helm chart (``charts/sro``) and the kustomize tree (``manifests/``) as the pinned tools render them.

Both installs must say the same thing (CRD, RBAC, admission policy, the operator's settings),
so tests render both with the binaries hack/build made (``helm``, ``kubectl kustomize``) and
compare objects. With release ``sro`` in namespace ``sro-system`` the chart's objects have
the names of the kustomize tree's.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from simcluster import layout

REPO = Path(__file__).resolve().parents[2]

CHART = REPO / "charts" / "sro"
MANIFESTS = REPO / "manifests"
FULL_VALUES = REPO / "tests" / "support" / "chart-values-full.yaml"
RELEASE = "sro"
NAMESPACE = "sro-system"

Doc = dict[str, Any]


def tool(name: str) -> Path:
    """A binary hack/build made (helm, or a control-plane component such as kubectl)."""
    if name == "helm":
        path = layout.bin_dir() / f"helm-{layout.versions()['HELM_VERSION']}"
    else:
        path = layout.binary(name)
    if not path.exists():
        raise AssertionError(f"{path} is missing: run hack/build")
    return path


def run(name: str, *args: str, input: str | None = None, timeout: float = 120) -> str:
    """Runs a pinned tool; its stdout, or an AssertionError carrying its stderr."""
    proc = subprocess.run(
        [str(tool(name)), *args], input=input, capture_output=True, text=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise AssertionError(f"{name} {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def docs(text: str) -> list[Doc]:
    return [d for d in yaml.safe_load_all(text) if d]


def template(
    *,
    chart: Path = CHART,
    values: Sequence[Path] = (),
    set_values: Mapping[str, str] = {},
    namespace: str = NAMESPACE,
    include_crds: bool = False,
    extra: Iterable[str] = (),
) -> list[Doc]:
    """``helm template sro CHART`` with values files and ``--set`` pairs, decoded."""
    args = ["template", RELEASE, str(chart), "--namespace", namespace]
    args += [a for v in values for a in ("--values", str(v))]
    args += [a for k, v in set_values.items() for a in ("--set", f"{k}={v}")]
    args += ["--include-crds"] if include_crds else []
    return docs(run("helm", *args, *extra))


def kustomize(path: Path = MANIFESTS) -> list[Doc]:
    return docs(run("kubectl", "kustomize", str(path)))


def index(objects: Iterable[Doc]) -> dict[tuple[str, str], Doc]:
    """Objects by (kind, name)."""
    return {(d["kind"], d["metadata"]["name"]): d for d in objects}
