"""``spec.preflight`` as the SpecialResource's parser reads it (``sro.model.preflight``).

Covered: kernels with and without an OS, ``build``; a kernel that is no label value, an
OS without a version, an unknown field, a repeated entry and too many entries are each
named in the one ``SpecialResourceInvalid``.
"""

from __future__ import annotations

from typing import Any

import pytest

from sro.model import desired, preflight
from sro.model import specialresource as srmodel

pytestmark = pytest.mark.unit


def sr(spec: dict[str, Any]) -> srmodel.SpecialResource:
    return srmodel.parse({"apiVersion": "sro.dev/v1alpha1", "kind": "SpecialResource",
                          "metadata": {"name": "gpu"}, "spec": spec})  # fmt: skip


def test_kernels_with_and_without_an_os_and_build() -> None:
    spec = sr(
        {
            "preflight": {
                "build": True,
                "kernels": [
                    {"kernel": "5.14.0-503.11.1.el9_5.x86_64"},
                    {"kernel": "6.8.0-45-generic", "os": "ubuntu:24.04"},
                ],
            }
        }
    )
    assert spec.spec.preflight == preflight.Preflight(
        build=True,
        kernels=(
            preflight.Kernel(kernel="5.14.0-503.11.1.el9_5.x86_64"),
            preflight.Kernel(
                kernel="6.8.0-45-generic", os=desired.OsRelease(id="ubuntu", version_id="24.04")
            ),
        ),
    )
    assert sr({}).spec.preflight == preflight.NONE


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ({"kernels": [{"kernel": "5.14 bad"}]}, "spec.preflight.kernels[0].kernel"),
        ({"kernels": [{"kernel": "5.14", "os": "rhel"}]}, "spec.preflight.kernels[0].os 'rhel'"),
        ({"kernel": []}, "unknown spec.preflight fields ['kernel']"),
        ({"kernels": [{"kernel": "5.14"}, {"kernel": "5.14"}]}, "spec.preflight.kernels[1] repeats"),
        ({"kernels": [{"kernel": f"5.{i}"} for i in range(17)]}, "at most 16 entries"),
        ({"build": "yes"}, "spec.preflight.build must be true or false"),
        ("all", "spec.preflight must be a mapping"),
    ],
)
def test_a_bad_preflight_is_named(value: Any, said: str) -> None:
    with pytest.raises(srmodel.SpecialResourceInvalid, match=None) as caught:
        sr({"preflight": value})
    assert said in str(caught.value)
