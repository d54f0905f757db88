"""The SpecialResource CRD's bounds on what sro writes, in one place.

The API server refuses (422) a status that breaks a ``maxItems`` or ``maxLength`` of
``manifests/crd/sro.dev_specialresources.yaml``, and a refused status write leaves the
SpecialResource saying nothing at all. So the recipe loader refuses a recipe that could
never be reported (more states than status rows), and the status builders cut every
list and string to these bounds. A unit test reads the CRD and checks each value here
against it, so the two cannot drift; ``PATHS`` says where each one lives in the schema.
"""

from __future__ import annotations

from types import MappingProxyType

STATES_MAX = 64
"""Rows of ``status.states``: one per recipe state, so a recipe has at most this many."""
STATE_NAME_MAX = 63
"""``status.states[].name``; the loader's own bound on state names is tighter (node labels)."""
FAILING_NODES_MAX = 10
"""``status.states[].failingNodes``: the first failing nodes by name."""
FAILING_REASON_MAX = 1024
"""``status.states[].failingNodes[].reason``."""
ROW_MESSAGE_MAX = 4096
"""``status.states[].message``."""
STATE_LINE_MAX = 1024
"""``status.state``, the one human line."""
KERNELS_MAX = 1024
"""Rows of ``status.kernels``: one per kernel group among the selected nodes."""
KERNEL_MAX = 256
"""``status.kernels[].kernel``."""
OS_MAX = 64
"""``status.kernels[].os``."""
KERNEL_IMAGE_MAX = 512
"""``status.kernels[].image``: the reference grammar's 255-character name plus tag or digest."""
KERNEL_DIGEST_MAX = 128
"""``status.kernels[].digest``: ``sha256:`` and 64 hex digits, with room to spare."""
CONDITION_MESSAGE_MAX = 32768
"""``status.conditions[].message``."""
RECIPE_NAME_MAX = 63
"""``status.recipe.name`` (and ``spec.recipe``): a DNS label."""
UPGRADE_REVISION_MAX = 256
"""``status.upgrade.revision``."""
NODE_NAME_MAX = 253
"""A node name in ``status.upgrade`` (``skipped[]``, ``failingNodes[].node``)."""
HELD_NODES_MAX = 100
"""Rows of ``status.heldNodes``: the nodes held first to be let go."""
HELD_LABELS_MAX = 64
"""``status.heldNodes[].missingLabels``."""
LABEL_KEY_MAX = 317
"""A label key: a 253-character prefix, ``/`` and a 63-character name."""
PREFLIGHT_MAX = 64
"""Rows of ``status.preflight``: 16 expected kernels on up to 4 OSes each."""
PREFLIGHT_KERNEL_MAX = 63
"""``status.preflight[].kernel``: an NFD label value."""
PREFLIGHT_IMAGES_MAX = 16
"""``status.preflight[].images``."""
STATE_REF_MAX = 63
"""``status.preflight[].images[].state``: a state name."""
RESULT_MAX = 16
"""``status.preflight[].images[].result``."""

PATHS = MappingProxyType(
    {
        "status.states.maxItems": STATES_MAX,
        "status.states.items.name.maxLength": STATE_NAME_MAX,
        "status.states.items.failingNodes.maxItems": FAILING_NODES_MAX,
        "status.states.items.failingNodes.items.reason.maxLength": FAILING_REASON_MAX,
        "status.states.items.message.maxLength": ROW_MESSAGE_MAX,
        "status.state.maxLength": STATE_LINE_MAX,
        "status.kernels.maxItems": KERNELS_MAX,
        "status.kernels.items.kernel.maxLength": KERNEL_MAX,
        "status.kernels.items.os.maxLength": OS_MAX,
        "status.kernels.items.image.maxLength": KERNEL_IMAGE_MAX,
        "status.kernels.items.digest.maxLength": KERNEL_DIGEST_MAX,
        "status.conditions.items.message.maxLength": CONDITION_MESSAGE_MAX,
        "status.recipe.name.maxLength": RECIPE_NAME_MAX,
        "spec.recipe.maxLength": RECIPE_NAME_MAX,
        "status.upgrade.revision.maxLength": UPGRADE_REVISION_MAX,
        "status.upgrade.skipped.maxItems": FAILING_NODES_MAX,
        "status.upgrade.skipped.items.maxLength": NODE_NAME_MAX,
        "status.upgrade.failingNodes.maxItems": FAILING_NODES_MAX,
        "status.upgrade.failingNodes.items.node.maxLength": NODE_NAME_MAX,
        "status.upgrade.failingNodes.items.reason.maxLength": FAILING_REASON_MAX,
        "status.heldNodes.maxItems": HELD_NODES_MAX,
        "status.heldNodes.items.node.maxLength": NODE_NAME_MAX,
        "status.heldNodes.items.missingLabels.maxItems": HELD_LABELS_MAX,
        "status.heldNodes.items.missingLabels.items.maxLength": LABEL_KEY_MAX,
        "status.preflight.maxItems": PREFLIGHT_MAX,
        "status.preflight.items.kernel.maxLength": PREFLIGHT_KERNEL_MAX,
        "status.preflight.items.os.maxLength": OS_MAX,
        "status.preflight.items.images.maxItems": PREFLIGHT_IMAGES_MAX,
        "status.preflight.items.images.items.image.maxLength": KERNEL_IMAGE_MAX,
        "status.preflight.items.images.items.state.maxLength": STATE_REF_MAX,
        "status.preflight.items.images.items.result.maxLength": RESULT_MAX,
        "status.preflight.items.images.items.digest.maxLength": KERNEL_DIGEST_MAX,
    }
)
"""Each bound by its place in the CRD's openAPIV3Schema (``items`` for an array's items)."""
