package agent

import (
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
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

// apply puts what s shares into an agent's manager options.
func (s *Shared) apply(opts *ctrl.Options) {
	if s == nil {
		return
	}
	if s.Scheme != nil {
		opts.Scheme = s.Scheme
	}
	if s.RESTMapper != nil {
		opts.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return s.RESTMapper, nil }
	}
}
