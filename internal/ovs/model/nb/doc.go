// Package nb is the libovsdb model of the OVN_Northbound database, generated from
// ovn-nb.ovsschema (schema 7.0.0) by hack/generate.sh.
package nb
