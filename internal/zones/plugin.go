package zones

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// A node changes zone the way an interconnect network plugin makes it: its
// zone label (ZoneLabel) is set, its network plugin pod is deleted, and the
// pod the plugin's DaemonSet starts in its place reads the label, moves the
// node's ovn-controller, switch and ports into that zone and then writes the
// node's zone annotation. The central zone's databases and ovn-northd run as
// a Deployment, started by scaling it up and retired by scaling it to 0.

// ZoneLabel on a Node is the zone its network plugin pod joins when it starts.
const ZoneLabel = "k8s.ovn.org/zone-name"

// RemoteZoneMigrated is the annotation OVN-Kubernetes' ovnkube-node (v1.0 to
// v1.2) sets on its node when it first starts outside the central zone
// GlobalZone, and never removes: while a node carries it, the central zone's
// ovnkube-controller takes the node for remote whatever its zone, so a node
// moved back would get no switch, gateway or pod ports there (upstream
// removed this in v1.3). A move into the central zone removes it.
const RemoteZoneMigrated = "k8s.ovn.org/remote-zone-migrated"

// FollowZone brings a node's marks of having left the central zone (the
// annotations marks, such as RemoteZoneMigrated) in line with the zone its
// plugin pod has just annotated it in, and says whether it changed them.
// Into the central zone they go: removed any earlier, the central zone
// would take the node's pods for its own while they are still in the zone
// they leave. Out of it they are set at once, valued with the zone:
// ovnkube-node v1.1 connects its ovn-controller to its new zone's database
// as it annotates the node, and sets its own mark only after checks that
// take it most of a second, while the central zone, still taking the node
// for its own, sends its pods' traffic where the node no longer reads it.
func FollowZone(annotations map[string]string, marks []string, zone string) bool {
	changed := false
	for _, a := range marks {
		_, marked := annotations[a]
		switch {
		case zone == GlobalZone && marked:
			delete(annotations, a)
			changed = true
		case zone != GlobalZone && !marked:
			annotations[a] = zone
			changed = true
		}
	}
	return changed
}

// Restart is the operator's record of the plugin pod it deleted for a node's
// move: kept in the API server, so a restarted operator neither deletes the
// pod's successor nor forgets to delete the pod.
type Restart struct {
	// Zone is the zone the node was labelled for.
	Zone string
	// PodUID is the pod deleted ("" when the node had none).
	PodUID string
	// At is when it was deleted.
	At time.Time
}

// PluginStep is what a node's move needs now.
type PluginStep struct {
	// Record: write Restart{Zone, Delete} before deleting (the move's first
	// restart, or the label changed since the last).
	Record bool
	// Delete is the plugin pod to delete: one that started before the node
	// was labelled for its zone. nil: none.
	Delete *corev1.Pod
	// Held says why the move does not finish; "" while it may still.
	Held string
	// Recheck is when to look again for a hold that time alone would bring
	// (the move timeout); 0: no deadline pending.
	Recheck time.Duration
}

// NextPluginStep decides the next step of a node's move to zone from its
// plugin pods (those of the DaemonSet on that node), the operator's record of
// the last restart, and how long a plugin pod may take to annotate the node.
func NextPluginStep(zone string, pods []corev1.Pod, rec *Restart, now time.Time, timeout time.Duration) PluginStep {
	live := livePods(pods)
	if rec == nil && len(live) > 0 && !podReady(&live[len(live)-1]) {
		// A move netshift did not start (a node that registered with its
		// label, or one labelled by hand) whose plugin pod is still starting:
		// that pod reads the label when it does, so it is left to finish.
		newest := &live[len(live)-1]
		return waitForPod(zone, newest, now.Sub(newest.CreationTimestamp.Time), timeout)
	}
	if rec == nil || rec.Zone != zone {
		var del *corev1.Pod
		if len(live) > 0 {
			del = &live[0]
		}
		return PluginStep{Record: true, Delete: del}
	}
	var successor *corev1.Pod
	for i := range live {
		if rec.PodUID != "" && string(live[i].UID) == rec.PodUID {
			// Recorded but not yet deleted (the operator stopped in between).
			return PluginStep{Delete: &live[i]}
		}
		if successor == nil {
			successor = &live[i]
		}
	}
	if successor == nil {
		waited := now.Sub(rec.At)
		if waited >= timeout {
			return PluginStep{Held: fmt.Sprintf("no network plugin pod on the node %s after its restart", waited.Round(time.Second))}
		}
		return PluginStep{Recheck: timeout - waited}
	}
	return waitForPod(zone, successor, now.Sub(rec.At), timeout)
}

