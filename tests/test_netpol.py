"""The trials' NetworkPolicies (issue 43; docs/security.md 16): objects only, their enforcement is the CNI's."""

from __future__ import annotations

from tests.chartdata import fixture_plan
from wanwide.core.plan import names
from wanwide.providers.kubernetes.render import netpol, render_trial

P = fixture_plan()


def test_every_trial_namespace_denies_by_default_and_admits_the_trial_and_the_named_namespaces():
    objs = netpol.render(P)
    by_ns: dict[str, dict[str, dict]] = {}
    for o in objs:
        by_ns.setdefault(o["metadata"]["namespace"], {})[o["metadata"]["name"]] = o
    assert set(by_ns) == set(P.namespaces)
    for ns, pols in by_ns.items():
        deny = pols[netpol.DENY]["spec"]
        assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
        trial = pols[netpol.TRIAL]["spec"]
        froms = trial["ingress"][0]["from"]
        assert {"namespaceSelector": {"matchLabels": {names.L_TRIAL: P.name}}} in froms
        allowed = [f for f in froms if "matchExpressions" in f.get("namespaceSelector", {})]
        assert allowed[0]["namespaceSelector"]["matchExpressions"][0]["values"] == sorted(
            netpol.Settings().ingress_namespaces)
        assert {"to": [{"namespaceSelector": {"matchLabels": {names.L_TRIAL: P.name}}}]} in trial["egress"]
        assert (netpol.RUNNER in pols) == (ns in {P.namespace(r) for r in P.region_names})
    # every trial namespace carries the label the policies select on
    assert all(n["metadata"]["labels"][names.L_TRIAL] == P.name
               for n in render_trial(P).base if n["kind"] == "Namespace")


def test_the_admin_can_narrow_or_switch_them_off():
    s = netpol.Settings.of({"ingressNamespaces": [], "runnerEgress": [{"ports": [{"port": 9000}]}]})
    objs = netpol.render(P, s)
    trial = next(o for o in objs if o["metadata"]["name"] == netpol.TRIAL)
    assert trial["spec"]["ingress"] == [{"from": [{"namespaceSelector": {"matchLabels": {names.L_TRIAL: P.name}}}]}]
    runner = next(o for o in objs if o["metadata"]["name"] == netpol.RUNNER)
    assert runner["spec"]["egress"] == [{"ports": [{"port": 9000}]}]
    assert netpol.render(P, netpol.Settings.of({"enabled": False})) == []
    assert not [o for o in render_trial(P, network_policy=netpol.Settings(enabled=False)).base
                if o["kind"] == "NetworkPolicy"]
