package standin

import (
	"strings"
	"testing"
)

func TestOnlyANodesOwnZoneMoveAndTheCentralZoneAreAnswered(t *testing.T) {
	for _, tc := range []struct {
		node string
		args []string
		want string // "" when allowed, else part of the error
	}{
		{"node-2", []string{"zone-move", "node-2", "node-2"}, ""},
		{"node-2", []string{"zone-move", "node-2", "global"}, ""},
		{"node-2", []string{"zone-central", "ensure"}, ""},
		{"node-1", []string{"zone-central", "retire"}, ""},
		{"node-2", []string{"zone-move", "node-1", "node-1"}, `may move only itself, not "node-1"`},
		{"node-2", []string{"zone-central", "stop"}, "is not a lab call"},
		{"node-2", []string{"rebuild-node", "node-1"}, "is not a lab call"},
		{"node-2", []string{"down"}, "is not a lab call"},
		{"node-2", nil, "is not a lab call"},
		{"node-2", []string{"zone-move", "node-2"}, "is not a lab call"},
	} {
		err := allowed(tc.node, tc.args)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %q: refused: %v", tc.node, tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %q: %v, want an error with %q", tc.node, tc.args, err, tc.want)
		}
	}
}
