package portpool

import "testing"

// FuzzParseKey: a pool key read from a request or an annotation never panics
// the parser, and one it accepts is valid and reads back from its own form.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"p/n/host=worker-1/sg1,sg2", "p/n/trunk=port-1/", "p/n/worker-1/sg", "p/n/host=a/sg2,sg1,sg1", "//host=/", "p/n/host=a b/sg", "a/b/c/d/e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			return
		}
		if err := k.Validate(); err != nil {
			t.Fatalf("ParseKey(%q) = %+v, which Validate refuses: %v", s, k, err)
		}
		back, err := ParseKey(k.String())
		if err != nil || back != k {
			t.Fatalf("key %+v does not read back from %q: %+v, %v", k, k.String(), back, err)
		}
	})
}
