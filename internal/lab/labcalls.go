package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"netshift.io/netshift/internal/atomicfile"
)

// The lab's stand-in for the network plugin's pods (ovnkube-node,
// ovnkube-central) carries out an OVN zone move and the central zone's start
// and retirement by calling the lab: a request file in the node's lab
// directory, which the supervisor answers by running the lab command on the
// machine, where the nodes' OVN daemons live. Only those commands are answered.

// CallsDir is where a node's calls are, in its lab directory.
const CallsDir = "calls"

// Call is one request; CallResult its answer.
type Call struct {
	Args []string `json:"args"`
}

type CallResult struct {
	ExitCode int    `json:"exitCode"`
	Output   string `json:"output"`
}

// callAllowed says whether node's pods may call the lab with args: its own
// zone move, or the central zone's ensure and retire.
func callAllowed(node string, args []string) error {
	switch {
	case len(args) == 3 && args[0] == "zone-move" && args[1] == node:
		return nil
	case len(args) == 3 && args[0] == "zone-move":
		return fmt.Errorf("node %s may move only itself, not %q", node, args[1])
	case len(args) == 2 && args[0] == "zone-central" && (args[1] == "ensure" || args[1] == "retire"):
		return nil
	}
	return fmt.Errorf("%q is not a lab call (zone-move NODE ZONE, zone-central ensure|retire)", strings.Join(args, " "))
}

// PlaceCall asks the lab, through the node's lab directory dir, to run args,
// and waits for its answer.
func PlaceCall(ctx context.Context, dir string, args []string, wait time.Duration) (CallResult, error) {
	var r CallResult
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	base := filepath.Join(dir, CallsDir, hex.EncodeToString(b))
	data, _ := json.Marshal(Call{Args: args})
	if err := atomicfile.Write(base+".req", data, 0o666); err != nil {
		return r, fmt.Errorf("call the lab: %w", err)
	}
	deadline := time.After(wait)
	for {
		if data, err := os.ReadFile(base + ".done"); err == nil {
			_ = os.Remove(base + ".done")
			return r, json.Unmarshal(data, &r)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-deadline:
			return r, fmt.Errorf("the lab did not answer %q within %s (request %s.req)", strings.Join(args, " "), wait, base)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// serveCalls answers the nodes' calls until ctx ends.
func (s *State) serveCalls(ctx context.Context, binary string) {
	var running sync.Map
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
		s.answerCalls(ctx, binary, &running)
	}
}

// answerCalls runs the calls waiting in every node's lab directory, each once.
func (s *State) answerCalls(ctx context.Context, binary string, running *sync.Map) {
	for _, n := range s.Topology.Nodes {
		reqs, _ := filepath.Glob(filepath.Join(s.labDir(n.Name), CallsDir, "*.req"))
		for _, req := range reqs {
			if _, busy := running.LoadOrStore(req, true); busy {
				continue
			}
			go func() {
				defer running.Delete(req)
				res := s.answerCall(ctx, binary, n.Name, req)
				data, _ := json.Marshal(res)
				done := strings.TrimSuffix(req, ".req") + ".done"
				if err := atomicfile.Write(done, data, 0o666); err != nil {
					fmt.Fprintf(os.Stderr, "lab: node %s: answer %s: %v\n", n.Name, req, err)
				}
				_ = os.Remove(req)
			}()
		}
	}
}

func (s *State) answerCall(ctx context.Context, binary, node, req string) CallResult {
	var call Call
	data, err := os.ReadFile(req)
	if err == nil {
		err = json.Unmarshal(data, &call)
	}
	if err == nil {
		err = callAllowed(node, call.Args)
	}
	if err != nil {
		return CallResult{ExitCode: 2, Output: fmt.Sprintf("lab call from node %s refused: %v\n", node, err)}
	}
	cmd := exec.CommandContext(ctx, binary, append([]string{"lab", "--name", s.Options.Name}, call.Args...)...)
	out, err := cmd.CombinedOutput()
	fmt.Fprintf(os.Stderr, "lab: node %s called %q: %v\n", node, strings.Join(call.Args, " "), err)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return CallResult{ExitCode: exit.ExitCode(), Output: string(out)}
	case err != nil:
		return CallResult{ExitCode: 1, Output: string(out) + err.Error() + "\n"}
	}
	return CallResult{Output: string(out)}
}