// waitForPod is the step while pod, started for the node's move waited ago,
// has not annotated the node: held if it fails, or once it is overdue.
func waitForPod(zone string, pod *corev1.Pod, waited, timeout time.Duration) PluginStep {
	overdue := waited >= timeout
	step := PluginStep{}
	if !overdue {
		step.Recheck = timeout - waited
	}
	switch {
	case failing(pod) != "":
		step.Held = fmt.Sprintf("plugin pod %s/%s: %s", pod.Namespace, pod.Name, failing(pod))
	case overdue && !podReady(pod):
		step.Held = fmt.Sprintf("plugin pod %s/%s is not ready %s after the restart (%s)", pod.Namespace, pod.Name,
			waited.Round(time.Second), podPhase(pod))
	case overdue:
		step.Held = fmt.Sprintf("plugin pod %s/%s is ready but has not annotated the node %s=%s %s after the restart",
			pod.Namespace, pod.Name, ZoneAnnotation, zone, waited.Round(time.Second))
	}
	return step
}

// livePods are the pods not being deleted, oldest first (a DaemonSet keeps
// one; two for a moment while one is replaced).
func livePods(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
	})
	return out
}

// waitingFailures are the container states of a pod that will not finish by
// itself: the kubelet backs off between its tries.
var waitingFailures = map[string]bool{
	"CrashLoopBackOff": true, "ImagePullBackOff": true, "ErrImagePull": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "InvalidImageName": true, "RunContainerError": true,
}

// failing says how a pod's containers fail ("" when they do not): one in a
// back-off, or one that exited and was restarted.
func failing(p *corev1.Pod) string {
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, c := range statuses {
		var parts []string
		if w := c.State.Waiting; w != nil && waitingFailures[w.Reason] {
			parts = append(parts, "container "+c.Name+" "+w.Reason)
		} else if c.RestartCount == 0 {
			continue
		} else {
			parts = append(parts, "container "+c.Name)
		}
		if c.RestartCount > 0 {
			parts = append(parts, fmt.Sprintf("restarted %d times", c.RestartCount))
		}
		if t := c.LastTerminationState.Terminated; t != nil {
			last := fmt.Sprintf("last exit %d", t.ExitCode)
			if t.Reason != "" {
				last += " (" + t.Reason + ")"
			}
			if m := strings.TrimSpace(t.Message); m != "" {
				last += ": " + lastLine(m)
			}
			parts = append(parts, last)
		}
		return strings.Join(parts, ", ")
	}
	return ""
}

func lastLine(s string) string {
	lines := strings.Split(s, "\n")
	l := lines[len(lines)-1]
	if len(l) > 300 {
		l = l[:300] + "..."
	}
	return l
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podPhase(p *corev1.Pod) string {
	if p.Spec.NodeName == "" {
		return "not scheduled"
	}
	if p.Status.Phase == "" {
		return "phase unknown"
	}
	return "phase " + string(p.Status.Phase)
}

// Central side states between Running and Retired, while its Deployment scales.
const (
	CentralStarting Central = "Starting"
	CentralRetiring Central = "Retiring"
)

// CentralOf is the central side's state from its Deployment: Running once
// scaled up with a ready pod of its current spec, Retired once scaled to 0
// with no pod left (a terminating one is still retiring the zone), Starting
// or Retiring in between.
func CentralOf(d *appsv1.Deployment) Central {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	current := d.Status.ObservedGeneration >= d.Generation
	if want == 0 {
		if current && d.Status.Replicas == 0 && ptr.Deref(d.Status.TerminatingReplicas, 0) == 0 {
			return CentralRetired
		}
		return CentralRetiring
	}
	if current && d.Status.ReadyReplicas > 0 && d.Status.UpdatedReplicas > 0 {
		return CentralRunning
	}
	return CentralStarting
}
