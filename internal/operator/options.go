package operator

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"netshift.io/netshift/internal/livechange"
	"netshift.io/netshift/internal/netplugin/plugins"
)

// durationBound is the range a duration flag of the operator accepts.
type durationBound struct {
	flag     string
	value    time.Duration
	min, max time.Duration
}

// Validate refuses options outside their ranges, naming the flag and the
// range. A zero never means "the default": the flags carry the defaults.
func (o Options) Validate() error {
	for _, b := range []durationBound{
		{"--eviction-retry", o.EvictionRetry, 100 * time.Millisecond, 10 * time.Minute},
		{"--admission-settle", o.AdmissionSettle, 0, time.Minute},
		{"--change-lead", o.ChangeLead, 500 * time.Millisecond, 10 * time.Minute},
		{"--step-spacing", o.StepSpacing, time.Millisecond, 10 * time.Second},
		{"--agent-write-spacing", o.AgentWriteSpacing, livechange.MinAgentWriteSpacing, livechange.MaxAgentWriteSpacing},
		{"--answer-timeout", o.AnswerTimeout, time.Second, 10 * time.Minute},
		{"--southbound-resync", o.SouthboundResync, time.Second, time.Hour},
		{"--change-retry", o.ChangeRetry, time.Second, time.Hour},
		{"--zone-move-timeout", o.ZoneMoveTimeout, 10 * time.Second, time.Hour},
		{"--zone-move-settle", o.ZoneMoveSettle, 0, 10 * time.Minute},
	} {
		if b.value < b.min || b.value > b.max {
			return fmt.Errorf("%s: %s is outside %s..%s", b.flag, b.value, b.min, b.max)
		}
	}
	if o.ZoneCentralReplicas < 1 || o.ZoneCentralReplicas > 9 {
		return fmt.Errorf("--zone-central-replicas: %d is outside 1..9", o.ZoneCentralReplicas)
	}
	if _, err := labels.Parse(o.ZonePluginPods); err != nil || (o.ZonePluginPods != "" && strings.TrimSpace(o.ZonePluginPods) == "") {
		return fmt.Errorf("--zone-plugin-pods: %q is not a label selector (like app=ovnkube-node; empty: the network plugin's)", o.ZonePluginPods)
	}
	if o.AgentDaemonSet != "" {
		ns, name, ok := strings.Cut(o.AgentDaemonSet, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return fmt.Errorf("--agent-daemonset: %q is not namespace/name (like netshift-system/netshift-agent; empty: every Linux node runs the agent)", o.AgentDaemonSet)
		}
	}
	if o.NetworkPlugin != "" {
		if err := plugins.Check(o.NetworkPlugin); err != nil {
			return err
		}
	}
	if o.TimeAdvertiseURL != "" {
		if u, err := url.Parse(o.TimeAdvertiseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--time-advertise-url: %q is not an http:// or https:// URL with a host", o.TimeAdvertiseURL)
		}
	}
	return nil
}
