#!/usr/bin/env python3
"""A small operator built on sro's manager, for leader-election tests and benchmarks.

It watches ConfigMaps in one namespace as primaries. For the ConfigMap named ``tick``
it writes the ConfigMap ``written-by`` (data: this process's identity and a counter)
and asks to run again in 0.2 s, so the leader writes continuously. Every write is
appended to an audit file as one JSON line (identity, start, end, wall-clock), which
a test merges across processes to prove two leaders never wrote at once.

    runtime_operator.py --namespace NS --identity ID --port P --audit FILE
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sro import settings
from sro.observe import logs
from sro.runtime import result
from sro.runtime.manager import Manager


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--namespace", required=True)
    p.add_argument("--identity", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--audit", required=True)
    p.add_argument("--kubeconfig", default=None)
    p.add_argument("--lease-duration", type=float, default=15.0)
    p.add_argument("--renew-deadline", type=float, default=10.0)
    p.add_argument("--retry-period", type=float, default=2.0)
    return p.parse_args()


def record(path: str, entry: dict[str, object]) -> None:
    """Append one audit line (small and rare: a blocking write is fine here)."""
    with Path(path).open("a") as f:
        f.write(json.dumps(entry) + "\n")


async def main(args: argparse.Namespace) -> int:
    logs.configure(format="json", level="info")
    m = Manager(
        settings.Settings(
            api=settings.ApiSettings(kubeconfig=args.kubeconfig),
            server=settings.ServerSettings(port=args.port),
            lease=settings.LeaseSettings(
                namespace=args.namespace,
                name="runtime-test-leader",
                identity=args.identity,
                lease_duration=args.lease_duration,
                renew_deadline=args.renew_deadline,
                retry_period=args.retry_period,
            ),
            controller=settings.ControllerSettings(workers=2, grace_period=5),
        )
    )
    m.watch_primary("v1", "ConfigMap", namespace=args.namespace)
    count = 0

    async def reconcile(key: str) -> result.Result:
        nonlocal count
        ns, _, name = key.partition("/")
        if name != "tick":
            return result.DONE
        count += 1
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "written-by", "namespace": ns},
            "data": {"holder": args.identity, "n": str(count)},
        }
        start = time.time()
        await m.writer.apply(body)
        record(args.audit, {"id": args.identity, "start": start, "end": time.time()})
        return result.requeue_after(0.2)

    m.reconcile_with(reconcile)
    return await m.run()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse())))
