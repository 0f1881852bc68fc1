#!/usr/bin/env bash
# Unpacks the lab's Open vSwitch and OVN, Debian 13's (trixie) packages, into
# a directory of their own (NETSHIFT_OVS_ROOT, default
# /var/cache/netshift/openvswitch) with the C library and the other libraries
# they load, and points each program at those (patchelf), so they run on
# Debian 12 without touching the machine's packages: apt reads trixie's
# package lists into a directory of this script's and only downloads.
# Prints the directory. Run as root; about 20 seconds the first time.
set -euo pipefail
root=${NETSHIFT_OVS_ROOT:-/var/cache/netshift/openvswitch}
# The programs name their loader by this path: absolute, no trailing slash.
[[ $root == /* ]] || { echo "ovs-dist: NETSHIFT_OVS_ROOT must be an absolute path, not $root" >&2; exit 1; }
root=$(realpath -m "$root")
[[ $root != / ]] || { echo "ovs-dist: NETSHIFT_OVS_ROOT must not be /" >&2; exit 1; }
[[ $(uname -m) == x86_64 ]] || { echo "ovs-dist: unpacks amd64 packages; this machine is $(uname -m)" >&2; exit 1; }
want_ovs=3.5. want_ovn=25.03.
if [[ -f $root/VERSION ]] && grep -q "^openvswitch-switch $want_ovs" "$root/VERSION" && grep -q "^ovn-host $want_ovn" "$root/VERSION"; then
  echo "$root"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "ovs-dist: Open vSwitch and OVN are not unpacked in $root; run as root" >&2
  exit 1
fi
command -v patchelf >/dev/null || { echo "ovs-dist: patchelf is not installed (apt-get install patchelf)" >&2; exit 1; }
# The packages, and every library of theirs that Debian 12's lack or have older.
packages=(openvswitch-common openvswitch-switch ovn-common ovn-central ovn-host ovn-ic ovn-ic-db
  libc6 libgcc-s1 libssl3t64 libcap-ng0 libcap2 libnuma1 libudev1 libunbound8 libevent-2.1-7t64
  libbpf1 libxdp1 libelf1t64 zlib1g libzstd1)
work=$(mktemp -d "${root%/*}/.openvswitch.XXXXXX" 2>/dev/null || { mkdir -p "${root%/*}" && mktemp -d "${root%/*}/.openvswitch.XXXXXX"; })
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/apt/parts "$work"/apt/lists/partial "$work"/apt/cache/archives/partial "$work"/debs "$work"/root
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" > "$work/apt/sources.list"
apt=(-o Dir::Etc::SourceList="$work/apt/sources.list" -o Dir::Etc::SourceParts="$work/apt/parts"
  -o Dir::State::Lists="$work/apt/lists" -o Dir::Cache="$work/apt/cache" -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts="$work/apt/parts"
  -o Dir::State::status=/dev/null -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
apt-get "${apt[@]}" -qq update >/dev/null
(cd "$work/debs" && apt-get "${apt[@]}" -qq download "${packages[@]}" >/dev/null)
for deb in "$work"/debs/*.deb; do dpkg -x "$deb" "$work/root"; done
version() { dpkg-deb -f "$work"/debs/"$1"_*.deb Version; }
ovs=$(version openvswitch-switch) ovn=$(version ovn-host)
if [[ $ovs != "$want_ovs"* || $ovn != "$want_ovn"* ]]; then
  echo "ovs-dist: trixie has openvswitch-switch $ovs and ovn-host $ovn, not $want_ovs* and $want_ovn*" >&2
  exit 1
fi
# Each program loads trixie's loader and libraries from the final directory.
lib=$root/usr/lib/x86_64-linux-gnu
mkdir -p "$work/root/bin"
for f in "$work"/root/usr/bin/* "$work"/root/usr/sbin/* "$work"/root/usr/lib/openvswitch-switch/ovs-vswitchd; do
  [[ ! -L $f && $(head -c4 "$f" | tr -d '\0') == $'\x7fELF' ]] || continue
  patchelf --set-interpreter "$root/usr/lib64/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$lib" "$f"
  ln -s "${f#"$work/root"}" "$work/root/bin/${f##*/}"
done
# The links name the final paths; rewrite them under it.
for l in "$work"/root/bin/*; do ln -sfn "$root$(readlink "$l")" "$l"; done
# In place, the programs must run before VERSION says they are there; an
# earlier copy is set aside until then, and back if they do not.
old=
if [[ -e $root ]]; then old="$work/old" && mv "$root" "$old"; fi
mv "$work/root" "$root"
if ! "$root/bin/ovsdb-server" --version >&2 || ! "$root/bin/ovn-controller" --version >&2; then
  rm -rf "$root"
  if [[ -n $old ]]; then mv "$old" "$root"; fi
  echo "ovs-dist: the unpacked programs do not run (see above)" >&2
  exit 1
fi
printf 'openvswitch-switch %s\novn-host %s\n' "$ovs" "$ovn" > "$root/VERSION"
echo "$root"
