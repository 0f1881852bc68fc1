// Package prereq names a real prerequisite that is missing on this machine
// (an API server binary, neutron-server, root): tests skip on it, or fail
// under CI (package testenv).
package prereq

// Missing says which real prerequisite is absent and how to get it.
type Missing struct{ Reason string }

func (m *Missing) Error() string { return m.Reason }
