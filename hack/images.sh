#!/usr/bin/env bash
# The container images the real-node e2e runs, built without any container registry:
# root filesystems from Debian packages (mmdebstrap), Python from PyPI, Go from the
# module proxy, the project's own Dockerfile with buildah. See docs/images.md.
#
#   hack/images.sh build NAME...|all|openstack   build into the cache (skipped when cached)
#   hack/images.sh ref NAME               the reference pods use (imagePullPolicy Never)
#   hack/images.sh import NAME...|all --address SOCKET
#                                         import into containerd (namespace k8s.io)
#   hack/images.sh list                   names, refs, sizes, cached or not
#   hack/images.sh missing NAME...|all    the NAMEs not cached (one a line; none: all cached)
#   hack/images.sh key NAME               the content key (what the cache is named by)
#   hack/images.sh path NAME              the archive (docker-archive tar) for NAME
#
# NAMEs: pause keystone mariadb memcached dep-check mariadb-operator s3 wanwide (all), and
#   nova placement glance rabbitmq (openstack: issue 45's control plane; not in all).
# Cache: $WANWIDE_CACHE/images (default ~/.cache/wanwide/images): NAME-KEY.tar + .json.
# The key hashes everything that defines an image: the build function's text, the
# shared helpers, the files copied in, the pins, the Debian suite and mirror, the
# toolchain versions. Same key, same image: a warm `build` takes seconds.
#
# Environment: WANWIDE_UPSTREAM_DIR (mirrored upstream sources; unset: fetched from
#   their canonical git remotes at the pinned commits), WANWIDE_DEBIAN_MIRROR
#   (default http://deb.debian.org/debian), WANWIDE_IMAGE_REGISTRY (default
#   wanwide.local), WANWIDE_IMAGES_FORCE=1 (rebuild even when cached).
# shellcheck disable=SC2016  # file-wide: "$1" in mmdebstrap hooks is the hook shell's
set -euo pipefail
# failures inside $(...) stop the script too (a key computed from half its inputs is wrong)
shopt -s inherit_errexit

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
# The CAs HTTPS is verified with while building (pip in chroots, go/pip in buildah RUN
# steps): this machine's bundle, which may hold a TLS-intercepting egress proxy's CA.
# Only build steps see it; the images keep Debian's own bundle.
BUILD_CA=${WANWIDE_BUILD_CA:-/etc/ssl/certs/ca-certificates.crt}
export APT_LOG=$LOGS/apt.log

