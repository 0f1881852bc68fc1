package cri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultEndpoint is containerd's CRI socket at its standard path.
const DefaultEndpoint = "unix:///run/containerd/containerd.sock"

// Client talks to the node's container runtime. It is safe for concurrent
// use and meant to be kept: it remembers what it read of each sandbox.
type Client struct {
	endpoint string
	conn     *grpc.ClientConn
	rt       runtimeapi.RuntimeServiceClient

	mu sync.Mutex
	// read holds each ready sandbox read so far, by ID. What the verbose
	// status says of a ready sandbox (its process, its interfaces) does not
	// change while it lives, and that status is the runtime's costliest
	// answer (the sandbox's whole spec): a listing asks only for new ones.
	read map[string]readSandbox
}

// readSandbox is a sandbox's parsed status, ok as ParseSandbox said.
type readSandbox struct {
	s  Sandbox
	ok bool
}

// Dial connects to a CRI endpoint ("unix:///path" or a socket path).
func Dial(endpoint string) (*Client, error) {
	if endpoint == "" {
		return nil, errors.New("CRI endpoint: empty")
	}
	target := endpoint
	if strings.HasPrefix(target, "/") {
		target = "unix://" + target
	}
	if !strings.HasPrefix(target, "unix://") {
		return nil, fmt.Errorf("CRI endpoint %q: want unix:///path/to/socket", endpoint)
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("CRI endpoint %s: %w", endpoint, err)
	}
	return &Client{endpoint: endpoint, conn: conn, rt: runtimeapi.NewRuntimeServiceClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Runtime is the runtime's name and version, a check that it answers.
func (c *Client) Runtime(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return "", fmt.Errorf("CRI %s: version: %w", c.endpoint, err)
	}
	return v.RuntimeName + " " + v.RuntimeVersion, nil
}

// Sandboxes lists the node's ready pod sandboxes that have a network
// namespace of their own. A sandbox that goes away while it is read is left
// out: it has nothing left to change.
func (c *Client) Sandboxes(ctx context.Context) ([]Sandbox, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}})
	if err != nil {
		return nil, fmt.Errorf("CRI %s: list pod sandboxes: %w", c.endpoint, err)
	}
	c.mu.Lock()
	known := c.read
	c.mu.Unlock()
	read := make(map[string]readSandbox, len(list.Items))
	var out []Sandbox
	for _, item := range list.Items {
		r, seen := known[item.Id]
		if !seen {
			st, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: item.Id, Verbose: true})
			if err != nil {
				if isNotFound(err) {
					continue
				}
				return nil, fmt.Errorf("CRI %s: status of sandbox %s: %w", c.endpoint, shortID(item.Id), err)
			}
			s, ok, err := ParseSandbox(st.Status, st.Info)
			if err != nil {
				return nil, err
			}
			r = readSandbox{s: s, ok: ok}
		}
		read[item.Id] = r // what is no longer listed is forgotten
		if r.ok {
			out = append(out, r.s)
		}
	}
	c.mu.Lock()
	c.read = read
	c.mu.Unlock()
	return out, nil
}

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// ContainerPid is the host pid of a running container of a pod (0 when the
// pod has no such container running), from the runtime's verbose status.
func (c *Client) ContainerPid(ctx context.Context, namespace, pod, container string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{"io.kubernetes.pod.namespace": namespace, "io.kubernetes.pod.name": pod,
			"io.kubernetes.container.name": container}}})
	if err != nil {
		return 0, fmt.Errorf("CRI %s: list containers of pod %s/%s: %w", c.endpoint, namespace, pod, err)
	}
	for _, item := range list.Containers {
		st, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: item.Id, Verbose: true})
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return 0, fmt.Errorf("CRI %s: status of container %s: %w", c.endpoint, shortID(item.Id), err)
		}
		var vi struct {
			Pid int `json:"pid"`
		}
		if err := json.Unmarshal([]byte(st.Info["info"]), &vi); err != nil {
			return 0, fmt.Errorf("CRI %s: container %s: verbose information: %w", c.endpoint, shortID(item.Id), err)
		}
		if vi.Pid > 1 {
			return vi.Pid, nil
		}
	}
	return 0, nil
}
