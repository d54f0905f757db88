"""Which nodes a walk keys again, from what the caches say changed since its memo's pass.

``walk_memo`` recalls a node's walk while its key (``Judge.node_key``) equals the one it
remembers, and building that key for every node, every pass, was a third of the walk at a
thousand nodes. A node's key reads its cached record, the pods on it and the per-node
pods named for it (the caches), the log tails of those pods and what sro's last patch of
it returned (engine memory), and what every node of its kernel group, or of the pass,
reads alike. When the engine says what its node and pod caches changed since the memo's
pass (``Observed.touched``), a node none of that news concerns, whose log tails and
answer are the same objects as the memo's, reads what it read then: its remembered key
stands, once the walk has checked the parts no cache change shows (``Judge.outline_holds``)
and the pass key. The walk's result is the same either way (``tests/unit/plan``).
"""

from __future__ import annotations

from collections.abc import Mapping

from sro.plan import judge as judge_
from sro.plan import observed as observed_
from sro.plan import walk_memo


def _moved(now: Mapping[str, object], then: Mapping[str, object]) -> set[str]:
    """Keys of ``now`` whose value is not the very object ``then`` holds, and keys gone."""
    out = {k for k, v in now.items() if then.get(k) is not v}
    if len(then) > len(now) - len(out):
        out.update(k for k in then if k not in now)
    return out


def to_key(last: walk_memo.Memo, seen: observed_.Observed, indexed: judge_.Index) -> frozenset[str] | None:
    """The nodes whose key the walk builds again; None: every node's (no news of the
    caches, another index of the objects, or other pods proven finished)."""
    touched = seen.touched
    if touched is None or last.index is not indexed or last.finished != seen.finished:
        return None
    named = indexed.named_for
    out = set(touched.nodes)
    out.update(touched.pod_nodes)
    out.update(n for key in touched.pods if (n := named.get(key)) is not None)
    out.update(_moved(seen.node_answers, last.answers))
    tails = _moved(seen.logs, last.logs)
    if tails:  # the nodes that read those tails: the pod's own, and the one it is named for
        for pod in seen.pods:
            if pod.uid in tails:
                out.add(pod.node)
                if (n := named.get((pod.namespace, pod.name))) is not None:
                    out.add(n)
    return frozenset(out)
