#!/usr/bin/env bash
# The container images the real-node e2e runs, built without any container registry:
# root filesystems from Debian packages (mmdebstrap), Python from PyPI, Go from the
# module proxy, the project's own Dockerfile with buildah. See docs/images.md.
#
#   hack/images.sh build NAME...|all      build into the cache (skipped when cached)
#   hack/images.sh ref NAME               the reference pods use (imagePullPolicy Never)
#   hack/images.sh import NAME...|all --address SOCKET
#                                         import into containerd (namespace k8s.io)
#   hack/images.sh list                   names, refs, sizes, cached or not
#   hack/images.sh key NAME               the content key (what the cache is named by)
#   hack/images.sh path NAME              the archive (docker-archive tar) for NAME
#
# NAMEs: pause keystone mariadb memcached dep-check mariadb-operator wanwide.
# Cache: $WANWIDE_CACHE/images (default ~/.cache/wanwide/images): NAME-KEY.tar + .json.
# The key hashes everything that defines an image: the build function's text, the
# shared helpers, the files copied in, the pins, the Debian suite and mirror, the
# toolchain versions. Same key, same image: a warm `build` takes seconds.
#
# Environment: WANWIDE_UPSTREAM_DIR (mirrored upstream sources; unset: fetched from
#   their canonical git remotes at the pinned commits), WANWIDE_DEBIAN_MIRROR
#   (default http://deb.debian.org/debian), WANWIDE_IMAGE_REGISTRY (default
#   wanwide.local), WANWIDE_IMAGES_FORCE=1 (rebuild even when cached).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_TAG=images
# shellcheck source=lib.sh
source "$ROOT/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR

CACHE=${WANWIDE_CACHE:-$HOME/.cache/wanwide}
IMG=$CACHE/images
LOGS=$IMG/logs
APT_ARCHIVES=$IMG/apt-archives   # .debs kept across mmdebstrap runs
PIP_CACHE=$IMG/pip-cache         # pip's cache, bind-mounted into the chroots
GO=${GO:-/usr/local/go/bin/go}
export APT_LOG=$LOGS/apt.log

