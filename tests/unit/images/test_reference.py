"""Image references read as a runtime reads them: Docker Hub defaults, ports, tags, digests."""

import pytest

from sro.images import reference

pytestmark = pytest.mark.unit

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("text", "registry", "repository", "tag", "digest"),
    [
        ("ubuntu", "docker.io", "library/ubuntu", "", ""),
        ("ubuntu:22.04", "docker.io", "library/ubuntu", "22.04", ""),
        ("nvidia/driver:550-5.14.0", "docker.io", "nvidia/driver", "550-5.14.0", ""),
        ("index.docker.io/library/busybox", "docker.io", "library/busybox", "", ""),
        ("docker.io/busybox", "docker.io", "library/busybox", "", ""),
        ("quay.io/org/team/img:v1", "quay.io", "org/team/img", "v1", ""),
        ("localhost/img", "localhost", "img", "", ""),
        ("127.0.0.1:5000/a/b:t", "127.0.0.1:5000", "a/b", "t", ""),
        ("reg.example:443/img@" + DIGEST, "reg.example:443", "img", "", DIGEST),
        ("reg.example/img:t@" + DIGEST, "reg.example", "img", "t", DIGEST),
        ("[::1]:5000/img", "[::1]:5000", "img", "", ""),
        ("Registry.Local/img", "Registry.Local", "img", "", ""),
    ],
)
def test_references_are_read_like_a_runtime_reads_them(
    text: str, registry: str, repository: str, tag: str, digest: str
) -> None:
    ref = reference.parse(text)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (registry, repository, tag, digest)


def test_the_manifest_asked_is_the_digest_then_the_tag_then_latest() -> None:
    assert reference.parse("img").manifest == "latest"
    assert reference.parse("img:t").manifest == "t"
    assert reference.parse("img:t@" + DIGEST).manifest == DIGEST


def test_docker_hub_is_asked_on_its_api_host() -> None:
    assert reference.parse("busybox").api_host == "registry-1.docker.io"
    assert reference.parse("q.io/x").api_host == "q.io"
    assert str(reference.parse("busybox")) == "docker.io/library/busybox:latest"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "reg.io/Upper",
        "img:",
        "img@sha256:short",
        "a b",
        " img",
        "img:" + "t" * 200,
        "x" * 2000,
        "reg.io/",
        "reg.io:99999/x",
    ],
)
def test_what_no_runtime_could_pull_is_refused(text: str) -> None:
    with pytest.raises(reference.InvalidReference):
        reference.parse(text)


def test_loopback_hosts_are_recognised_with_or_without_a_port() -> None:
    assert all(reference.is_loopback(h) for h in ("localhost", "127.0.0.1:5000", "[::1]:80", "127.9.9.9"))
    assert not any(reference.is_loopback(h) for h in ("quay.io", "10.0.0.1:5000", "localhost.example"))
