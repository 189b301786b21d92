"""Wake a Trial's reconcile loop when something it waits for changes (events), not on a fast timer."""

from __future__ import annotations

import asyncio
import threading


class Wakeups:
    """One asyncio.Event per Trial (``namespace/name``), set from any thread or coroutine."""

    def __init__(self) -> None:
        self._events: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Event]] = {}
        self._lock = threading.Lock()
        self._by_namespace: dict[str, str] = {}
        self._loops: dict[str, tuple[str, str]] = {}  # Trial key -> (its Benchmark's key, its uid)
        self._gone: set[str] = set()  # uids of Trials whose loop must end

    def event(self, key: str, owner: str = "", uid: str = "") -> asyncio.Event:
        """The Trial's event (made on first use, bound to the running loop); ``owner``: its Benchmark's key."""
        with self._lock:
            if key not in self._events:
                self._events[key] = (asyncio.get_running_loop(), asyncio.Event())
            if uid:
                self._loops[key] = (owner, uid)
            return self._events[key][1]

    def forget(self, key: str, uid: str = "") -> None:
        with self._lock:
            self._events.pop(key, None)
            self._loops.pop(key, None)
            self._gone.discard(uid)
            self._by_namespace = {ns: k for ns, k in self._by_namespace.items() if k != key}

    def gone(self, key: str, uid: str) -> None:
        """The Trial was deleted: its loop must end even if kopf never stops it.

        kopf stops a daemon only when it sees the deletion blocked by its finalizer; a Trial deleted
        before that finalizer landed disappears with its daemon still running.
        """
        with self._lock:
            if self._loops.get(key, ("", ""))[1] != uid:
                return
            self._gone.add(uid)
        self.poke(key)

    def end_loops(self, owner: str) -> None:
        """The Benchmark ``owner`` is being deleted (its Trials too): every loop of it ends after its step."""
        with self._lock:
            keys = [k for k, (o, _) in self._loops.items() if o == owner]
            self._gone.update(self._loops[k][1] for k in keys)
        for k in keys:
            self.poke(k)

    def is_gone(self, uid: str) -> bool:
        with self._lock:
            return uid in self._gone

    def loops_of(self, owner: str) -> list[str]:
        """Trial keys of the Benchmark ``owner`` whose loop still runs."""
        with self._lock:
            return sorted(k for k, (o, _) in self._loops.items() if o == owner)

    def watch_namespaces(self, key: str, namespaces: list[str]) -> None:
        """Changes in these namespaces wake the Trial ``key`` (its regions' and database's)."""
        with self._lock:
            for ns in namespaces:
                self._by_namespace[ns] = key

    def poke_namespace(self, namespace: str) -> bool:
        with self._lock:
            key = self._by_namespace.get(namespace)
        return key is not None and self.poke(key)

    def poke(self, key: str) -> bool:
        """Wake the Trial's loop; False when no loop waits for it (not started, or ended)."""
        with self._lock:
            entry = self._events.get(key)
        if entry is None:
            return False
        loop, ev = entry
        loop.call_soon_threadsafe(ev.set)
        return True


async def sleep(ev: asyncio.Event, timeout_s: float) -> bool:
    """Wait until poked or ``timeout_s`` passed; True when poked."""
    try:
        await asyncio.wait_for(ev.wait(), timeout=max(0.0, timeout_s))
        return True
    except TimeoutError:
        return False


WAKEUPS = Wakeups()