REGISTRY=${WANWIDE_IMAGE_REGISTRY:-wanwide.local}
SUITE=bookworm
MIRROR=${WANWIDE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${WANWIDE_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
NAMES=(pause keystone mariadb memcached dep-check mariadb-operator wanwide)

# upstream sources: dir under $WANWIDE_UPSTREAM_DIR | git remote | commit
UP_MARIADB_DOCKER=(mariadb-docker https://github.com/MariaDB/mariadb-docker.git 1b6429ba3544e134715c15f8c56cc6f665f827c9)
UP_MARIADB_OPERATOR=(mariadb-operator-v26.6.0 https://github.com/mariadb-operator/mariadb-operator.git b2f76016ff71926414367f5347010766a7a1c257)
UP_ENTRYPOINT=(kubernetes-entrypoint https://github.com/airshipit/kubernetes-entrypoint.git 93ba16e7e25b77f9a0b3487f4d2f26c2578ba10f)

die() { log "ERROR: $*"; exit 1; }
ms() { date +%s%3N; }
secs() { local d=$(($(ms) - $1)); printf '%d.%01d' $((d / 1000)) $((d % 1000 / 100)); }

# ---------------------------------------------------------------- tools
ensure_tools() {
  apt_ensure mmdebstrap buildah containerd runc gcc libc6-dev git ca-certificates
  mkdir -p "$IMG" "$LOGS" "$APT_ARCHIVES" "$PIP_CACHE"
}

# ---------------------------------------------------------------- upstream sources
upstream_dir() { # upstream_dir UP_ARRAY_NAME: a directory holding that source tree
  local -n up=$1
  local dir=${up[0]} remote=${up[1]} commit=${up[2]}
  if [[ -n ${WANWIDE_UPSTREAM_DIR:-} ]]; then
    [[ -d $WANWIDE_UPSTREAM_DIR/$dir ]] || die "$WANWIDE_UPSTREAM_DIR/$dir missing"
    (cd "$WANWIDE_UPSTREAM_DIR/$dir" && pwd)
    return 0
  fi
  local dest=$CACHE/upstream/$dir-${commit:0:12}
  if [[ ! -d $dest/.git ]]; then
    log "fetching $remote at $commit"
    rm -rf "$dest.tmp"
    git init -q "$dest.tmp"
    git -C "$dest.tmp" fetch -q --depth 1 "$remote" "$commit" >&2
    git -C "$dest.tmp" checkout -q FETCH_HEAD
    mv "$dest.tmp" "$dest"
  fi
  echo "$dest"
}

tree_hash() { # tree_hash DIR: content hash of the files under DIR (no .git)
  (cd "$1" && find . -path ./.git -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-64
}

# ---------------------------------------------------------------- keys and names
fn_of() { echo "build_${1//-/_}"; }
valid_name() { local n; for n in "${NAMES[@]}"; do [[ $n == "$1" ]] && return 0; done; return 1; }

key_material() { # everything that defines image $1, as text
  local name=$1 fn
  fn=$(fn_of "$name")
  echo "wanwide-images format 1"
  echo "registry $REGISTRY suite $SUITE mirror $MIRROR security $SECURITY_MIRROR"
  declare -f "$fn"
  # the shared helpers every build goes through
  declare -f debian_rootfs go_build mkimage
  sha256sum "$ROOT/hack/images/mkimage.py" | cut -d' ' -f1
  "inputs_${fn#build_}"
}

ensure_key() { # compute the key of image $1 once per run (call outside $(...))
  local v="KEY_${1//-/_}"
  [[ -n ${!v:-} ]] || printf -v "$v" '%s' "$(key_material "$1" | sha256sum | cut -c1-64)"
}
key_of() { # full content key of image $1
  local v="KEY_${1//-/_}"
  [[ -n ${!v:-} ]] || printf -v "$v" '%s' "$(key_material "$1" | sha256sum | cut -c1-64)"
  echo "${!v}"
}
ref_of() { echo "$REGISTRY/$1:$(key_of "$1" | cut -c1-12)"; }
archive_of() { echo "$IMG/$1-$(key_of "$1" | cut -c1-12).tar"; }

# ---------------------------------------------------------------- shared helpers
# debian_rootfs OUT.tar VARIANT PKGS [mmdebstrap args...]: a bookworm root filesystem
# as a tar; .debs are kept in $APT_ARCHIVES across runs; no docs/man/locales.
debian_rootfs() {
  local out=$1 variant=$2 pkgs=$3; shift 3
  mmdebstrap --mode=root --format=tar --variant="$variant" ${pkgs:+--include="$pkgs"} \
    --skip=output/dev,essential/unlink,download/empty \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --setup-hook='mkdir -p "$1"/var/cache/apt/archives' \
    --setup-hook="sync-in $APT_ARCHIVES /var/cache/apt/archives/" \
    "$@" \
    --customize-hook="sync-out /var/cache/apt/archives $APT_ARCHIVES" \
    --customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb "$1"/var/cache/apt/*.bin; rm -rf "$1"/var/lib/apt/lists/*; rm -f "$1"/etc/resolv.conf "$1"/etc/hostname' \
    "$SUITE" "$out" \
    "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" "deb $SECURITY_MIRROR $SUITE-security main"
}

go_build() { # go_build SRC_DIR OUT PKG [go build args...]: static, trimmed, through the module proxy
  local src=$1 out=$2 pkg=$3; shift 3
  (cd "$src" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 GOFLAGS=-mod=mod GOTOOLCHAIN=local \
    "$GO" build -trimpath "$@" -o "$out" "$pkg")
}

mkimage() { # mkimage NAME [mkimage.py args...]: the docker-archive for NAME
  local name=$1; shift
  python3 "$ROOT/hack/images/mkimage.py" --out "$(archive_of "$name")" --ref "$(ref_of "$name")" \
    --label "org.wanwide.image=$name" --label "org.wanwide.key=$(key_of "$name")" "$@"
}

# ---------------------------------------------------------------- the images
# Each image: inputs_X prints what it reads besides its own text (content or hashes);
# build_X WORKDIR builds $(archive_of X).

# pause: the CRI sandbox image. One static binary (hack/images/pause.c), nothing else.
inputs_pause() {
  sha256sum "$ROOT/hack/images/pause.c" | cut -d' ' -f1
  gcc --version 2>/dev/null | head -1 || true
  dpkg-query -W -f='${Version}\n' libc6-dev
}
build_pause() {
  local w=$1
  gcc -static -Os -Wall -o "$w/pause" "$ROOT/hack/images/pause.c"
  strip "$w/pause"
  mkimage pause --add "$w/pause:/pause:0755" --entrypoint '["/pause"]' --user 65535:65535
}

# ---------------------------------------------------------------- commands
meta_of() { echo "${1%.tar}.json"; }

build_one() {
  local name=$1 a t0 w
  valid_name "$name" || die "unknown image $name (known: ${NAMES[*]})"
  t0=$(ms)
  a=$(archive_of "$name")
  if [[ -z ${WANWIDE_IMAGES_FORCE:-} && -s $a && -s $(meta_of "$a") ]]; then
    log "$name: cached ($(ref_of "$name"), $(du -h "$a" | cut -f1)) [$(secs "$t0") s]"
    return 0
  fi
  w=$(mktemp -d "$IMG/work.$name.XXXXXX")
  step "$name: build $(ref_of "$name")" "$LOGS/$name.log"
  log "$name: log in $LOGS/$name.log"
  "$(fn_of "$name")" "$w" >"$LOGS/$name.log" 2>&1
  rm -rf "$w"
  local took; took=$(secs "$t0")
  printf '{"name": "%s", "ref": "%s", "key": "%s", "bytes": %s, "build_seconds": %s, "built": "%s"}\n' \
    "$name" "$(ref_of "$name")" "$(key_of "$name")" "$(stat -c %s "$a")" "$took" "$(date -u +%FT%TZ)" \
    >"$(meta_of "$a")"
  # older archives of this image are stale: drop them
  local old
  for old in "$IMG/$name"-*.tar; do
    [[ $old == "$a" ]] || rm -f "$old" "$(meta_of "$old")"
  done
  step_end
  log "$name: built $(ref_of "$name") ($(du -h "$a" | cut -f1)) in $took s"
}

expand_names() { # all -> every name
  local n
  for n in "$@"; do
    if [[ $n == all ]]; then printf '%s\n' "${NAMES[@]}"; else printf '%s\n' "$n"; fi
  done
}

cmd_build() {
  (($#)) || die "usage: images.sh build NAME...|all"
  local t0 n; t0=$(ms)
  while IFS= read -r n; do build_one "$n"; done < <(expand_names "$@")
  log "build: done in $(secs "$t0") s"
}

cmd_import() {
  local names=() address=""
  while (($#)); do
    case $1 in
      --address) address=$2; shift 2 ;;
      --address=*) address=${1#--address=}; shift ;;
      *) names+=("$1"); shift ;;
    esac
  done
  [[ -n $address && ${#names[@]} -gt 0 ]] || die "usage: images.sh import NAME...|all --address SOCKET"
  local ctr=(ctr --address "$address" -n k8s.io)
  local present n ref t0
  present=$("${ctr[@]}" images ls -q)
  while IFS= read -r n; do
    valid_name "$n" || die "unknown image $n"
    ref=$(ref_of "$n")
    if grep -qxF "$ref" <<<"$present"; then
      log "$n: $ref already in $address, skip"
      continue
    fi
    [[ -s $(archive_of "$n") ]] || build_one "$n"
    t0=$(ms)
    "${ctr[@]}" images import --no-unpack=false "$(archive_of "$n")" >"$LOGS/import-$n.log" 2>&1 ||
      { tail -n 20 "$LOGS/import-$n.log" >&2; die "$n: ctr images import failed"; }
    "${ctr[@]}" images ls -q | grep -qxF "$ref" || die "$n: $ref not in containerd after import"
    log "$n: imported $ref in $(secs "$t0") s"
  done < <(expand_names "${names[@]}")
}

cmd_list() {
  local n a
  printf '%-17s %-44s %8s %s\n' NAME REF SIZE STATE
  for n in "${NAMES[@]}"; do
    a=$(archive_of "$n")
    if [[ -s $a ]]; then
      printf '%-17s %-44s %8s %s\n' "$n" "$(ref_of "$n")" "$(du -h "$a" | cut -f1)" cached
    else
      printf '%-17s %-44s %8s %s\n' "$n" "$(ref_of "$n")" - "not built"
    fi
  done
}

main() {
  local cmd=${1:-}; shift || true
  local n
  case $cmd in
    build|import|list|ref|key|path)
      ensure_tools
      # keys once per run (hashing a source tree takes a moment)
      for n in "${NAMES[@]}"; do
        if [[ $cmd == list || " $* " == *" $n "* || " $* " == *" all "* ]]; then ensure_key "$n"; fi
      done ;;
  esac
  case $cmd in
    build) cmd_build "$@" ;;
    import) cmd_import "$@" ;;
    list) cmd_list ;;
    ref) (($# == 1)) && valid_name "$1" || die "usage: images.sh ref NAME"; ref_of "$1" ;;
    key) (($# == 1)) && valid_name "$1" || die "usage: images.sh key NAME"; key_of "$1" ;;
    path) (($# == 1)) && valid_name "$1" || die "usage: images.sh path NAME"; archive_of "$1" ;;
    *) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
}
main "$@"