REGISTRY=${WANWIDE_IMAGE_REGISTRY:-wanwide.local}
SUITE=bookworm
MIRROR=${WANWIDE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${WANWIDE_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
NAMES=(pause keystone mariadb memcached dep-check mariadb-operator s3 wanwide)
# issue 45's control plane (Nova, Placement, Glance, the bus): by name or `openstack`, not part of `all`
OPENSTACK=(nova placement glance neutron rabbitmq)

# upstream sources: dir under $WANWIDE_UPSTREAM_DIR | git remote | commit
# (read through a nameref in upstream_dir)
# shellcheck disable=SC2034
UP_MARIADB_DOCKER=(mariadb-docker https://github.com/MariaDB/mariadb-docker.git 1b6429ba3544e134715c15f8c56cc6f665f827c9)
# shellcheck disable=SC2034
UP_MARIADB_OPERATOR=(mariadb-operator-v26.6.0 https://github.com/mariadb-operator/mariadb-operator.git b2f76016ff71926414367f5347010766a7a1c257)
# shellcheck disable=SC2034
UP_ENTRYPOINT=(kubernetes-entrypoint https://github.com/airshipit/kubernetes-entrypoint.git 93ba16e7e25b77f9a0b3487f4d2f26c2578ba10f)

die() { log "ERROR: $*"; exit 1; }
ms() { date +%s%3N; }
secs() { local d=$(($(ms) - $1)); printf '%d.%01d' $((d / 1000)) $((d % 1000 / 100)); }

# ---------------------------------------------------------------- tools
ensure_tools() {
  apt_ensure mmdebstrap buildah containerd runc gcc libc6-dev git ca-certificates cpio
  mkdir -p "$IMG" "$LOGS" "$APT_ARCHIVES" "$PIP_CACHE"
}

# ---------------------------------------------------------------- keys and names
fn_of() { echo "build_${1//-/_}"; }
# the images wanwide's own is built FROM (buildable by name, not part of `all`)
BASES=(python-base go-base)
valid_name() { local n; for n in "${NAMES[@]}" "${BASES[@]}" "${OPENSTACK[@]}"; do [[ $n == "$1" ]] && return 0; done; return 1; }

key_material() { # everything that defines image $1, as text
  local name=$1 fn
  fn=$(fn_of "$name")
  echo "wanwide-images format 1"
  echo "registry $REGISTRY suite $SUITE mirror $MIRROR security $SECURITY_MIRROR"
  declare -f "$fn"
  # the shared helpers every build goes through
  declare -f debian_rootfs go_build mkimage add_user_hook pip_hook
  if [[ $name == wanwide ]]; then declare -f context_files buildah_; fi
  case $name in nova|placement|glance) declare -f openstack_service ;; esac
  sha256sum "$ROOT/hack/images/mkimage.py" | cut -d' ' -f1
  "inputs_${fn#build_}"
}

ensure_key() { # compute the key of image $1 once per run (call outside $(...))
  local v="KEY_${1//-/_}"
  local m
  [[ -n ${!v:-} ]] && return 0
  m=$(key_material "$1") || die "$1: cannot compute its key (an input is missing)"
  printf -v "$v" '%s' "$(sha256sum <<<"$m" | cut -c1-64)"
}
key_of() { # full content key of image $1
  local v="KEY_${1//-/_}"
  [[ -n ${!v:-} ]] || ensure_key "$1"
  echo "${!v}"
}
ref_of() { echo "$REGISTRY/$1:$(key_of "$1" | cut -c1-12)"; }
archive_of() { echo "$IMG/$1-$(key_of "$1" | cut -c1-12).tar"; }

# ---------------------------------------------------------------- shared helpers
# debian_rootfs OUT.tar VARIANT PKGS [mmdebstrap args...]: a bookworm root filesystem
# as a tar; .debs are kept in $APT_ARCHIVES across runs; no docs/man/locales.
# shellcheck disable=SC2016  # $1 is mmdebstrap's, expanded by its hook shell
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
    --customize-hook="sync-out /var/cache/apt/archives $APT_ARCHIVES" \
    "$@" \
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

# add_user_hook NAME UID [HOME]: an mmdebstrap --essential-hook creating user and group
# NAME with that id before any package's postinst would pick another one
# shellcheck disable=SC2016  # $1 is mmdebstrap's, expanded by its hook shell
add_user_hook() {
  local name=$1 id=$2 home=${3:-/nonexistent}
  printf 'echo "%s:x:%s:%s::%s:/usr/sbin/nologin" >>"$1"/etc/passwd; echo "%s:x:%s:" >>"$1"/etc/group; echo "%s:*:19000:0:99999:7:::" >>"$1"/etc/shadow' \
    "$name" "$id" "$id" "$home" "$name" "$id" "$name"
}

# memcached: Debian's memcached as the library image lays it out (user memcache 11211).
# The library image's entrypoint only prepends `memcached` to flag arguments; here the
# entrypoint is memcached itself, so pods pass flags as args (as wanwide does).
inputs_memcached() { echo "memcached"; }
build_memcached() {
  local w=$1
  debian_rootfs "$w/rootfs.tar" minbase memcached \
    --essential-hook="$(add_user_hook memcache 11211)"
  mkimage memcached --layer "$w/rootfs.tar" --entrypoint '["/usr/bin/memcached"]' \
    --user 11211:11211 --port 11211/tcp
}

# pip_hook VENV PIP_ARGS...: the body of an mmdebstrap --customize-hook that makes a
# virtualenv at VENV (from the chroot's python3) and pip-installs into it, with pip's
# cache bind-mounted from $PIP_CACHE (unmounted whatever happens: mmdebstrap deletes
# its tempdir recursively afterwards).
pip_hook() {
  local venv=$1; shift
  local q; q=$(printf '%q ' "$@")
  cat <<EOS
set -eu
mkdir -p "\$1/root/.cache/pip"
cp '$BUILD_CA' "\$1/tmp/build-ca.crt"
mount --bind '$PIP_CACHE' "\$1/root/.cache/pip"
trap 'umount "\$1/root/.cache/pip"; rm -f "\$1/tmp/build-ca.crt"' EXIT
chroot "\$1" python3 -m venv '$venv'
chroot "\$1" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 PIP_CERT=/tmp/build-ca.crt \\
  '$venv/bin/pip' install --disable-pip-version-check --no-compile $q
chroot "\$1" '$venv/bin/python' -m compileall -q -j 2 '$venv/lib' >/dev/null || true
EOS
}

# keystone: the LOCI layout openstack-helm's keystone chart runs: a virtualenv at
# /var/lib/openstack (first on PATH, so `python`, keystone-manage and openstack are the
# venv's) with requirements/keystone.txt under requirements/keystone.lock (the lab's pins),
# Debian's apache2 + mod_wsgi (python3.11, the venv's interpreter) told where the venv is,
# user keystone 42424. One image for api, db-sync, fernet/credential setup, domain-manage
# and the openstack-client jobs (db-init/drop, bootstrap, ks-user): all need that venv.
inputs_keystone() { cat "$ROOT/requirements/keystone.txt" "$ROOT/requirements/keystone.lock"; }
build_keystone() {
  local w=$1
  mkdir -p "$w/req"
  cp "$ROOT/requirements/keystone.txt" "$ROOT/requirements/keystone.lock" "$w/req/"
  pip_hook /var/lib/openstack -r /tmp/req/keystone.txt -c /tmp/req/keystone.lock >"$w/pip.sh"
  cat >"$w/layout.sh" <<'EOS'
set -eu
r=$1
rm -rf "$r/tmp/req" "$r/root/.cache"
install -d -o 42424 -g 42424 "$r/etc/keystone" "$r/etc/keystone/fernet-keys" "$r/etc/keystone/credential-keys" \
  "$r/var/lib/keystone" "$r/var/log/keystone" "$r/var/www/cgi-bin/keystone"
# mod_wsgi runs the venv's keystone (the chart's wsgi-keystone.conf names no python-home)
echo 'WSGIPythonHome /var/lib/openstack' >"$r/etc/apache2/conf-available/wsgi-python-home.conf"
chroot "$r" a2enconf -q wsgi-python-home
chroot "$r" a2enmod -q wsgi
chroot "$r" a2dissite -q 000-default
# a read-only root (the chart's readOnlyRootFilesystem): lock files where the pid goes,
# /var/run/apache2, which the chart mounts as an emptyDir
sed -i 's|^export APACHE_LOCK_DIR=.*|export APACHE_LOCK_DIR=/var/run/apache2|' "$r/etc/apache2/envvars"
EOS
  debian_rootfs "$w/rootfs.tar" minbase \
    python3,python3-venv,apache2,libapache2-mod-wsgi-py3,ca-certificates \
    --essential-hook="$(add_user_hook keystone 42424 /var/lib/keystone)" \
    --customize-hook="copy-in $w/req /tmp" \
    --customize-hook="bash $w/pip.sh \"\$1\"" \
    --customize-hook="bash $w/layout.sh \"\$1\""
  mkimage keystone --layer "$w/rootfs.tar" --cmd '["/bin/bash"]' \
    --env PATH=/var/lib/openstack/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --port 5000/tcp
}

# openstack_service WORKDIR NAME [DIRS...]: an OpenStack service as openstack-helm's charts run it, laid
# out as the keystone image (LOCI's layout): a virtualenv at /var/lib/openstack, first on PATH, with
# requirements/NAME.txt under requirements/NAME.lock (the service, PyMySQL, python-memcached and
# pyuwsgi: the charts start the APIs with `uwsgi --ini`, its `module:` the service's WSGI application),
# user NAME 42424 (the charts' runAsUser), DIRS made and owned by it. The charts' other images
# (ks-user/service/endpoints, dep-check) are the keystone and dep-check images.
openstack_service() {
  local w=$1 name=$2 d dirs=""; shift 2
  mkdir -p "$w/req"
  cp "$ROOT/requirements/$name.txt" "$ROOT/requirements/$name.lock" "$w/req/"
  pip_hook /var/lib/openstack -r "/tmp/req/$name.txt" -c "/tmp/req/$name.lock" >"$w/pip.sh"
  for d in "/etc/$name" "/var/lib/$name" "/var/log/$name" "$@"; do dirs+=" \"\$r$d\""; done
  cat >"$w/layout.sh" <<EOS
set -eu
r=\$1
rm -rf "\$r/tmp/req" "\$r/root/.cache"
install -d -o 42424 -g 42424$dirs
EOS
  debian_rootfs "$w/rootfs.tar" minbase python3,python3-venv,ca-certificates \
    --essential-hook="$(add_user_hook "$name" 42424 "/var/lib/$name")" \
    --customize-hook="copy-in $w/req /tmp" \
    --customize-hook="bash $w/pip.sh \"\$1\"" \
    --customize-hook="bash $w/layout.sh \"\$1\""
  mkimage "$name" --layer "$w/rootfs.tar" --cmd '["/bin/bash"]' \
    --env PATH=/var/lib/openstack/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8
}

# nova: API (uwsgi), conductor, scheduler, the fake computes (nova-compute with nova's fake virt
# driver: no hypervisor, no libvirt), db-sync and cell setup (nova-manage); /var/lib/nova/instances
# is where a compute keeps its state (the fake driver writes nothing there).
inputs_nova() { cat "$ROOT/requirements/nova.txt" "$ROOT/requirements/nova.lock"; }
build_nova() { openstack_service "$1" nova /var/lib/nova/instances; }

# placement: placement-api (uwsgi) and `placement-manage db sync`.
inputs_placement() { cat "$ROOT/requirements/placement.txt" "$ROOT/requirements/placement.lock"; }
build_placement() { openstack_service "$1" placement; }

# glance: glance-api (uwsgi) and `glance-manage db_sync`; images on local files (/var/lib/glance/images,
# the chart's file store).
inputs_glance() { cat "$ROOT/requirements/glance.txt" "$ROOT/requirements/glance.lock"; }
build_glance() { openstack_service "$1" glance /var/lib/glance/images; }

# neutron: the server and its RPC workers (uwsgi for the API, neutron-rpc-server) and `neutron-db-manage
# upgrade heads`; ML2 with no agent (the charts' agents are off: nothing wires a port).
inputs_neutron() { cat "$ROOT/requirements/neutron.txt" "$ROOT/requirements/neutron.lock"; }
build_neutron() { openstack_service "$1" neutron; }

# rabbitmq: Debian's rabbitmq-server (3.10, its built-in plugins: management, peer_discovery_k8s,
# prometheus, which the chart enables) for openstack-helm's rabbitmq chart: user rabbitmq 999 (the
# chart's runAsUser; made before the package's postinst would pick another id), HOME and data in
# /var/lib/rabbitmq, and python3 for the chart's password-hash init container (its
# `rabbitmq_init` image: one image serves the whole chart). The chart's scripts need bash, awk,
# timeout, seq, find (coreutils, findutils, mawk).
inputs_rabbitmq() { echo "rabbitmq-server python3"; }
build_rabbitmq() {
  local w=$1
  debian_rootfs "$w/rootfs.tar" minbase rabbitmq-server,python3,mawk,findutils,procps \
    --essential-hook="$(add_user_hook rabbitmq 999 /var/lib/rabbitmq)" \
    --customize-hook='install -d -o 999 -g 999 "$1/var/lib/rabbitmq" "$1/var/log/rabbitmq" "$1/etc/rabbitmq"'
  mkimage rabbitmq --layer "$w/rootfs.tar" --cmd '["rabbitmq-server"]' \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 \
    --env HOME=/var/lib/rabbitmq --user 999:999 --port 5672/tcp --port 15672/tcp
}

# mariadb: Debian's MariaDB 10.11 + Galera 4 laid out as MariaDB/mariadb-docker's 10.11
# image (what mariadb-operator runs): user mysql 999:999, the datadir made by the
# entrypoint, not by the package, the same config edits, gosu, and upstream's
# docker-entrypoint.sh and healthcheck.sh copied in unmodified. /run/mysqld (the socket's
# directory) comes in a second layer: mmdebstrap keeps /run a tmpfs while hooks run, so
# nothing made there reaches the tar (root-owned 1777 rather than mysql's: any uid may
# make its socket there, which is why upstream sets 1777).
inputs_mariadb() {
  local up; up=$(upstream_dir UP_MARIADB_DOCKER)
  sha256sum "$up/10.11/docker-entrypoint.sh" "$up/10.11/healthcheck.sh" | cut -d' ' -f1
}
# shellcheck disable=SC2016  # $1 is mmdebstrap's, expanded by its hook shell
build_mariadb() {
  local w=$1 up
  up=$(upstream_dir UP_MARIADB_DOCKER)
  install -m 0755 "$up/10.11/docker-entrypoint.sh" "$up/10.11/healthcheck.sh" "$w/"
  cat >"$w/layout.sh" <<'EOS'
set -eu
r=$1
# as upstream: purge and re-create the datadir with the right owner
rm -rf "$r/var/lib/mysql" "$r/etc/mysql/mariadb.conf.d/50-mysqld_safe.cnf"
mkdir -p "$r/var/lib/mysql" "$r/run/mysqld" "$r/docker-entrypoint-initdb.d"
chown -R 999:999 "$r/var/lib/mysql" "$r/run/mysqld"
chmod 1777 "$r/run/mysqld"
find "$r/etc/mysql/" -name '*.cnf' -print0 | xargs -0 grep -lZE '^(bind-address|log|user\s)' |
  xargs -rt -0 sed -Ei 's/^(bind-address|log|user\s)/#&/'
printf "[mariadb]\nhost-cache-size=0\nskip-name-resolve\n" >"$r/etc/mysql/mariadb.conf.d/05-skipcache.cnf"
if [ -L "$r/etc/mysql/my.cnf" ]; then
  sed -i -e '/includedir/ {N;s/\(.*\)\n\(.*\)/\n\2\n\1/}' "$r/etc/mysql/mariadb.cnf"
fi
chroot "$r" dpkg-query -W -f='${Version}' mariadb-server >"$r/.mariadb-version"
EOS
  debian_rootfs "$w/rootfs.tar" minbase \
    mariadb-server,mariadb-client,mariadb-backup,galera-4,rsync,socat,gosu,pwgen,tzdata,xz-utils,zstd,libjemalloc2,libtcmalloc-minimal4,ca-certificates,iproute2,procps \
    --essential-hook="$(add_user_hook mysql 999 /var/lib/mysql)" \
    --essential-hook='mkdir -p "$1/var/lib/mysql/mysql" && touch "$1/var/lib/mysql/mysql/user.frm"' \
    --customize-hook="bash $w/layout.sh \"\$1\"" \
    --customize-hook="copy-in $w/docker-entrypoint.sh $w/healthcheck.sh /usr/local/bin/" \
    --customize-hook="download /.mariadb-version $w/mariadb-version" \
    --customize-hook='rm -f "$1/.mariadb-version"'
  mkimage mariadb --layer "$w/rootfs.tar" --entrypoint '["docker-entrypoint.sh"]' --cmd '["mariadbd"]' \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 \
    --env "MARIADB_VERSION=$(cat "$w/mariadb-version")" --volume /var/lib/mysql --port 3306/tcp \
    --dir /run/mysqld:1777
}

# dep-check: kubernetes-entrypoint (openstack-helm's dep_check init containers) built
# as its Makefile does (CGO off, `go build` at the module root), at
# /usr/local/bin/kubernetes-entrypoint on a Debian base with coreutils, user 65534.
inputs_dep_check() { tree_hash "$(upstream_dir UP_ENTRYPOINT)"; "$GO" version; }
build_dep_check() {
  local w=$1 up
  up=$(upstream_dir UP_ENTRYPOINT)
  go_build "$up" "$w/kubernetes-entrypoint" . -ldflags='-s -w'
  debian_rootfs "$w/rootfs.tar" essential "" \
    --customize-hook="copy-in $w/kubernetes-entrypoint /usr/local/bin/"
  mkimage dep-check --layer "$w/rootfs.tar" --entrypoint '["/usr/local/bin/kubernetes-entrypoint"]' \
    --user 65534 --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --env LC_ALL=C.UTF-8
}

# mariadb-operator: one static binary (operator, webhook, cert-controller, and the
# init/agent sidecars of Galera) at /bin/mariadb-operator, user 65532, on a
# distroless/static-like layer (passwd/group, CA certificates, /tmp).
inputs_mariadb_operator() {
  tree_hash "$(upstream_dir UP_MARIADB_OPERATOR)"
  "$GO" version
  mozilla_bundle | sha256sum | cut -d' ' -f1
}
mozilla_bundle() { # the CA bundle Debian's ca-certificates makes (Mozilla's set, no local CAs)
  local f
  for f in /usr/share/ca-certificates/mozilla/*.crt; do cat "$f"; done
}
build_mariadb_operator() {
  local w=$1 up
  up=$(upstream_dir UP_MARIADB_OPERATOR)
  go_build "$up" "$w/mariadb-operator" ./cmd/controller
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$w/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$w/group"
  mozilla_bundle >"$w/ca-certificates.crt"
  mkimage mariadb-operator --add "$w/mariadb-operator:/bin/mariadb-operator:0755" \
    --add "$w/passwd:/etc/passwd:0644" --add "$w/group:/etc/group:0644" \
    --add "$w/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:0644" \
    --dir /tmp:1777 --dir /home/nonroot:0700 --dir /root:0700 \
    --entrypoint '["/bin/mariadb-operator"]' --user 65532:65532 --workdir / \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
}

# s3: the S3 server hack/deps.sh starts to try wanwide with (manifests/deps/s3.yaml names
# versity/versitygw at this version): the same module the test cluster runs on the host,
# `go install`ed from the module proxy (CGO off), alone in its image at /app/versitygw
# (upstream's path) with a writable /tmp; root, as upstream's image runs.
VERSITYGW_VERSION=v1.8.0
inputs_s3() { echo "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"; "$GO" version; }
build_s3() {
  local w=$1
  (cd "$w" && GOBIN="$w/bin" CGO_ENABLED=0 GOOS=linux GOARCH=amd64 GOTOOLCHAIN=local \
    "$GO" install -trimpath -ldflags='-s -w' "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION")
  mkimage s3 --add "$w/bin/versitygw:/app/versitygw:0755" --dir /tmp:1777 \
    --entrypoint '["/app/versitygw"]' --workdir /app
}

# python-base: what the Dockerfile's PYTHON_IMAGE (python:3.11-slim-bookworm) gives it:
# bookworm, `python` and `pip` first on PATH in /usr/local/bin, installing into
# /usr/local. Debian's python3.11 with a virtualenv made at /usr/local (Debian's own pip
# refuses system installs, PEP 668).
inputs_python_base() { echo python3.11; }
build_python_base() {
  local w=$1
  debian_rootfs "$w/rootfs.tar" minbase python3,python3-venv \
    --customize-hook='chroot "$1" python3 -m venv /usr/local' \
    --customize-hook='chroot "$1" /usr/local/bin/python -m pip --version'
  mkimage python-base --layer "$w/rootfs.tar" --cmd '["python3"]' \
    --env PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8
}

# go-base: what the Dockerfile's GO_IMAGE (golang:1.26-bookworm) gives its helm stage:
# `go` on PATH, GOPATH=/go. Debian bookworm's golang is 1.19 (helm v3.22 needs >= 1.24)
# and bookworm-backports is not configured here, so the toolchain is this machine's
# /usr/local/go (go.dev's release tarball), copied in as a second layer. The build CA
# bundle is this stage's (go install verifies the module proxy with it); the final image
# never contains this stage.
inputs_go_base() { cat /usr/local/go/VERSION; sha256sum "$BUILD_CA" | cut -d' ' -f1; }
build_go_base() {
  local w=$1
  debian_rootfs "$w/rootfs.tar" minbase ca-certificates,git \
    --customize-hook="copy-in $BUILD_CA /etc/ssl/certs/" \
    --customize-hook='mkdir -p "$1/go/bin" "$1/go/src" && chmod -R 1777 "$1/go"'
  tar -C / --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$w/go.tar" usr/local/go
  mkimage go-base --layer "$w/rootfs.tar" --layer "$w/go.tar" --workdir /go \
    --env PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env GOPATH=/go --env GOTOOLCHAIN=local --env GOLANG_VERSION="$(head -1 /usr/local/go/VERSION)"
}

# wanwide: the project's Dockerfile, unchanged, with buildah; only PYTHON_IMAGE and
# GO_IMAGE are passed (the two bases above, loaded from their archives: no registry).
# The context is a copy of what the Dockerfile copies. RUN steps use the host network
# (PyPI, the Go proxy, Debian) and see the build CA bundle through a pip.conf mount.
WANWIDE_CONTEXT=(Dockerfile pyproject.toml README.md requirements operator)
context_files() { # the context's files, NUL-separated, relative to $ROOT
  (cd "$ROOT" && find "${WANWIDE_CONTEXT[@]}" -type f -not -name '*.pyc' -not -path '*/__pycache__/*' \
    -not -path '*.egg-info/*' -print0 | LC_ALL=C sort -z)
}
inputs_wanwide() {
  (cd "$ROOT" && context_files | xargs -0 sha256sum)
  key_of python-base
  key_of go-base
  buildah --version
}
buildah_() {
  buildah --root "$IMG/buildah/storage" --runroot "$IMG/buildah/run" --storage-driver "${WANWIDE_BUILDAH_DRIVER:-overlay}" "$@"
}
build_wanwide() {
  local w=$1 py go ref
  build_one python-base >&2
  build_one go-base >&2
  py=$(ref_of python-base) go=$(ref_of go-base) ref=$(ref_of wanwide)
  mkdir -p "$w/context"
  (cd "$ROOT" && context_files | cpio -0 -pdm --quiet "$w/context")
  buildah_ images --format '{{.Name}}:{{.Tag}}' | grep -xF "$py" >/dev/null || buildah_ pull -q "docker-archive:$(archive_of python-base)"
  buildah_ images --format '{{.Name}}:{{.Tag}}' | grep -xF "$go" >/dev/null || buildah_ pull -q "docker-archive:$(archive_of go-base)"
  printf '[global]\ncert = /run/wanwide-build-ca.crt\n' >"$w/pip.conf"
  buildah_ build --pull-never --layers --network host --isolation "${WANWIDE_BUILDAH_ISOLATION:-oci}" \
    --volume "$w/pip.conf:/etc/pip.conf:ro" --volume "$BUILD_CA:/run/wanwide-build-ca.crt:ro" \
    --build-arg "PYTHON_IMAGE=$py" --build-arg "GO_IMAGE=$go" -t "$ref" -f "$w/context/Dockerfile" "$w/context"
  rm -f "$(archive_of wanwide)"
  buildah_ push -q "$ref" "docker-archive:$(archive_of wanwide):$ref"
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
  # in the background and waited for: `set -e` stays in force inside (it would not in
  # an `||` list), and a failure is reported here, with the log's end
  local rc=0
  "$(fn_of "$name")" "$w" >"$LOGS/$name.log" 2>&1 &
  wait $! || rc=$?
  if ((rc != 0)); then
    log "ERROR: $name: build failed (exit $rc); last lines of $LOGS/$name.log:"
    tail -n 25 "$LOGS/$name.log" | sed 's/^/    /' >&2
    rm -rf "$w"
    exit "$rc"
  fi
  rm -rf "$w"
  local took; took=$(secs "$t0")
  printf '{"name": "%s", "ref": "%s", "key": "%s", "bytes": %s, "build_seconds": %s, "built": "%s"}\n' \
    "$name" "$(ref_of "$name")" "$(key_of "$name")" "$(stat -c %s "$a")" "$took" "$(date -u +%FT%TZ)" \
    >"$(meta_of "$a")"
  # older archives of this image are stale: drop them
  local old
  for old in "$IMG/$name"-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f].tar; do  # NAME-KEY12 only: mariadb-* would match mariadb-operator-*
    [[ $old == "$a" ]] || rm -f "$old" "$(meta_of "$old")"
  done
  step_end
  log "$name: built $(ref_of "$name") ($(du -h "$a" | cut -f1)) in $took s"
}

expand_names() { # all -> every name of NAMES, openstack -> OPENSTACK's
  local n
  for n in "$@"; do
    case $n in
      all) printf '%s\n' "${NAMES[@]}" ;;
      openstack) printf '%s\n' "${OPENSTACK[@]}" ;;
      *) printf '%s\n' "$n" ;;
    esac
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
    # grep without -q reads the whole list: -q would exit at the match, and ctr, still writing, would
    # die of SIGPIPE and fail the pipeline (pipefail) though the image is there
    "${ctr[@]}" images ls -q | grep -xF "$ref" >/dev/null || die "$n: $ref not in containerd after import"
    log "$n: imported $ref in $(secs "$t0") s"
  done < <(expand_names "${names[@]}")
}

cmd_list() {
  local n a
  printf '%-17s %-44s %8s %s\n' NAME REF SIZE STATE
  for n in "${NAMES[@]}" "${BASES[@]}" "${OPENSTACK[@]}"; do
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
    build|import|list|missing|ref|key|path)
      ensure_tools
      # keys once per run (hashing a source tree takes a moment)
      for n in "${BASES[@]}" "${NAMES[@]}"; do
        if [[ $cmd == list || " $* " == *" $n "* || " $* " == *" all "* ]]; then ensure_key "$n"; fi
      done
      for n in "${OPENSTACK[@]}"; do
        if [[ $cmd == list || " $* " == *" $n "* || " $* " == *" openstack "* ]]; then ensure_key "$n"; fi
      done ;;
  esac
  case $cmd in
    build) cmd_build "$@" ;;
    import) cmd_import "$@" ;;
    list) cmd_list ;;
    missing) while IFS= read -r n; do [[ -s $(archive_of "$n") ]] || echo "$n"; done < <(expand_names "$@") ;;
    ref) if (($# == 1)) && valid_name "$1"; then ref_of "$1"; else die "usage: images.sh ref NAME"; fi ;;
    key) if (($# == 1)) && valid_name "$1"; then key_of "$1"; else die "usage: images.sh key NAME"; fi ;;
    path) if (($# == 1)) && valid_name "$1"; then archive_of "$1"; else die "usage: images.sh path NAME"; fi ;;
    *) sed -n '2,/^set -euo/{/^# shellcheck/d; /^set/d; s/^# \{0,1\}//; p}' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
  esac
}
main "$@"
