package plug

import (
	"testing"
)

// FuzzPortOf: whatever a pod's annotations hold, PortOf never panics, and a
// port it accepts is one the agent can plug: valid, with device and bridge
// names the kernel takes.
func FuzzPortOf(f *testing.F) {
	f.Add(`{"id":"3f2a9c1e-7b4d-4c1a-9e0f-123456789abc","mac":"0a:58:c6:12:fa:0a"}`, "", "uid-1")
	f.Add("", `{"id":"p1","mac":"fa:16:3e:00:00:01","pool":"a/b/host=n/sg"}`, "uid-2")
	f.Add(`{"id":"x","mac":"01:00:5e:00:00:01","tap":"eth0"}`, "", "")
	f.Add(`{"id":"../../etc","mac":"0a-58-c6-12-fa-0a","vmUUID":"a\"b"}`, "{", "u")
	f.Add(`{"id":"a","mac":"00:00:00:00:00:00","isolate":true}`, "", "u")
	f.Fuzz(func(t *testing.T, spec, pool, uid string) {
		ann := map[string]string{}
		if spec != "" {
			ann[PortSpecAnnotation] = spec
		}
		if pool != "" {
			ann[PoolAnnotation] = pool
		}
		p, ok, err := PortOf(ann, uid)
		if err != nil || !ok {
			return
		}
		if verr := p.Validate(); verr != nil {
			t.Fatalf("PortOf accepted %+v, which Validate refuses: %v", p, verr)
		}
		if n := NamesFor(p.ID); len(n.Bridge) > 15 || len(p.Tap) > 15 || p.Tap == "" {
			t.Fatalf("names of an accepted port do not fit a Linux interface: bridge %q tap %q", n.Bridge, p.Tap)
		}
	})
}
