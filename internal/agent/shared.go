package agent

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"netshift.io/netshift/internal/scheme"
)

// Shared is what several agents in one process (the scale run's thousands)
// can share: the types they know and where the API server serves them are the
// same for every node. Each agent's own scheme and discovered REST mapper
// took 500 KB, most of the process's live heap, which every garbage
// collection scanned again; a real agent, alone in its process, needs none
// of this. A shared mapper discovers a kind it does not know under one lock
// for every agent: share it only where the CRDs are installed before the
// agents start.
type Shared struct {
	// Scheme is the agents' scheme (scheme.New when nil).
	Scheme *runtime.Scheme
	// RESTMapper maps the agents' kinds to resources (each discovers its own when nil).
	RESTMapper meta.RESTMapper
}

func (s *Shared) scheme() *runtime.Scheme {
	if s == nil || s.Scheme == nil {
		return scheme.New()
	}
	return s.Scheme
}
