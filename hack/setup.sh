#!/usr/bin/env bash
# Prepares a fresh Debian machine (as root) for netshift: the Debian packages
# it needs (containerd, runc and the CNI plugins for the lab's real nodes,
# nftables for OVN-Kubernetes, neutron-server for the port pools, QEMU and a
# kernel for the lab's guest), Go's modules, and the real
# kube-apiserver, etcd, kubectl, kubelet, kube-controller-manager and
# kube-scheduler built from the Go module proxy, kwok for the scale tests, and
# the lab's Open vSwitch 3.5 and OVN 25.03, Debian 13's packages unpacked
# beside the machine's own by hack/ovs-dist.sh (cached; about 12 minutes the
# first time).
# Prints the assets directory last, for KUBEBUILDER_ASSETS.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v go >/dev/null 2>&1; then
  if [[ -x /usr/local/go/bin/go ]]; then
    export PATH=/usr/local/go/bin:$PATH
  else
    echo "setup: Go is not installed (need Go 1.26 or newer at /usr/local/go or on PATH)" >&2
    exit 1
  fi
fi

# The tools the lab drives its nodes with, patchelf (which points Debian 13's
# Open vSwitch and OVN at their own libraries, hack/ovs-dist.sh), nftables
# (the nft that OVN-Kubernetes' ovnkube-node runs, put in its lab image), the
# real neutron-server the port pool tests run (no Keystone, SQLite; started by
# the tests themselves, never as a service), and MariaDB, which the lab's
# neutron-server runs on (the lab starts its own server, never the service).
# The lab's nodes run Debian's containerd and runc (never started as services),
# with the reference CNI plugins (ptp, host-local, loopback) and a static
# busybox for the workload image; iptables and util-linux's nsenter/unshare
# set the nodes up.
# The lab's guest runs under Debian's QEMU; on Debian 12 the one from
# bookworm-backports (10.0), since 7.2's TCG migrations resumed the guest
# corrupted in a third of them (internal/lab/vm).
packages=(git jq iproute2 ethtool patchelf nftables neutron-server mariadb-server
  containerd runc containernetworking-plugins busybox-static iptables util-linux qemu-system-x86)
need_apt=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need_apt+=("$p")
done
qemu_from=()
if grep -qx 'VERSION_CODENAME=bookworm' /etc/os-release 2>/dev/null; then
  qemu_from=(-t bookworm-backports)
  if ! qemu-system-x86_64 --version 2>/dev/null | grep -q 'version \([89]\|[1-9][0-9]\)\.'; then
    [[ " ${need_apt[*]} " == *" qemu-system-x86 "* ]] || need_apt+=(qemu-system-x86)
  fi
fi
# The packages install in the background while Go builds the Kubernetes
# binaries (the one is mostly the disk and the network, the other the cores).
apt_pid= apt_log=
if ((${#need_apt[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: missing Debian packages ${need_apt[*]}; run as root to install them" >&2
    exit 1
  fi
  echo "setup: installing ${need_apt[*]} in the background (about 2 minutes with neutron-server)" >&2
  apt_log=$(mktemp)
  (
    # Keep the packages' own services from starting: the lab runs its own daemons.
    own_policy=
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && own_policy=1
    fi
    rc=0
    if ((${#qemu_from[@]})); then
      echo "deb http://deb.debian.org/debian bookworm-backports main" > /etc/apt/sources.list.d/netshift-bookworm-backports.list
    fi
    others=()
    for p in "${need_apt[@]}"; do [[ $p == qemu-system-x86 ]] || others+=("$p"); done
    { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      { ((${#others[@]} == 0)) || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${others[@]}"; } &&
      { [[ " ${need_apt[*]} " != *" qemu-system-x86 "* ]] ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${qemu_from[@]}" qemu-system-x86; }; } || rc=$?
    if [[ -n "$own_policy" ]]; then rm -f /usr/sbin/policy-rc.d; fi
    exit $rc
  ) >"$apt_log" 2>&1 &
  apt_pid=$!
  # Leave nothing half done: if a Go step fails, the install still finishes (and says so).
  trap 'if [[ -n "$apt_pid" ]]; then wait "$apt_pid" || cat "$apt_log" >&2; rm -f "$apt_log"; fi' EXIT
fi
# netshift's own modules (and the static tier's golangci-lint's) download while
# the Kubernetes binaries' modules download and build: the one waits on the
# network, the other mostly on the cores.
echo "setup: downloading Go modules" >&2
# The subshell passes a kill on to the download it runs (setup kills it when the build fails).
(
  trap 'kill $(jobs -p) 2>/dev/null; exit 1' TERM
  go mod download & wait $! || exit
  hack/golangci-lint.sh --download & wait $!
) &
mod_pid=$!
start=$(date +%s)
assets=$(hack/envtest-assets.sh) || { kill "$mod_pid" 2>/dev/null; exit 1; }
echo "setup: kube-apiserver, etcd, kubectl, kubelet, kube-controller-manager, kube-scheduler and kube-proxy ready in $assets ($(( $(date +%s) - start )) s)" >&2
# kwok keeps the simulated nodes of `netshift-lab scale` alive (about 2 minutes the first time).
start=$(date +%s)
kwok=$(hack/kwok-assets.sh) || { kill "$mod_pid" 2>/dev/null; exit 1; }
echo "setup: kwok ready at $kwok ($(( $(date +%s) - start )) s)" >&2
wait "$mod_pid" || { echo "setup: go mod download failed" >&2; exit 1; }
if [[ -n "$apt_pid" ]]; then
  if ! wait "$apt_pid"; then
    cat "$apt_log" >&2
    echo "setup: installing ${need_apt[*]} failed" >&2
    exit 1
  fi
  echo "setup: Debian packages installed" >&2
  rm -f "$apt_log"
  apt_pid=
fi
# The lab's Open vSwitch and OVN: Debian 13's, unpacked (about 20 seconds).
start=$(date +%s)
ovs=$(hack/ovs-dist.sh) || exit 1
echo "setup: Open vSwitch and OVN ready in $ovs ($(( $(date +%s) - start )) s)" >&2
# The lab's guest boots Debian's kernel, unpacked beside the system, never
# installed into it (internal/lab/vm/guest).
guest_kernel=${NETSHIFT_GUEST_KERNEL:-/var/cache/netshift/guest-kernel}
if ! ls "$guest_kernel"/boot/vmlinuz-* >/dev/null 2>&1; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: no guest kernel in $guest_kernel; run as root to unpack Debian's there" >&2
    exit 1
  fi
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}') || true
  if [[ -z "$pkg" ]]; then
    apt-get update -qq >/dev/null 2>&1 || true
    pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}') || true
  fi
  if [[ -z "$pkg" ]]; then
    echo "setup: apt knows no kernel package for linux-image-amd64; the lab's guest needs one" >&2
    exit 1
  fi
  tmp=$(mktemp -d)
  chown _apt "$tmp" 2>/dev/null || chmod 777 "$tmp" # apt-get download runs as _apt
  if ! (cd "$tmp" && apt-get download -qq "$pkg") || ! dpkg -x "$tmp"/*.deb "$tmp/x"; then
    rm -rf "$tmp"
    echo "setup: could not download and unpack $pkg for the lab's guest" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$guest_kernel")" && rm -rf "$guest_kernel" && mv "$tmp/x" "$guest_kernel"
  rm -rf "$tmp"
  echo "setup: the guest kernel ($pkg) unpacked in $guest_kernel" >&2
fi
echo "$assets"
