package standin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"netshift.io/netshift/internal/atomicfile"
)

// A stand-in pod (and `netshift lab-call` on a real lab node) carries out an
// OVN zone move and the central zone's start and retirement by calling the
// lab: a request file in the node's lab directory, which the lab answers by
// running its own command on the machine, where the nodes' OVN daemons live.
// Only those commands are answered: the node's lab directory is writable
// from the node.

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

// allowed says whether node's pods may call the lab with args: its own
// zone move, or the central zone's ensure and retire.
func allowed(node string, args []string) error {
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

// Place asks the lab, through the node's lab directory dir, to run args,
// and waits for its answer.
func Place(ctx context.Context, dir string, args []string, wait time.Duration) (CallResult, error) {
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

// Ask is Place for a person or a pod: the lab's output goes to out, and a
// command that failed is an error quoting its last line.
func Ask(ctx context.Context, dir string, out io.Writer, wait time.Duration, args ...string) error {
	r, err := Place(ctx, dir, args, wait)
	if err != nil {
		return err
	}
	fmt.Fprint(out, r.Output)
	if r.ExitCode != 0 {
		return fmt.Errorf("lab %s: exit code %d: %s", strings.Join(args, " "), r.ExitCode, lastLine(r.Output))
	}
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// Answerer answers the nodes' calls by running `BINARY lab --name LAB ARGS`.
type Answerer struct {
	Binary string
	Lab    string
	// NodeDirs is each node's lab directory, by node name.
	NodeDirs map[string]string
}

// Serve answers the calls until ctx ends.
func (a Answerer) Serve(ctx context.Context) {
	var running sync.Map
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
		a.answerWaiting(ctx, &running)
	}
}

// answerWaiting runs the calls waiting in every node's lab directory, each once.
func (a Answerer) answerWaiting(ctx context.Context, running *sync.Map) {
	for node, dir := range a.NodeDirs {
		reqs, _ := filepath.Glob(filepath.Join(dir, CallsDir, "*.req"))
		for _, req := range reqs {
			if _, busy := running.LoadOrStore(req, true); busy {
				continue
			}
			go func() {
				defer running.Delete(req)
				data, _ := json.Marshal(a.answer(ctx, node, req))
				done := strings.TrimSuffix(req, ".req") + ".done"
				if err := atomicfile.Write(done, data, 0o666); err != nil {
					fmt.Fprintf(os.Stderr, "lab: node %s: answer %s: %v\n", node, req, err)
				}
				_ = os.Remove(req)
			}()
		}
	}
}

func (a Answerer) answer(ctx context.Context, node, req string) CallResult {
	var call Call
	data, err := os.ReadFile(req)
	if err == nil {
		err = json.Unmarshal(data, &call)
	}
	if err == nil {
		err = allowed(node, call.Args)
	}
	if err != nil {
		return CallResult{ExitCode: 2, Output: fmt.Sprintf("lab call from node %s refused: %v\n", node, err)}
	}
	cmd := exec.CommandContext(ctx, a.Binary, append([]string{"lab", "--name", a.Lab}, call.Args...)...)
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
