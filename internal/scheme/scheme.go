// Package scheme is the runtime scheme every netshift client uses: the
// Kubernetes built-in types and netshift's API.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"netshift.io/netshift/api/v1alpha1"
)

// New returns a scheme with the Kubernetes built-in types and netshift's.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}
