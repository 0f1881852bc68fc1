#!/usr/bin/env bash
# Regenerates deepcopy code and the CRDs under config/crd from api/, the API
# reference docs/api.md from those CRDs (it fails on a field with no
# description), and the OVSDB models under internal/ovs/model from the
# schemas beside them (Open vSwitch 3.1's and OVN 23.03's, Debian 12's: a
# model connects to a server whose schema has every column it names, so the
# oldest supported schemas make models that every newer server accepts).
set -euo pipefail
cd "$(dirname "$0")/.."
go tool controller-gen object paths=./api/... crd paths=./api/... output:crd:dir=config/crd
trap 'rm -f docs/api.md.tmp' EXIT
go run ./hack/apidoc config/crd/netshift.io_*.yaml >docs/api.md.tmp
mv docs/api.md.tmp docs/api.md

schema() { # NAME FILE...: the first schema file that exists
	local name=$1; shift
	for f in "$@"; do [[ -r $f ]] && { echo "$f"; return; }; done
	echo "generate: the $name schema is not installed (looked in $*)" >&2
	return 1
}
gen() { # PACKAGE SCHEMA
	rm -rf "internal/ovs/model/$1"
	go tool modelgen -p "$1" -o "internal/ovs/model/$1" "$2"
	printf '// Package %s is the libovsdb model of the %s database, generated from\n// %s (schema %s) by hack/generate.sh.\npackage %s\n' \
		"$1" "$(jq -r .name "$2")" "$(basename "$2")" "$(jq -r .version "$2")" "$1" >"internal/ovs/model/$1/doc.go"
}
gen vswitch "$(schema "Open vSwitch" internal/ovs/model/schema/vswitch.ovsschema)"
gen nb "$(schema "OVN northbound" internal/ovs/model/schema/ovn-nb.ovsschema)"
gen sb "$(schema "OVN southbound" internal/ovs/model/schema/ovn-sb.ovsschema)"
