"""What a real machine's Node carries besides the inventory's labels, at a real machine's size.

The inventory names the labels sro selects and groups by (NFD's kernel, OS and PCI labels).
A real node carries far more, and every watch event of it carries all of it: NFD's CPU,
memory, storage and kernel-config labels (50-100 on a server), nfd-master's annotation
listing them, the cloud and kubeadm annotations, and the kubelet's ``status.images``
(up to ``nodeStatusMaxImages``, 50, each with its digest and tag). A simulated node of
16 labels and no images is a fifth of that, and made every node event cheap to read in a
way no real fleet is; these are added to each simulated node so sro reads bodies of the
real size. None of it is in the inventory format: ``sro render --nodes`` neither needs
nor shows it (``host_label_keys`` says which labels to leave out when comparing).
"""

from __future__ import annotations

import hashlib
from typing import Any

NFD = "feature.node.kubernetes.io"
NFD_ANNOTATION = "nfd.node.kubernetes.io"

# cpuid flags NFD publishes for a current x86 server CPU (its default allow list drops the
# most common ones; what remains is still dozens).
CPUID_FLAGS = (
    "ADX", "AESNI", "AMXBF16", "AMXINT8", "AMXTILE", "AVX", "AVX2", "AVX512BF16", "AVX512BITALG",
    "AVX512BW", "AVX512CD", "AVX512DQ", "AVX512F", "AVX512FP16", "AVX512IFMA", "AVX512VBMI",
    "AVX512VBMI2", "AVX512VL", "AVX512VNNI", "AVX512VPOPCNTDQ", "AVXVNNI", "CETIBT", "CETSS",
    "CLDEMOTE", "CMPXCHG8", "FMA3", "FSRM", "FXSR", "FXSROPT", "GFNI", "HYPERVISOR", "IBPB",
    "LAHF", "MOVBE", "MOVDIR64B", "MOVDIRI", "OSXSAVE", "SERIALIZE", "SHA", "STIBP", "SYSCALL",
    "SYSEE", "TSXLDTRK", "VAES", "VMX", "VPCLMULQDQ", "WAITPKG", "X87", "XGETBV1", "XSAVE",
    "XSAVEC", "XSAVEOPT", "XSAVES",
)  # fmt: skip

KERNEL_CONFIG = ("NO_HZ", "NO_HZ_IDLE", "PREEMPT_DYNAMIC")

