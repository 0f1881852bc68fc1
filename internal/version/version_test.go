package version

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The image config/default installs is the one this version builds: a
// release that bumps one and not the other would install another version's
// agents beside this operator.
func TestTheInstalledImageIsThisVersion(t *testing.T) {
	data, err := os.ReadFile("../../config/default/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []struct{ Name, NewName, NewTag string } `json:"images"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	if len(k.Images) != 1 || k.Images[0].Name != "netshift" || k.Images[0].NewTag != Version {
		t.Fatalf("config/default images = %+v, want netshift tagged %s", k.Images, Version)
	}
	if !strings.HasPrefix(Get().String(), "netshift "+Version+" ") {
		t.Fatalf("version line %q does not start with the version", Get().String())
	}
}
