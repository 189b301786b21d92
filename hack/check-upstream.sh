#!/usr/bin/env bash
# Repeat the upstream checks recorded in docs/upstream-checks.md.
#
# Needs network (GitHub over git, and the Go module proxy for helm). NOT run in
# CI: a developer runs it when bumping a pinned upstream version, then reviews
# the diff and updates docs/upstream-checks.md + tests/data/upstream/.
#
# usage:
#   hack/check-upstream.sh [--write] [--only NAME[,NAME]]
#     NAME: keystone | mariadb | cockroach | chaos | fixture
#   --write   overwrite tests/data/upstream/* with the regenerated lists
#             (default: regenerate into $WORK/out and diff against the repo)
#
# env:
#   WORK        scratch dir (default /tmp/wanwide-upstream); never inside the repo
#   MIRROR_DIR  dir holding bare clones named <owner>+<name>/repo (optional;
#               used instead of cloning when present)
#   HELM        helm binary (default: ~/.cache/wanwide/bin/helm-v3.22.0, else
#               built with `go install helm.sh/helm/v3/cmd/helm@v3.22.0`)
#   *_REF       override a pinned ref, e.g. OSH_REF=master MARIADB_REF=v26.6.0
#
# Exit status: 0 = everything matches the recorded facts; 1 = a diff or a
# failed check (read the output); 2 = usage/environment error.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/wanwide-upstream}
case "$WORK" in "$root"|"$root"/*) echo "WORK must be outside the repo" >&2; exit 2;; esac
data="$root/tests/data/upstream"
write=0
only="keystone,mariadb,cockroach,chaos,fixture"
while [ $# -gt 0 ]; do
  case "$1" in
    --write) write=1;;
    --only) only=$2; shift;;
    -h|--help) sed -n '2,25p' "$0"; exit 0;;
    *) echo "unknown argument: $1" >&2; exit 2;;
  esac
  shift
done
want() { case ",$only," in *",$1,"*) return 0;; *) return 1;; esac; }

# ---- pinned versions (keep in sync with docs/upstream-checks.md) ------------
OSH_REPO=openstack/openstack-helm
OSH_REF=${OSH_REF:-2026.1.0}
OSH_COMMIT=c665eedfa3ae1b76a7e8438fffcb62aefaa30a46
MARIADB_REPO=mariadb-operator/mariadb-operator
MARIADB_REF=${MARIADB_REF:-v26.6.0}
MARIADB_COMMIT=b2f76016ff71926414367f5347010766a7a1c257
CRDB_REPO=cockroachdb/cockroach-operator
CRDB_REF=${CRDB_REF:-v2.18.3}
CRDB_COMMIT=563c4383703f73de485066a66d5ffb88b488a5cc
CRDB_CHARTS_REPO=cockroachdb/helm-charts
CRDB_CHARTS_REF=${CRDB_CHARTS_REF:-cockroachdb-v26.2.1}
CRDB_CHARTS_COMMIT=f8c91065b8aff7a10503aaa41a39810da13fcfc2
CHAOS_REPO=chaos-mesh/chaos-mesh
CHAOS_REF=${CHAOS_REF:-v2.8.3}
CHAOS_COMMIT=60ec97f1fd5d5edb2fb5c722c8888e18b618d1a0
HELM_VERSION=v3.22.0

mkdir -p "$WORK/out" "$WORK/src"
out="$WORK/out"
status=0
fail() { echo "FAIL: $*"; status=1; }
ok() { echo "ok:   $*"; }

# gitdir OWNER/NAME -> path of a bare repository with tags
gitdir() {
  local slug=${1/\//+}
  if [ -n "${MIRROR_DIR:-}" ] && [ -d "$MIRROR_DIR/$slug/repo" ]; then
    echo "$MIRROR_DIR/$slug/repo"; return
  fi
  local d="$WORK/git/$slug.git"
  if [ ! -d "$d" ]; then
    git clone -q --bare --filter=blob:none "https://github.com/$1.git" "$d" >&2
  else
    git --git-dir="$d" fetch -q --tags origin >&2 || true
  fi
  echo "$d"
}

# check_pin OWNER/NAME REF COMMIT -> prints newest tags, checks the pinned commit
check_pin() {
  local g; g=$(gitdir "$1")
  local got; got=$(git --git-dir="$g" rev-parse "$2^{commit}")
  if [ "$got" = "$3" ]; then ok "$1 $2 = $3"; else fail "$1 $2 is $got, recorded $3"; fi
  echo "      newest tags: $(git --git-dir="$g" tag --sort=-creatordate | head -5 | tr '\n' ' ')"
}

# export OWNER/NAME REF DEST PATH... -> files of REF under DEST
export_tree() {
  local g; g=$(gitdir "$1"); local ref=$2 dest=$3; shift 3
  rm -rf "$dest"; mkdir -p "$dest"
  git --git-dir="$g" archive "$ref" "$@" | tar -x -C "$dest"
}

compare() { # compare GENERATED RECORDED
  if [ "$write" = 1 ]; then cp "$1" "$2"; ok "wrote ${2#$root/}"; return; fi
  if diff -u "$2" "$1" > "$1.diff"; then ok "${2#$root/} unchanged"
  else fail "${2#$root/} differs (see $1.diff)"; head -40 "$1.diff"; fi
}

# CRD -> dotted field paths. Output: "Kind<TAB>path<TAB>type[<TAB>attr...]".
# attrs: required, default=<json>, enum=a|b, minimum=, maximum=, pattern=, format=.
# Arrays are "[]", map values "*". Only spec and status subtrees.
crdpaths() { # VERSION FILTER_REGEX(kind) FILE...
  python3 - "$@" <<'PY'
import sys, json, re, yaml
version, kindre, files = sys.argv[1], re.compile(sys.argv[2]), sys.argv[3:]
out = []
def walk(kind, node, path, required, depth=0):
    t = node.get('type', '')
    if node.get('x-kubernetes-int-or-string'): t = 'int-or-string'
    attrs = [t or 'any']
    if required: attrs.append('required')
    if 'default' in node: attrs.append('default=' + json.dumps(node['default'], separators=(',', ':')))
    if 'enum' in node: attrs.append('enum=' + '|'.join(str(e) for e in node['enum']))
    for k in ('minimum', 'maximum', 'minItems', 'maxItems', 'minLength', 'maxLength', 'pattern', 'format'):
        if k in node: attrs.append(f"{k}={node[k]}")
    if path: out.append((kind, path, attrs))
    if depth > 40: return
    req = set(node.get('required') or [])
    for k, v in (node.get('properties') or {}).items():
        walk(kind, v, f"{path}.{k}" if path else k, k in req, depth + 1)
    it = node.get('items')
    if isinstance(it, dict):
        ireq = set(it.get('required') or [])
        for k, v in (it.get('properties') or {}).items():
            walk(kind, v, f"{path}[].{k}", k in ireq, depth + 1)
    ap = node.get('additionalProperties')
    if isinstance(ap, dict) and (ap.get('properties') or ap.get('items')):
        walk(kind, ap, path + '.*', False, depth + 1)
for f in files:
    for doc in yaml.safe_load_all(open(f)):
        if not doc or doc.get('kind') != 'CustomResourceDefinition': continue
        kind = doc['spec']['names']['kind']
        if not kindre.fullmatch(kind): continue
        for v in doc['spec']['versions']:
            if v['name'] != version: continue
            s = v['schema']['openAPIV3Schema']
            for sect in ('spec', 'status'):
                if sect in s.get('properties', {}):
                    walk(kind, s['properties'][sect], sect, sect in (s.get('required') or []))
for kind, path, attrs in out:
    print(kind, path, *attrs, sep='\t')
PY
}

header() { # header OWNER/NAME REF COMMIT FILES
  printf '# Derived from %s %s (commit %s), %s.\n' "$1" "$2" "$3" "$4"
  printf '# Generated by hack/check-upstream.sh; columns: Kind<TAB>dotted.path<TAB>type[<TAB>attrs]\n'
  printf '# "[]" = array item, "*" = map value; attrs: required, default=<json>, enum=a|b, minimum=, pattern=, format=\n'
}

get_helm() {
  if [ -n "${HELM:-}" ]; then echo "$HELM"; return; fi
  local cached=~/.cache/wanwide/bin/helm-$HELM_VERSION
  if [ -x "$cached" ]; then echo "$cached"; return; fi
  GOBIN="$WORK/bin" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
  echo "$WORK/bin/helm"
}

# ---- 1. mariadb-operator ------------------------------------------------------
if want mariadb; then
  echo "== mariadb-operator"
  check_pin $MARIADB_REPO "$MARIADB_REF" $MARIADB_COMMIT
  export_tree $MARIADB_REPO "$MARIADB_REF" "$WORK/src/mariadb" config/crd/bases
  b="$WORK/src/mariadb/config/crd/bases"
  { header $MARIADB_REPO "$MARIADB_REF" $MARIADB_COMMIT "config/crd/bases/k8s.mariadb.com_{mariadbs,databases,users,grants}.yaml, version v1alpha1"
    crdpaths v1alpha1 'MariaDB|Database|User|Grant' "$b"/k8s.mariadb.com_{mariadbs,databases,users,grants}.yaml
  } > "$out/mariadb.txt"
  compare "$out/mariadb.txt" "$data/mariadb-operator-v26.6.0-paths.txt"
  # the CEL rule that forces an odd Galera size
  g=$(gitdir $MARIADB_REPO)
  git --git-dir="$g" show "$MARIADB_REF:api/v1alpha1/mariadb_types.go" > "$out/mariadb_types.go"
  git --git-dir="$g" show "$MARIADB_REF:api/v1alpha1/mariadb_galera_types.go" > "$out/mariadb_galera_types.go"
  grep -q 'self.replicas % 2 == 1 || self.replicasAllowEvenNumber' "$out/mariadb_types.go" \
    && ok "galera odd-replicas CEL rule present" || fail "galera odd-replicas CEL rule changed"
  grep -q 'ephemeral storage is only compatible with non HA' "$out/mariadb_types.go" \
    && ok "storage.ephemeral forbidden with galera" || fail "storage.ephemeral rule changed"
  grep -q 'ClusterHealthyTimeout = ptr.To(metav1.Duration{Duration: 30 \* time.Second})' "$out/mariadb_galera_types.go" \
    && ok "galera.recovery.clusterHealthyTimeout default 30s" || fail "galera recovery defaults changed"
fi

# ---- 2. cockroach-operator (v1alpha1) + helm-charts (v1beta1) -----------------
if want cockroach; then
  echo "== cockroach-operator"
  check_pin $CRDB_REPO "$CRDB_REF" $CRDB_COMMIT
  export_tree $CRDB_REPO "$CRDB_REF" "$WORK/src/crdb" config/crd/bases
  { header $CRDB_REPO "$CRDB_REF" $CRDB_COMMIT "config/crd/bases/crdb.cockroachlabs.com_crdbclusters.yaml, version v1alpha1"
    crdpaths v1alpha1 'CrdbCluster' "$WORK/src/crdb/config/crd/bases/crdb.cockroachlabs.com_crdbclusters.yaml"
  } > "$out/crdb.txt"
  compare "$out/crdb.txt" "$data/cockroach-operator-v2.18.3-paths.txt"
  echo "== cockroachdb/helm-charts (v1beta1: no CRD file is published; operator installs its CRDs)"
  check_pin $CRDB_CHARTS_REPO "$CRDB_CHARTS_REF" $CRDB_CHARTS_COMMIT
  g=$(gitdir $CRDB_CHARTS_REPO)
  if git --git-dir="$g" grep -q 'openAPIV3Schema' "$CRDB_CHARTS_REF" -- 'cockroachdb-parent/*' 2>/dev/null; then
    fail "helm-charts now ships a CRD schema: generate a real path list from it"
  else ok "still no v1beta1 CRD schema in helm-charts"; fi
  git --git-dir="$g" show "$CRDB_CHARTS_REF:cockroachdb-parent/charts/cockroachdb/templates/crdb.yaml" > "$out/crdb-v1beta1-template.yaml"
  for f in tlsEnabled regions rollingRestartDelay localityMappings localityLabels startFlags podTemplate dataStore; do
    grep -q "$f:" "$out/crdb-v1beta1-template.yaml" && ok "v1beta1 template sets $f" || fail "v1beta1 template no longer sets $f"
  done
fi

# ---- 3. Chaos Mesh ------------------------------------------------------------
if want chaos; then
  echo "== chaos-mesh"
  check_pin $CHAOS_REPO "$CHAOS_REF" $CHAOS_COMMIT
  export_tree $CHAOS_REPO "$CHAOS_REF" "$WORK/src/chaos" manifests/crd.yaml pkg/chaosdaemon/tc_server.go
  { header $CHAOS_REPO "$CHAOS_REF" $CHAOS_COMMIT "manifests/crd.yaml, version v1alpha1 (NetworkChaos; Schedule top level + spec.networkChaos)"
    crdpaths v1alpha1 'NetworkChaos|Schedule' "$WORK/src/chaos/manifests/crd.yaml" \
      | awk -F'\t' '$1=="NetworkChaos" || $2 !~ /^spec\.[a-zA-Z]+Chaos\./ || $2 ~ /^spec\.networkChaos\./' \
      | awk -F'\t' '!($1=="Schedule" && $2 ~ /^spec\.workflow\./)'
  } > "$out/chaos.txt"
  compare "$out/chaos.txt" "$data/chaos-mesh-v2.8.3-paths.txt"
  grep -q 'band := 3 + len(filterTc)' "$WORK/src/chaos/pkg/chaosdaemon/tc_server.go" \
    && ok "prio bands = 3 + targeted filters (kernel TCQ_PRIO_BANDS=16 -> 13 targeted groups per device)" \
    || fail "tc prio band layout changed: re-derive the per-interface targeted-rule limit"
  grep -q 'if netem.Time > "0ms"' "$WORK/src/chaos/pkg/chaosdaemon/tc_server.go" \
    && ok "netem delay still gated by string compare (write sub-ms latencies as e.g. 500us, never 0.5ms)" \
    || echo "note: netem delay string-compare quirk gone; update docs/upstream-checks.md"
  echo "      Go pseudo-versions for $CHAOS_COMMIT: api module v0.0.0-$(TZ=UTC git --git-dir="$(gitdir $CHAOS_REPO)" log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd "$CHAOS_REF")-${CHAOS_COMMIT:0:12}"
fi

# ---- 4. openstack-helm keystone ----------------------------------------------
if want keystone || want fixture; then HELM_BIN=$(get_helm); fi
if want keystone; then
  echo "== openstack-helm keystone"
  check_pin $OSH_REPO "$OSH_REF" $OSH_COMMIT
  export_tree $OSH_REPO "$OSH_REF" "$WORK/src/osh" keystone helm-toolkit
  ( cd "$WORK/src/osh" && "$HELM_BIN" dependency build keystone >/dev/null )
  "$HELM_BIN" template keystone "$WORK/src/osh/keystone" --namespace ww-t0-r2 \
    -f "$data/keystone-check-values.yaml" > "$out/keystone-rendered.yaml"
  python3 - "$out/keystone-rendered.yaml" > "$out/keystone-objects.txt" <<'PY'
import sys, yaml
print("# Objects rendered by openstack-helm keystone with tests/data/upstream/keystone-check-values.yaml")
print("# columns: kind<TAB>namespace(- = release ns)<TAB>name<TAB>helm hook (- = none)")
rows = set()
for d in yaml.safe_load_all(open(sys.argv[1])):
    if not d: continue
    md = d.get('metadata', {})
    hook = (md.get('annotations') or {}).get('helm.sh/hook', '-')
    rows.add((d['kind'], md.get('namespace') or '-', md['name'], hook.replace(' ', '')))
for r in sorted(rows): print(*r, sep='\t')
PY
  compare "$out/keystone-objects.txt" "$data/keystone-2026.1.0-objects.txt"
fi

# ---- 5. our fixture chart -------------------------------------------------------
if want fixture; then
  echo "== charts/fixtures/keystone"
  "$HELM_BIN" lint "$root/charts/fixtures/keystone" -f "$data/keystone-check-values.yaml" >/dev/null \
    && ok "helm lint fixture" || fail "helm lint fixture"
  "$HELM_BIN" template keystone "$root/charts/fixtures/keystone" --namespace ww-t0-r2 \
    -f "$data/keystone-check-values.yaml" > "$out/fixture-rendered.yaml" && ok "helm template fixture" || fail "helm template fixture"
  if "$HELM_BIN" template keystone "$root/charts/fixtures/keystone" --set bogus=1 >/dev/null 2>&1; then
    fail "fixture schema accepted an unknown top-level key"; else ok "fixture schema rejects unknown top-level keys"; fi
fi

exit $status
