"""The generic controller machinery: it knows keys, caches and writes, not SpecialResources.

``manager`` owns the lifecycle (connection, reflectors and their caches, the Lease,
workers, health, signals); ``controller`` runs the workers and hands each outcome to
``result.decide``, the one outcome policy; ``handlers`` turns cache changes into queue
keys. What a key means is the business of whatever ``sro.app`` registers with the manager;
nothing here imports ``sro.plan`` or ``sro.engine``.
"""
