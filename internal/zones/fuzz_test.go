package zones

import "testing"

// FuzzParseConfig: whatever the ConfigMap holds, the parser never panics, and
// a configuration it accepts asks for a layout netshift can reach.
func FuzzParseConfig(f *testing.F) {
	f.Add(true, "multizone", "", "", "")
	f.Add(true, "singlezone", "no", "", "")
	f.Add(true, " singlezone ", "yes", "extra", "1")
	f.Add(true, "zoned", "maybe", "", "")
	f.Add(false, "", "", "", "")
	f.Fuzz(func(t *testing.T, present bool, mode, definitive, otherKey, otherValue string) {
		data := map[string]string{}
		if mode != "" {
			data[KeyZoneMode] = mode
		}
		if definitive != "" {
			data[KeyDefinitive] = definitive
		}
		if otherKey != "" {
			data[otherKey] = otherValue
		}
		c, err := ParseConfig(present, data)
		if err != nil {
			return
		}
		if c.Mode != Single && c.Mode != Multi {
			t.Fatalf("accepted %v as mode %q", data, c.Mode)
		}
		if d := c.Desired(); d != Single && d != Multi {
			t.Fatalf("accepted %v, desired %q", data, d)
		}
		if !c.Definitive && c.Mode != Single {
			t.Fatalf("accepted %v: a non-definitive %s", data, c.Mode)
		}
	})
}
