package manager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The pool API over TCP is a Kubernetes-style API: TLS, and a bearer token
// that the API server authenticates (TokenReview) and authorizes
// (SubjectAccessReview) for a verb on the resource portpools.netshift.io, which
// RBAC grants like any other (get: list and show; create: populate; delete:
// free and drain). The unix socket stays as it is: a file only root can open.
const (
	APIGroup    = "netshift.io"
	APIResource = "portpools"
)

// ErrUnauthenticated and ErrForbidden are the refusals of a token.
var (
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("forbidden")
)

// Authorizer decides whether a bearer token may take verb on the pool API.
type Authorizer interface {
	Authorize(ctx context.Context, token, verb string) (user string, err error)
}

// KubeAuthorizer asks the API server, as the operator (which RBAC lets
// create TokenReviews and SubjectAccessReviews: system:auth-delegator).
type KubeAuthorizer struct{ Client client.Client }

// Authorize authenticates the token, then checks the verb on portpools.netshift.io.
func (a KubeAuthorizer) Authorize(ctx context.Context, token, verb string) (string, error) {
	tr := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	if err := a.Client.Create(ctx, tr); err != nil {
		return "", fmt.Errorf("review the token: %w", err)
	}
	if !tr.Status.Authenticated {
		return "", fmt.Errorf("%w: the API server does not accept the bearer token: %s", ErrUnauthenticated, tr.Status.Error)
	}
	u := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: APIGroup, Resource: APIResource, Verb: verb},
	}}
	if err := a.Client.Create(ctx, sar); err != nil {
		return u.Username, fmt.Errorf("check access of %s: %w", u.Username, err)
	}
	if !sar.Status.Allowed {
		return u.Username, fmt.Errorf("%w: %s may not %s %s.%s (grant it with RBAC)", ErrForbidden, u.Username, verb, APIResource, APIGroup)
	}
	return u.Username, nil
}

// verbOf is the RBAC verb a request of the API needs.
func verbOf(r *http.Request) string {
	switch {
	case r.Method == http.MethodGet:
		return "get"
	case r.URL.Path == "/v1/populate":
		return "create"
	default: // free, drain
		return "delete"
	}
}

// RequireToken lets a request through to h only with a bearer token allowed
// the request's verb; others get 401 or 403 with the reason.
func RequireToken(a Authorizer, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			writeJSON(w, http.StatusUnauthorized, CountResponse{Error: "port pool API: a bearer token is required (Authorization: Bearer TOKEN)"})
			return
		}
		_, err := a.Authorize(r.Context(), token, verbOf(r))
		switch {
		case errors.Is(err, ErrUnauthenticated):
			writeJSON(w, http.StatusUnauthorized, CountResponse{Error: "port pool API: " + err.Error()})
		case errors.Is(err, ErrForbidden):
			writeJSON(w, http.StatusForbidden, CountResponse{Error: "port pool API: " + err.Error()})
		case err != nil:
			writeJSON(w, http.StatusInternalServerError, CountResponse{Error: "port pool API: " + err.Error()})
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// TLSFiles are the server's certificate and key (PEM).
type TLSFiles struct{ Cert, Key string }

// listenTCP opens hostPort with TLS; the API is never served in clear text
// over the network.
func listenTCP(hostPort string, files TLSFiles) (net.Listener, error) {
	if files.Cert == "" || files.Key == "" {
		return nil, fmt.Errorf("port pool API tcp:%s: TLS is required: give --portpool-api-tls-cert and --portpool-api-tls-key", hostPort)
	}
	cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		return nil, fmt.Errorf("port pool API tcp:%s: %w", hostPort, err)
	}
	return tls.Listen("tcp", hostPort, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
}

// ClientOptions reach a TCP API: the token to present and the CA that signed
// the server's certificate (the system's pool when empty).
type ClientOptions struct {
	Token  string
	CAFile string
}

func tlsClientConfig(caFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", caFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}
