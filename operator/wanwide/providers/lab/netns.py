"""One network namespace per region, a shaped point-to-point link per pair.

Address plan (all inside 10.77.0.0/16, see docs/lab-internals.md):

- region ``i`` (0-based, in the order given) has the service address
  ``10.77.<block+i>.1/32`` on its loopback; every service of the region binds it;
- the link to region ``j`` is the device ``wan<j>`` inside region ``i``'s
  namespace, unnumbered: ``10.77.<block+j>.1/32 dev wan<j> src <own address>``
  (the peer answers ARP for its loopback address);
- the host (root namespace) reaches every region, unshaped, over a veth pair
  ``ww<tag>h<i>`` ↔ ``host``; the host side carries ``10.77.0.1/32``
  (:data:`HOST_ADDRESS`); the namespaces do not forward, so this never becomes
  a path between regions.

``block`` is the first of 1, 51, 101, 151 (else any) not used by a live run
nor by a host route into 10.77.0.0/16.

Use as a context manager, or call :meth:`Network.destroy`; a killed run is
undone by :func:`wanwide.providers.lab.state.cleanup_all`.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import logging
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wanwide.core.plan.layout import Layout, hub_of, plan_layout
from wanwide.core.plan.links import LinkMap, OneWay, Pair
from wanwide.providers.lab import procs, shaping
from wanwide.providers.lab.procs import LabError
from wanwide.providers.lab.state import LabState, default_state_dir, list_states

log = logging.getLogger(__name__)

HOST_ADDRESS = "10.77.0.1"
GATEWAY = "169.254.77.1"  # the next hop a region or group hub routes through its hub link (pinned, onlink)
LAB_NET = "10.77.0.0/16"
NETNS_PREFIX = "ww-"
_BLOCKS = (1, 51, 101, 151)


def new_tag() -> str:
    """A short random run tag (5 chars, [a-z0-9]) usable in interface names."""
    return secrets.token_hex(3)[:5]


def _check_tag(tag: str) -> str:
    if not re.fullmatch(r"[a-z0-9]{1,6}", tag):
        raise LabError(f"run tag {tag!r}: 1-6 chars of [a-z0-9] (it goes into interface names)")
    return tag


def _used_octets() -> set[int]:
    """Third octets of 10.77.x.y in use: live runs' blocks and the host's routes.

    The host routes matter because they are shared by every run whatever its
    state dir (another developer's run may keep its state elsewhere).
    """
    used: set[int] = {0}
    for st in list_states():
        if st.owner_alive():
            info = st.data.get("info", {})
            b = info.get("address_block")
            n = int(info.get("n_regions", 1))
            if b is not None:
                used.update(range(int(b), int(b) + max(n, 1)))
    r = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True,
                       text=True)
    for m in re.finditer(r"(?:^|\s)10\.77\.(\d+)\.", r.stdout):
        used.add(int(m.group(1)))
    return used


def _free_block(n: int) -> int:
    """Lowest third octet b >= 1 with b..b+n-1 unused (regions are 10.77.b+i.1)."""
    used = _used_octets()
    for b in _BLOCKS:
        if b + n <= 250 and not used.intersection(range(b, b + n)):
            return b
    for b in range(1, 251 - n):
        if not used.intersection(range(b, b + n)):
            return b
    raise LabError(f"no free address block for {n} regions in 10.77.0.0/16")


@dataclass
class Network:
    regions: list[str]
    links: LinkMap
    tag: str
    shaper: str
    state: LabState
    block: int
    sock_dir: Path
    host_links: bool = True
    shapeable: bool = False
    pairs: dict[tuple[str, str], shaping.Link] = field(default_factory=dict)
    layout: Layout | None = None  # None: a full mesh (one link per pair)
    edges: dict[tuple[str, str], shaping.Link] = field(default_factory=dict)  # links to and between hubs
    drops: dict[Pair, float] = field(default_factory=dict)  # pair → drop probability at its first hub
    lifted: list[tuple[shaping.Link, OneWay, OneWay]] = field(default_factory=list)  # (link, its shaping) while lifted
    destroyed: bool = False
    _old_handlers: dict[int, Any] = field(default_factory=dict)

    # ------------------------------------------------------------ naming
    def index(self, region: str) -> int:
        try:
            return self.regions.index(region)
        except ValueError:
            raise LabError(f"unknown region {region!r} (regions: {self.regions})") from None

    def netns(self, region: str) -> str:
        return f"{NETNS_PREFIX}{self.tag}-{region}"

    def netns_path(self, region: str) -> str:
        """Where ``region``'s namespace is mounted (what a thread enters with setns)."""
        return f"/run/netns/{self.netns(region)}"

    def node_netns(self, node: str) -> str:
        """A region's namespace, or a hub's (``ww-<tag>-_hub…``: hub names start with ``_``, no region's does)."""
        return self.netns(node)

    def address(self, region: str) -> str:
        return f"10.77.{self.block + self.index(region)}.1"

    @property
    def host_address(self) -> str:
        return HOST_ADDRESS

    def wan_ifname(self, region: str, peer: str) -> str:
        """Name of ``region``'s link device towards ``peer`` (inside region's namespace)."""
        return f"wan{self.index(peer)}"

    def host_ifname(self, region: str) -> str:
        return f"ww{self.tag}h{self.index(region)}"

    # ------------------------------------------------------------ running things
    def exec_in(self, region: str, argv: Sequence[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` to completion inside ``region``'s namespace (see procs.run)."""
        return procs.run(argv, netns=self.netns(region), **kw)

    def popen_in(self, region: str, argv: Sequence[str], **kw: Any) -> subprocess.Popen[Any]:
        """subprocess.Popen of ``argv`` inside ``region``'s namespace."""
        return subprocess.Popen(procs.ns_argv(self.netns(region), argv), **kw)

    def start_in(self, region: str, name: str, argv: Sequence[str], log_path: str | Path,
                 **kw: Any) -> procs.Managed:
        """Start a long-running process in ``region``, recorded in the state for clean-up."""
        return procs.Managed.start_process(name, argv, log_path, netns=self.netns(region),
                                           state=self.state, **kw)

    # ------------------------------------------------------------ measuring
    def measure_rtt(self, src: str, dst: str, samples: int = 10, method: str = "tcp",
                    port: int = 9, interval: float = 0.05, timeout: float = 0.95,
                    with_lost: bool = False) -> list[Any]:
        """RTT samples in ms from ``src``'s namespace to ``dst``'s address.

        ``tcp``: time of a TCP connect (a closed port answers RST: one RTT, no
        listener needed); ``ping``: ICMP echo. Lost probes (no answer within
        ``timeout``) are left out, so ``len(result) <= samples``; ``with_lost``:
        None in their place instead (ping: at the end), so ``len(result) == samples``
        (the network check counts the loss).
        """
        target = self.address(dst) if dst in self.regions else dst
        if method == "ping":
            r = self.exec_in(src, [*rt_prefix(), "ping", "-n", "-c", str(samples), "-i", str(max(interval, 0.002)),
                                   "-W", str(max(1, int(timeout + 0.999))), target],
                             check=False, timeout=samples * (interval + timeout) + 30)
            got: list[Any] = [float(m) for m in re.findall(r"time=([0-9.]+) ms", r.stdout)]
            return got + [None] * (samples - len(got)) if with_lost else got
        if method != "tcp":
            raise LabError(f"measure_rtt: unknown method {method!r}")
        # the real-time priority is taken by the probe once started, where permitted (probe.realtime says why)
        r = self.exec_in(src, [sys.executable, "-m", "wanwide.pipeline.runner.probe", target, str(port),
                               str(samples), str(interval), str(timeout), str(RT_PRIORITY)],
                         timeout=samples * (interval + timeout) + 30)
        answers = [None if x is None else float(x) for x in json.loads(r.stdout)]
        return answers if with_lost else [x for x in answers if x is not None]

    # ------------------------------------------------------------ changing
    def set_link(self, src: str, dst: str, ow: OneWay) -> None:
        """Change the shaping of traffic ``src``→``dst`` on the live network.

        On a link of its own: that link's shaping. Through hubs (``layout``): only the loss can change
        (a fault: a cut, a loss window), as a random drop of that pair's packets at its first hub with
        the probability that gives the pair exactly ``ow``'s loss; a new delay re-shapes the hub links
        (:meth:`reshape`)."""
        lay = self.layout
        if lay is not None and frozenset((src, dst)) not in lay.direct:
            self._drop(src, dst, ow, lay)
            self.links[(src, dst)] = ow
            return
        a, b = sorted((src, dst), key=self.index)
        link = self.pairs[(a, b)]
        a_to_b, b_to_a = (ow, link.b_to_a) if src == a else (link.a_to_b, ow)
        if link.kind == "veth":
            raise LabError(f"link {a}-{b} was built unshaped (veth); cannot shape it now")
        shaping.shaper_for(link.kind).update(link, a_to_b, b_to_a)
        self.links[(src, dst)] = ow

    def _drop(self, src: str, dst: str, ow: OneWay, lay: Layout) -> None:
        base = lay.effective(src, dst)
        if (ow.delay_ms, ow.jitter_ms, ow.rate_mbit) != (base.delay_ms, base.jitter_ms, base.rate_mbit):
            raise LabError(f"{src}→{dst} goes through a hub: only its loss can change on the live network, "
                           f"not {base} → {ow} (re-shape the whole WAN with reshape())")
        keep = (1 - min(ow.loss_pct, 100.0) / 100) / (1 - base.loss_pct / 100) if base.loss_pct < 100 else 0.0
        q = round(min(1.0, max(0.0, 1 - keep)), 9)
        hub = lay.first_hub(src, dst)
        assert hub is not None
        ns = self.node_netns(hub)
        match = ["-s", self.address(src), "-d", self.address(dst)]
        old = self.drops.pop((src, dst), None)
        if old is not None:
            procs.run(["iptables", "-D", "FORWARD", *match, *_drop_rule(old)], netns=ns)
        if q > 0:
            procs.run(["iptables", "-A", "FORWARD", *match, *_drop_rule(q)], netns=ns)
            self.drops[(src, dst)] = q

    def reshape(self, links: LinkMap) -> None:
        """Give every pair its shaping in ``links`` (a new trial on the same deployment): through hubs, the
        hub links are re-shaped (n changes, not n²) when the new shaping keeps the layout's structure."""
        lay = self.layout
        if lay is None:
            for pair, want in links.items():
                if pair[0] != pair[1] and self.links.get(pair, OneWay()) != want:
                    self.set_link(*pair, want)
            return
        new = plan_layout(links, self.regions, lay.group_of, prefer=lay.kind)
        if new.structure() != lay.structure():
            raise LabError(f"the new links need another {lay.kind} layout (other direct pairs or hubs): "
                           "this deployment cannot be re-shaped to them; run with --fresh")
        for pair in list(self.drops):
            self._drop(*pair, lay.effective(*pair), lay)
        for e in new.edges:
            link = self.edges.get((e.a, e.b)) or self.pairs.get(tuple(sorted((e.a, e.b), key=self.index)))
            assert link is not None
            a_to_b, b_to_a = (e.a_to_b, e.b_to_a) if link.a == e.a else (e.b_to_a, e.a_to_b)
            if (link.a_to_b, link.b_to_a) != (a_to_b, b_to_a):
                if link.kind == "veth":
                    raise LabError(f"link {link.a}-{link.b} was built unshaped (veth); cannot shape it now")
                shaping.shaper_for(link.kind).update(link, a_to_b, b_to_a)
        self.layout = new
        self.links.update({p: w for p, w in links.items() if p[0] != p[1]})

    def lift(self) -> None:
        """Every shaped link (between regions, to and between hubs) passes traffic unshaped until :meth:`restore`
        gives each its shaping back: services deploy on an unconstrained WAN and are then constrained, as the
        studies' harness did (deploy, then ``tc netem``) and the Kubernetes provider does (its NetworkChaos comes
        after the deployment). ``links`` (what the trial asked for) is not touched; a fault's drops are not
        expected here (a new deployment has none)."""
        if self.drops:
            raise LabError(f"lift(): {len(self.drops)} pair(s) have fault drops; lift them first")
        if self.lifted:
            return
        zero = OneWay()
        for lk in [*self.pairs.values(), *self.edges.values()]:
            if lk.kind != "veth" and not (lk.a_to_b.is_noop and lk.b_to_a.is_noop):
                a_to_b, b_to_a = lk.a_to_b, lk.b_to_a
                shaping.shaper_for(lk.kind).update(lk, zero, zero)
                self.lifted.append((lk, a_to_b, b_to_a))

    def restore(self) -> None:
        """Every link :meth:`lift` lifted takes its shaping back."""
        while self.lifted:
            lk, a_to_b, b_to_a = self.lifted[-1]
            shaping.shaper_for(lk.kind).update(lk, a_to_b, b_to_a)
            self.lifted.pop()

    def in_force(self) -> LinkMap:
        """Each pair's shaping as in force now: what the trial asked for, none while lifted."""
        return {pair: OneWay() for pair in self.links} if self.lifted else dict(self.links)

    @contextlib.contextmanager
    def unconstrained(self) -> Iterator[None]:
        """The network :meth:`lift`-ed for the ``with`` block, then restored (after a failure too, its error kept)."""
        self.lift()
        ok = False
        try:
            yield
            ok = True
        finally:  # after a failure the deployment goes anyway: its error, not the restore's, is kept
            with contextlib.nullcontext() if ok else contextlib.suppress(Exception):
                self.restore()

    def describe(self) -> dict[str, Any]:
        """What to record in a bundle: shaper, addresses, links."""
        return {
            "shaper": self.shaper,
            "tag": self.tag,
            "host_address": HOST_ADDRESS if self.host_links else None,
            "regions": {r: {"netns": self.netns(r), "address": self.address(r)}
                        for r in self.regions},
            "links": [lk.as_dict() for lk in self.pairs.values()],
            "layout": "mesh" if self.layout is None else self.layout.kind,
            "hubs": [] if self.layout is None else self.layout.hubs,
            "hub_links": [lk.as_dict() for lk in self.edges.values()],
        }

    # ------------------------------------------------------------ tearing down
    def destroy(self) -> list[str]:
        if self.destroyed:
            return []
        self.destroyed = True
        notes = self.state.cleanup()
        self._restore_signals()
        return notes

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def on_term(signum: int, frame: Any) -> None:
            # Unwind through the callers' finally/with blocks, then exit.
            raise SystemExit(128 + signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(ValueError, OSError):
                self._old_handlers[sig] = signal.signal(sig, on_term)
        # SIGINT raises KeyboardInterrupt already; atexit covers what unwinding missed.
        atexit.register(self.destroy)

    def _restore_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, h in self._old_handlers.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, h)
        self._old_handlers.clear()
        with contextlib.suppress(Exception):
            atexit.unregister(self.destroy)


RT_PRIORITY = 20


def rt_prefix() -> list[str]:
    """``chrt -f 20`` when permitted: a probe woken late on a busy machine inflates RTTs."""
    import shutil

    if shutil.which("chrt") and os.geteuid() == 0:
        return ["chrt", "-f", str(RT_PRIORITY)]
    return []


def _sysctls(ns: str, forward: bool = False) -> None:
    for k, v in (("net.ipv4.conf.all.rp_filter", "0"), ("net.ipv4.conf.default.rp_filter", "0"),
                 ("net.ipv4.ip_forward", "1" if forward else "0"), ("net.ipv6.conf.all.disable_ipv6", "1")):
        procs.run(["sysctl", "-q", "-w", f"{k}={v}"], netns=ns, check=False)


def build(
    regions: Sequence[str],
    links: Mapping[tuple[str, str], OneWay],
    tag: str | None = None,
    shaper: str | None = "auto",
    state_dir: Path | None = None,
    host_links: bool = True,
    handle_signals: bool = True,
    shapeable: bool = False,
    benchmark: str | None = None,
    layout: str = "mesh",
    group_of: Mapping[str, str] | None = None,
) -> Network:
    """Create the namespaces, addresses, shaped links and host links of ``regions``.

    ``links`` gives the OneWay for each ordered pair of distinct regions
    (missing pairs are unshaped). ``shaper``: ``auto`` (netem if the kernel has
    it, else linkemu, else wirefilter: shaping.select_shaper) or one of them by name; the one used is
    ``Network.shaper``. ``shapeable``: every link goes through the shaper, even
    one with nothing to shape yet, so that :meth:`Network.set_link` can change
    it later. ``benchmark`` is recorded in the state (``wanwide lab clean -f``
cleans only its own runs). ``layout``: ``mesh`` (a link per pair), ``star``, ``two-level`` (regions
    on hubs, ``group_of`` giving each region's group) or ``auto`` (the fewest links that still give every
    pair exactly its shaping: core/plan/layout.py). On failure everything created so far is removed.
    """
    regions = list(regions)
    if len(set(regions)) != len(regions) or not regions:
        raise LabError(f"regions must be distinct and non-empty: {regions}")
    for r in regions:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,40}", r):
            raise LabError(f"region name {r!r} not usable in a namespace name")
    tag = _check_tag(tag or new_tag())
    used = shaping.select_shaper(shaper)
    t0 = time.monotonic()
    sdir = Path(state_dir) if state_dir else default_state_dir()
    sdir.mkdir(parents=True, exist_ok=True)
    # Allocation of the address block and the state file under one lock, so
    # two runs starting together do not pick the same block.
    with open(sdir / ".alloc.lock", "w") as lockf:
        fcntl.flock(lockf, fcntl.LOCK_EX)
        old = sdir / f"{tag}.json"
        if old.exists():
            prev = LabState.load(old)
            if prev.owner_alive():
                raise LabError(f"run tag {tag!r} in use by live pid {prev.data.get('owner_pid')}")
            prev.cleanup()  # left by a killed run with the same tag
        block = _free_block(len(regions))
        state = LabState.create(tag, sdir, benchmark=benchmark)
        state.data["info"] |= {"address_block": block, "n_regions": len(regions)}
        state.save()
    state.set_info("shaper", used)
    sock_dir = Path(tempfile.gettempdir()) / f"ww-{tag}"
    state.add_dir(sock_dir)
    full = {(a, b): links.get((a, b), OneWay()) for a in regions for b in regions if a != b}
    try:
        lay = plan_layout(full, regions, group_of, prefer=layout)
    except ValueError as e:
        raise LabError(str(e)) from None
    net = Network(regions=regions, links=dict(links), tag=tag, shaper=used, state=state,
                  block=block, sock_dir=sock_dir, host_links=host_links, shapeable=shapeable,
                  layout=None if lay.kind == "mesh" else lay)
    if handle_signals:
        net._install_signals()
    try:
        _build(net)
    except BaseException:
        net.destroy()
        raise
    log.info("lab network %s: %d regions, %s layout, %d links, shaper %s, built in %.1f s",
             tag, len(regions), lay.kind, len(net.pairs) + len(net.edges), used, time.monotonic() - t0)
    state.set_info("network", net.describe())
    return net


def _build(net: Network) -> None:
    for r in net.regions:
        _add_netns(net, net.netns(r))
        procs.run(["ip", "addr", "add", f"{net.address(r)}/32", "dev", "lo"], netns=net.netns(r))
    lay = net.layout
    pairs = [(a, b) for i, a in enumerate(net.regions) for b in net.regions[i + 1:]]
    if lay is not None:
        pairs = [(a, b) for a, b in pairs if frozenset((a, b)) in lay.direct]
        for h in lay.hubs:
            _add_netns(net, net.node_netns(h), forward=True)
    zero = OneWay()
    for a, b in pairs:
        link = shaping.Link(
            a=a, b=b, ns_a=net.netns(a), ns_b=net.netns(b),
            if_a=net.wan_ifname(a, b), if_b=net.wan_ifname(b, a),
            a_to_b=net.links.get((a, b), zero), b_to_a=net.links.get((b, a), zero),
            sock_dir=net.sock_dir / f"{net.index(a)}-{net.index(b)}",
        )
        shaping.connect(link, net.shaper, net.state, shapeable=net.shapeable)
        net.pairs[(a, b)] = link
        for reg, peer, ifname in ((a, b, link.if_a), (b, a, link.if_b)):
            ns = net.netns(reg)
            procs.run(["ip", "link", "set", ifname, "up"], netns=ns)
            procs.run(["ip", "route", "add", f"{net.address(peer)}/32", "dev", ifname,
                       "src", net.address(reg)], netns=ns)
    if lay is not None:
        _hub_links(net, lay)
    if net.host_links:
        for r in net.regions:
            ns, hif = net.netns(r), net.host_ifname(r)
            net.state.add_host_link(hif)
            procs.run(["ip", "link", "add", hif, "type", "veth", "peer", "name", "host",
                       "netns", ns])
            procs.run(["ip", "addr", "add", f"{HOST_ADDRESS}/32", "dev", hif])
            procs.run(["ip", "link", "set", hif, "up"])
            procs.run(["ip", "route", "add", f"{net.address(r)}/32", "dev", hif, "src",
                       HOST_ADDRESS])
            procs.run(["ip", "link", "set", "host", "up"], netns=ns)
            procs.run(["ip", "route", "add", f"{HOST_ADDRESS}/32", "dev", "host", "src",
                       net.address(r)], netns=ns)
    # Trap: stale neighbour entries after (re)linking stall traffic ~10 s.
    for r in net.regions:
        procs.run(["ip", "neigh", "flush", "all"], netns=net.netns(r), check=False)
    # Then pin every peer's MAC: otherwise the first packet after an idle minute
    # waits for an ARP exchange across the shaped link (one extra RTT).
    for link in net.pairs.values():
        mac_a = _mac(link.ns_a, link.if_a)
        mac_b = _mac(link.ns_b, link.if_b)
        _pin(link.ns_a, link.if_a, net.address(link.b), mac_b)
        _pin(link.ns_b, link.if_b, net.address(link.a), mac_a)
    if lay is not None:
        _hub_routes(net, lay)
    if net.host_links:
        for r in net.regions:
            ns, hif = net.netns(r), net.host_ifname(r)
            _pin(ns, "host", HOST_ADDRESS, _mac(None, hif))
            _pin(None, hif, net.address(r), _mac(ns, "host"))


def _add_netns(net: Network, ns: str, forward: bool = False) -> None:
    if Path("/run/netns", ns).exists():
        raise LabError(f"namespace {ns} exists already (another run with tag {net.tag}?)")
    net.state.add_netns(ns)  # first: a kill right after the add leaves nothing unrecorded
    procs.run(["ip", "netns", "add", ns])
    procs.run(["ip", "link", "set", "lo", "up"], netns=ns)
    _sysctls(ns, forward)


SPOKE = "wanh"  # a region's link to its hub
UPLINK = "core"  # a group hub's link to the core hub


def _hub_ifnames(net: Network, lay: Layout, a: str, b: str) -> tuple[str, str]:
    """Device names of a hub link: region ``wanh`` ↔ ``r<i>`` in its hub; group hub ``core`` ↔ ``g<k>``."""
    if a in net.regions:
        return SPOKE, f"r{net.index(a)}"
    groups = [h for h in lay.hubs if h != b]
    return UPLINK, f"g{groups.index(a)}"


def _hub_links(net: Network, lay: Layout) -> None:
    """The shaped links to and between hubs (regions' spokes, group hubs' uplinks)."""
    for k, e in enumerate(x for x in lay.edges if frozenset((x.a, x.b)) not in lay.direct):
        if_a, if_b = _hub_ifnames(net, lay, e.a, e.b)
        link = shaping.Link(a=e.a, b=e.b, ns_a=net.node_netns(e.a), ns_b=net.node_netns(e.b), if_a=if_a, if_b=if_b,
                            a_to_b=e.a_to_b, b_to_a=e.b_to_a, sock_dir=net.sock_dir / f"h{k}")
        shaping.connect(link, net.shaper, net.state, shapeable=net.shapeable)
        net.edges[(e.a, e.b)] = link
        procs.run(["ip", "link", "set", if_a, "up"], netns=link.ns_a)
        procs.run(["ip", "link", "set", if_b, "up"], netns=link.ns_b)


def _hub_routes(net: Network, lay: Layout) -> None:
    """Routes through the hubs, every next hop's MAC pinned (no ARP across a shaped link):

    - a region: the lab's addresses via its hub (``GATEWAY`` onlink on ``wanh``); its direct links' /32
      routes are more specific and win;
    - a hub: each region on it by its /32 on that region's spoke; a group hub: the rest via the core;
      the core: each region via its group's hub.
    """
    for (a, _b), link in net.edges.items():
        mac_a, mac_b = _mac(link.ns_a, link.if_a), _mac(link.ns_b, link.if_b)
        procs.run(["ip", "route", "add", LAB_NET, "via", GATEWAY, "dev", link.if_a, "onlink",
                   *(["src", net.address(a)] if a in net.regions else [])], netns=link.ns_a)
        _pin(link.ns_a, link.if_a, GATEWAY, mac_b)
        below = [a] if a in net.regions else [r for r in net.regions if lay.group_of and hub_of(lay.group_of[r]) == a]
        for r in below:
            if a in net.regions:
                procs.run(["ip", "route", "add", f"{net.address(r)}/32", "dev", link.if_b], netns=link.ns_b)
                _pin(link.ns_b, link.if_b, net.address(r), mac_a)
            else:
                procs.run(["ip", "route", "add", f"{net.address(r)}/32", "via", GATEWAY, "dev", link.if_b, "onlink"],
                          netns=link.ns_b)
        if a not in net.regions:
            _pin(link.ns_b, link.if_b, GATEWAY, mac_a)


def _mac(ns: str | None, ifname: str) -> str:
    out = procs.run(["ip", "-j", "link", "show", ifname], netns=ns).stdout
    return str(json.loads(out)[0]["address"])


def _drop_rule(q: float) -> list[str]:
    """iptables match and target dropping a share ``q`` of packets (all of them at 1)."""
    return ["-j", "DROP"] if q >= 1 else ["-m", "statistic", "--mode", "random", "--probability", f"{q:.9f}", "-j", "DROP"]


def _pin(ns: str | None, ifname: str, addr: str, mac: str) -> None:
    procs.run(["ip", "neigh", "replace", addr, "lladdr", mac, "dev", ifname, "nud", "permanent"],
              netns=ns)
