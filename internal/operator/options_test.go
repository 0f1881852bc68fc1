package operator

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, c := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.ChangeLead = -time.Second }, "--change-lead: -1s is outside 500ms..10m0s"},
		{func(o *Options) { o.ChangeLead = 0 }, "--change-lead: 0s is outside 500ms..10m0s"},
		{func(o *Options) { o.StepSpacing = -time.Millisecond }, "--step-spacing: -1ms is outside 1ms..10s"},
		{func(o *Options) { o.StepSpacing = 0 }, "--step-spacing: 0s is outside 1ms..10s"},
		{func(o *Options) { o.AgentWriteSpacing = 0 }, "--agent-write-spacing: 0s is outside 1ms..100ms"},
		{func(o *Options) { o.AgentWriteSpacing = time.Second }, "--agent-write-spacing: 1s is outside 1ms..100ms"},
		{func(o *Options) { o.EvictionRetry = 0 }, "--eviction-retry: 0s is outside 100ms..10m0s"},
		{func(o *Options) { o.AdmissionSettle = 2 * time.Minute }, "--admission-settle: 2m0s is outside 0s..1m0s"},
		{func(o *Options) { o.AnswerTimeout = 0 }, "--answer-timeout: 0s is outside 1s..10m0s"},
		{func(o *Options) { o.SouthboundResync = 0 }, "--southbound-resync: 0s is outside 1s..1h0m0s"},
		{func(o *Options) { o.ChangeRetry = 2 * time.Hour }, "--change-retry: 2h0m0s is outside 1s..1h0m0s"},
		{func(o *Options) { o.ZoneMoveTimeout = time.Second }, "--zone-move-timeout: 1s is outside 10s..1h0m0s"},
		{func(o *Options) { o.ZoneMoveSettle = 11 * time.Minute }, "--zone-move-settle: 11m0s is outside 0s..10m0s"},
		{func(o *Options) { o.ZoneCentralReplicas = 0 }, "--zone-central-replicas: 0 is outside 1..9"},
		{func(o *Options) { o.ZonePluginPods = "app in" }, `--zone-plugin-pods: "app in" is not a label selector`},
		{func(o *Options) { o.ZonePluginPods = "  " }, `--zone-plugin-pods: "  " is not a label selector`},
		{func(o *Options) { o.NetworkPlugin = "calico" }, `--network-plugin: "calico" is not a network plugin netshift has a driver for (ovs-bridge, ovn-kubernetes)`},
		{func(o *Options) { o.AgentDaemonSet = "netshift-agent" }, `--agent-daemonset: "netshift-agent" is not namespace/name`},
		{func(o *Options) { o.AgentDaemonSet = "Bad NS/netshift-agent" }, `--agent-daemonset: "Bad NS/netshift-agent" is not namespace/name`},
		{func(o *Options) { o.TimeAdvertiseURL = "10.0.0.1:8082" }, `--time-advertise-url: "10.0.0.1:8082" is not an http:// or https:// URL`},
	} {
		o := DefaultOptions()
		c.set(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want %q", err, c.want)
		}
	}
}
