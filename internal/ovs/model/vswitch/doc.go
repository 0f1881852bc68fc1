// Package vswitch is the libovsdb model of the Open_vSwitch database, generated from
// vswitch.ovsschema (schema 8.3.1) by hack/generate.sh.
package vswitch
