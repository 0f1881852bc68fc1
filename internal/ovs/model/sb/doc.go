// Package sb is the libovsdb model of the OVN_Southbound database, generated from
// ovn-sb.ovsschema (schema 20.27.0) by hack/generate.sh.
package sb