# Images a GPU node's kubelet reports: the platform's, the operands' and a workload's.
IMAGES = (
    ("registry.k8s.io/pause", "3.10", 320_368),
    ("registry.k8s.io/kube-proxy", "v1.36.3", 31_218_334),
    ("quay.io/calico/node", "v3.29.1", 145_802_447),
    ("quay.io/calico/cni", "v3.29.1", 94_451_392),
    ("registry.k8s.io/nfd/node-feature-discovery", "v0.17.3", 74_512_118),
    ("quay.io/prometheus/node-exporter", "v1.9.0", 12_504_230),
    ("docker.io/grafana/grafana", "11.4.0", 121_440_301),
    ("nvcr.io/nvidia/driver", "550.127.08-rhel9.4", 1_218_337_912),
    ("nvcr.io/nvidia/k8s/container-toolkit", "v1.17.3-ubi8", 141_337_024),
    ("nvcr.io/nvidia/k8s-device-plugin", "v0.17.0", 137_991_202),
    ("nvcr.io/nvidia/k8s/dcgm-exporter", "3.3.9-3.6.1-ubuntu22.04", 512_018_443),
    ("nvcr.io/nvidia/gpu-feature-discovery", "v0.8.2-ubi8", 78_218_335),
    ("nvcr.io/nvidia/cuda", "12.6.3-base-ubi9", 249_102_776),
    ("nvcr.io/nvidia/cuda", "12.4.1-runtime-ubuntu22.04", 1_643_230_019),
    ("nvcr.io/nvidia/pytorch", "24.11-py3", 9_807_112_566),
    ("nvcr.io/nvidia/tritonserver", "24.11-py3", 7_012_998_213),
    ("docker.io/library/busybox", "1.37", 2_166_802),
    ("docker.io/library/python", "3.12-slim", 47_318_201),
    ("quay.io/jetstack/cert-manager-controller", "v1.16.2", 21_018_660),
    ("registry.k8s.io/sig-storage/csi-node-driver-registrar", "v2.12.0", 10_972_301),
    ("registry.k8s.io/sig-storage/livenessprobe", "v2.14.0", 9_711_200),
    ("docker.io/fluent/fluent-bit", "3.2.2", 36_015_771),
    ("quay.io/cilium/hubble-relay", "v1.16.4", 18_733_012),
    ("quay.io/kubevirt/virt-handler", "v1.4.0", 41_009_118),
)


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def node_labels(*, arch: str) -> dict[str, str]:
    """NFD's labels of a host, beyond the kernel, OS and PCI ones the inventory names."""
    if arch != "amd64":
        return {f"{NFD}/cpu-model.vendor_id": "ARM", f"{NFD}/memory-numa": "true"}
    out = {f"{NFD}/cpu-cpuid.{flag}": "true" for flag in CPUID_FLAGS}
    out.update({f"{NFD}/kernel-config.{opt}": "true" for opt in KERNEL_CONFIG})
    out.update(
        {
            f"{NFD}/cpu-cstate.enabled": "true",
            f"{NFD}/cpu-hardware_multithreading": "true",
            f"{NFD}/cpu-model.family": "6",
            f"{NFD}/cpu-model.id": "143",
            f"{NFD}/cpu-model.vendor_id": "Intel",
            f"{NFD}/cpu-pstate.scaling_governor": "performance",
            f"{NFD}/cpu-pstate.status": "active",
            f"{NFD}/cpu-pstate.turbo": "true",
            f"{NFD}/cpu-rdt.RDTCMT": "true",
            f"{NFD}/cpu-rdt.RDTL3CA": "true",
            f"{NFD}/cpu-rdt.RDTMBA": "true",
            f"{NFD}/cpu-rdt.RDTMBM": "true",
            f"{NFD}/cpu-rdt.RDTMON": "true",
            f"{NFD}/kernel-selinux.enabled": "true",
            f"{NFD}/memory-numa": "true",
            f"{NFD}/network-sriov.capable": "true",
            f"{NFD}/storage-nonrotationaldisk": "true",
            "node.kubernetes.io/instance-type": "gpu-8x-metal",
            "topology.kubernetes.io/region": "region-1",
            "topology.kubernetes.io/zone": "region-1a",
            "beta.kubernetes.io/arch": arch,
            "beta.kubernetes.io/os": "linux",
        }
    )
    return out


def host_label_keys(*, arch: str = "amd64") -> frozenset[str]:
    """The labels ``node_labels`` adds: what a comparison with the inventory leaves out."""
    return frozenset(node_labels(arch=arch))


def node_annotations(*, name: str, all_labels: dict[str, str]) -> dict[str, str]:
    """The annotations NFD, kubeadm and a CSI driver leave on a node."""
    nfd = sorted(k.removeprefix(f"{NFD}/") for k in all_labels if k.startswith(f"{NFD}/"))
    return {
        f"{NFD_ANNOTATION}/feature-labels": ",".join(nfd),
        f"{NFD_ANNOTATION}/worker.version": "v0.17.3",
        "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        "csi.volume.kubernetes.io/nodeid": f'{{"csi.tigera.io":"{name}","nfs.csi.k8s.io":"{name}"}}',
    }


def node_images() -> list[dict[str, Any]]:
    """``status.images`` as a kubelet reports it: largest first, each by digest and tag."""
    listed = [
        {"names": [f"{repo}@sha256:{_digest(f'{repo}:{tag}')}", f"{repo}:{tag}"], "sizeBytes": size}
        for repo, tag, size in IMAGES
    ]
    return sorted(listed, key=lambda image: -int(image["sizeBytes"]))
