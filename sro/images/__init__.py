"""Asking an image registry whether an image exists, before anything is made that pulls it.

A per-kernel driver image is named by kernel; a node that boots a kernel nobody built
for would otherwise sit in ``ImagePullBackOff``. This package answers one question per
image reference: it exists (with the digest the registry serves), it is missing, the
registry refused the credentials, or the registry could not be asked (and what it
said) — never confusing the last with a missing image.

What may go here: the registry v2 protocol as a client needs it (references, the
authentication challenge and token flow, pull-secret credentials, the proxy rule, the
result cache) and the thin reads of pull secrets. The decisions are pure modules
(``reference``, ``challenge``, ``credentials``, ``proxies``, ``answers``, ``cache``), tested
with plain values; only ``client`` speaks HTTP and only ``secrets`` reads the API. What
to do about a missing image (wait, build, taint) belongs to the planner, not here.

How a caller asks (``sro preflight`` does exactly this; the engine does the same before
it plans): ``needs.kernel_images(desired)`` names the images of each kernel group of a
render, each with its namespace and pod spec; ``secrets.Cached(api).read(namespace=…,
pod_spec=…)`` gives the pull secrets the kubelet would use; ``client.Resolver`` (one per
process, so its cache and tokens are shared) answers ``resolve_all(images, secrets=…)``
with an ``answers.Answer`` per image, which the pure planner can take as a plain mapping.
"""
