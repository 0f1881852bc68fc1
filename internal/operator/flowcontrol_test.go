package operator_test

import (
	"net/http"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"netshift.io/netshift/internal/testenv"
)

// TestTheAgentsHaveAPriorityLevelOfTheirOwn: the API server's priority and
// fairness puts the agent DaemonSet's requests, as its ServiceAccount, in
// netshift-agents (config/flowcontrol), and no one else's: not the operator's.
// The API server says in every answer which level took the request.
func TestTheAgentsHaveAPriorityLevelOfTheirOwn(t *testing.T) {
	testenv.Require(t, envMissing)
	var level flowcontrolv1.PriorityLevelConfiguration
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: "netshift-agents"}, &level); err != nil {
		t.Fatalf("the agents' priority level: %v", err)
	}
	levelOf := func(cfg *rest.Config) string {
		t.Helper()
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, cfg.Host+"/apis/netshift.io/v1alpha1/netshiftchangeplans", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
	}
	if got := levelOf(env.AgentConfig("fc-1")); got != string(level.UID) {
		t.Errorf("an agent's request went to the level of UID %q, not netshift-agents (%s)", got, level.UID)
	}
	if got := levelOf(env.OperatorConfig()); got == "" || got == string(level.UID) {
		t.Errorf("the operator's request went to the level of UID %q; netshift-agents is %s", got, level.UID)
	}
}
