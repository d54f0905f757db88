"""The test's own watch of pods and the operator's Lease: evidence apart from sro and the audit.

A thread per resource lists, then watches from the list's version (resuming after every
close, relisting after a 410 or a failure, an object missing from a relist counted as
deleted), straight to the API server with the admin identity, never through the fault
proxy and never through sro's code. It keeps every object it ever saw by UID, with when it
was first seen and when it went: a driver pod replaced twice, a Lease handed over, show
up here even if the audit were wrong. It runs in threads because the tests call kubectl
synchronously, which would stall a watch on the test's event loop.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import http.client
import json
import ssl
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any


@dataclasses.dataclass(frozen=True)
class Seen:
    """One object (by UID) as last seen, and when it appeared and went."""

    uid: str
    body: dict[str, Any]
    first_seen: float
    gone_at: float | None = None


def _aware(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


class Watch(threading.Thread):
    """List, then watch one collection, forever; ``objects`` holds every UID seen."""

    def __init__(self, *, server: str, pki: Path, path: str, label_selector: str = "") -> None:
        super().__init__(daemon=True, name=f"watch {path}")
        url = urllib.parse.urlsplit(server)
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 443
        self.context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        self.path = path
        self.selector = label_selector
        self.objects: dict[str, Seen] = {}
        self.transitions: list[dict[str, Any]] = []  # every version of every object, in order
        self.errors = 0
        self._halt = threading.Event()
        self._conn: http.client.HTTPSConnection | None = None
        self._resp: http.client.HTTPResponse | None = None
        self._lock = threading.Lock()

    def _request(self, params: dict[str, str], *, timeout: float) -> http.client.HTTPResponse:
        if self.selector:
            params = {**params, "labelSelector": self.selector}
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)
        self._conn = conn
        conn.request("GET", f"{self.path}?{urllib.parse.urlencode(params)}")
        self._resp = conn.getresponse()
        return self._resp

    def _close(self) -> None:
        """Close the response and then the connection: an answer with ``Connection: close``
        (an API server going down) leaves the socket to the response alone, and one
        collected later with a traceback's cycle is an unclosed socket (a ResourceWarning
        pytest fails the test on)."""
        resp, self._resp = self._resp, None
        conn, self._conn = self._conn, None
        if resp is not None:
            with contextlib.suppress(OSError):
                resp.close()
        if conn is not None:
            conn.close()

    def _see(self, body: dict[str, Any], now: float) -> None:
        meta = body.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        with self._lock:
            seen = self.objects.get(uid)
            if seen is None:
                self.objects[uid] = Seen(uid=uid, body=body, first_seen=now)
            else:
                self.objects[uid] = dataclasses.replace(seen, body=body)
            self.transitions.append({"at": now, "body": body})

    def _gone(self, uid: str, now: float) -> None:
        with self._lock:
            seen = self.objects.get(uid)
            if seen is not None and seen.gone_at is None:
                self.objects[uid] = dataclasses.replace(seen, gone_at=now)

    def _list(self) -> str:
        try:
            resp = self._request({}, timeout=30)
            data = json.loads(resp.read())
        finally:
            self._close()
        if resp.status != 200:
            raise OSError(f"list {self.path}: {resp.status}")
        now = time.time()
        present = set()
        for item in data.get("items") or ():
            present.add(item["metadata"]["uid"])
            self._see(item, now)
        for uid, seen in list(self.objects.items()):
            if uid not in present and seen.gone_at is None:
                self._gone(uid, now)
        return str(data["metadata"]["resourceVersion"])

    def _watch(self, rv: str) -> str:
        try:
            return self._stream(rv)
        finally:
            self._close()

    def _stream(self, rv: str) -> str:
        params = {"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "20"}
        resp = self._request(params, timeout=40)
        if resp.status != 200:
            raise OSError(f"watch {self.path}: {resp.status}")
        while not self._halt.is_set():
            line = resp.readline()
            if not line:
                break
            event = json.loads(line)
            obj = event.get("object") or {}
            if event.get("type") == "ERROR":
                raise OSError(f"watch {self.path}: {obj.get('code')} {obj.get('message')}")
            rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
            if event.get("type") == "BOOKMARK":
                continue
            now = time.time()
            self._see(obj, now)
            if event.get("type") == "DELETED":
                self._gone(str(obj["metadata"]["uid"]), now)
        return rv

    def run(self) -> None:
        rv = ""
        while not self._halt.is_set():
            try:
                if not rv:
                    rv = self._list()
                rv = self._watch(rv)
            except (OSError, http.client.HTTPException, ValueError, KeyError):
                self.errors += 1
                rv = ""
                self._halt.wait(0.5)

    def stop(self) -> None:
        self._halt.set()
        conn = self._conn
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(2)
        self.join(timeout=30)

    def snapshot(self) -> list[Seen]:
        with self._lock:
            return list(self.objects.values())


def pod_node(body: dict[str, Any]) -> str:
    """The node a pod is for: its nodeName, else the node its DaemonSet pinned it to."""
    spec = body.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    terms = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms") or []
    for term in terms:
        for field in term.get("matchFields") or ():
            if field.get("key") == "metadata.name" and field.get("values"):
                return str(field["values"][0])
    return ""


def is_driver(body: dict[str, Any]) -> bool:
    """A pod of a DaemonSet (the recipe's kernel-affine driver)."""
    return any(
        o.get("kind") == "DaemonSet" for o in (body.get("metadata") or {}).get("ownerReferences") or ()
    )


class Recorder:
    """The watches a fault test keeps: sro's pods (every namespace) and the operator's Lease."""

    def __init__(self, *, server: str, pki: Path, operator_namespace: str) -> None:
        self.pods = Watch(server=server, pki=pki, path="/api/v1/pods", label_selector="sro.dev/owner")
        self.leases = Watch(
            server=server,
            pki=pki,
            path=f"/apis/coordination.k8s.io/v1/namespaces/{operator_namespace}/leases",
        )

    def start(self) -> None:
        self.pods.start()
        self.leases.start()

    def stop(self) -> None:
        self.pods.stop()
        self.leases.stop()

    def driver_pods(self, sr: str) -> dict[str, list[Seen]]:
        """node -> the driver pods of SpecialResource ``sr`` ever seen there, oldest first."""
        out: dict[str, list[Seen]] = {}
        for seen in self.pods.snapshot():
            labels = (seen.body.get("metadata") or {}).get("labels") or {}
            if labels.get("sro.dev/owner") == sr and is_driver(seen.body):
                out.setdefault(pod_node(seen.body), []).append(seen)
        for pods in out.values():
            pods.sort(key=lambda s: s.first_seen)
        return out

    def acquisitions(self) -> list[tuple[str, datetime.datetime]]:
        """(holderIdentity, acquireTime) of every holder the Lease ever named, in order."""
        found: list[tuple[str, datetime.datetime]] = []
        with self.leases._lock:
            transitions = list(self.leases.transitions)
        for t in transitions:
            spec = t["body"].get("spec") or {}
            holder, acquired = spec.get("holderIdentity") or "", spec.get("acquireTime")
            if holder and acquired and (holder, _aware(acquired)) not in found:
                found.append((holder, _aware(acquired)))
        return found
