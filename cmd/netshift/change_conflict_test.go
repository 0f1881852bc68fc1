package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"netshift.io/netshift/api/v1alpha1"
)

// TestChangeAsksAgainAfterAConflict: the operator writes the NetshiftNetwork's
// status while `netshift change` decides; the edit refused for that is
// decided again on the fresh copy, and the change is asked for once.
func TestChangeAsksAgainAfterAConflict(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		spec    int32 // what the spec asks for; 1400 is in force
		writeAt int   // the operator writes the status just before this patch
		patches int   // the patches that go through
		says    string
	}{
		{"at the only edit", 1400, 1, 1, ""},
		// A change of 1350 asked before failed: the spec is put back first,
		// then asks for 1350 as a new edit.
		{"at the edit after the put-back", 1350, 2, 2, "MTU 1350 was asked for and is not in force: the spec is put back to 1400\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cn := &v1alpha1.NetshiftNetwork{
				ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NetshiftNetworkName},
				Spec:       v1alpha1.NetshiftNetworkSpec{MTU: ptr.To(tc.spec)},
				Status:     v1alpha1.NetshiftNetworkStatus{Applied: &v1alpha1.AppliedNetwork{MTU: 1400, VXLANPort: 4789, GenevePort: 6081}},
			}
			calls, patches := 0, 0
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cn).WithStatusSubresource(cn).
				WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if calls++; calls == tc.writeAt {
						var now v1alpha1.NetshiftNetwork
						if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &now); err != nil {
							return err
						}
						now.Status.ObservedGeneration = now.Generation
						if err := c.Status().Update(ctx, &now); err != nil {
							return err
						}
					}
					err := c.Patch(ctx, obj, patch, opts...)
					if err == nil {
						patches++
					}
					return err
				}}).Build()

			var out bytes.Buffer
			r := changeRun{c: c, out: &out, kind: v1alpha1.ChangeMTU, value: 1350}
			if err := r.run(context.Background(), false); err != nil {
				t.Fatalf("netshift change mtu 1350 with the operator writing: %v", err)
			}
			var got v1alpha1.NetshiftNetwork
			if err := c.Get(context.Background(), client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &got); err != nil {
				t.Fatal(err)
			}
			if got.Spec.MTU == nil || *got.Spec.MTU != 1350 || patches != tc.patches || calls != tc.patches+1 {
				t.Errorf("spec.mtu %v after %d patches of %d tried; want 1350 after %d, one refused", got.Spec.MTU, patches, calls, tc.patches)
			}
			if said := strings.TrimSuffix(out.String(), "asked for MTU 1350; follow it with `netshift status -w 1s`\n"); said != tc.says {
				t.Errorf("said %q, want %q before asking", out.String(), tc.says)
			}
		})
	}
}
