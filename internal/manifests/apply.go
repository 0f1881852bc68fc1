// Package manifests applies netshift's YAML manifests (config/) to a cluster
// with server-side apply, without kubectl or kustomize, so the demo, the lab
// and the tests install exactly what users install.
package manifests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the field manager netshift applies manifests as.
const FieldOwner = client.FieldOwner("netshift-install")

// ReadFS parses every YAML document of the *.yaml files of fsys (any
// kustomization.yaml excepted), in path order.
func ReadFS(fsys fs.FS) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") || filepath.Base(path) == "kustomization.yaml" {
			return err
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		more, err := Decode(data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		objs = append(objs, more...)
		return nil
	})
	return objs, err
}

// Decode parses the YAML documents of data; a List is flattened to its items.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		if strings.HasSuffix(u.GetKind(), "List") {
			items, err := u.ToList()
			if err != nil {
				return nil, err
			}
			for i := range items.Items {
				objs = append(objs, &items.Items[i])
			}
			continue
		}
		objs = append(objs, &u)
	}
}

// installFirst are the kinds others depend on, applied first in this order.
var installFirst = []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "Role"}

func installRank(kind string) int {
	for i, k := range installFirst {
		if k == kind {
			return i
		}
	}
	return len(installFirst)
}

// Apply server-side-applies the objects, namespaces and CRDs first, retrying
// for a while the ones whose kind the API server does not serve yet (a CRD
// just created).
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	ordered := slices.Clone(objs)
	slices.SortStableFunc(ordered, func(a, b *unstructured.Unstructured) int {
		return installRank(a.GetKind()) - installRank(b.GetKind())
	})
	deadline := time.Now().Add(30 * time.Second)
	for _, o := range ordered {
		for {
			obj := o.DeepCopy()
			err := c.Patch(ctx, obj, client.Apply, FieldOwner, client.ForceOwnership) //nolint:staticcheck // unstructured apply
			if err == nil {
				break
			}
			if meta.IsNoMatchError(err) && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			return fmt.Errorf("apply %s %s: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}
