package main

import (
	"bytes"
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"netshift.io/netshift/api/v1alpha1"
)

// TestChangeAsksAgainAfterAConflict: the operator writes the NetshiftNetwork
// while `netshift change` decides; the edit refused for that is made again on
// the fresh copy, and the change is asked for once.
func TestChangeAsksAgainAfterAConflict(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cn := &v1alpha1.NetshiftNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NetshiftNetworkName},
		Spec:       v1alpha1.NetshiftNetworkSpec{MTU: ptr.To[int32](1400)},
		Status:     v1alpha1.NetshiftNetworkStatus{Applied: &v1alpha1.AppliedNetwork{MTU: 1400}},
	}
	conflicts, patches := 1, 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cn).WithStatusSubresource(cn).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if conflicts > 0 {
				conflicts--
				return apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "netshiftnetworks"}, obj.GetName(), nil)
			}
			patches++
			return c.Patch(ctx, obj, patch, opts...)
		}}).Build()

	var out bytes.Buffer
	r := changeRun{c: c, out: &out, kind: v1alpha1.ChangeMTU, value: 1350}
	if err := r.run(context.Background(), false); err != nil {
		t.Fatalf("netshift change mtu 1350 after a conflict: %v", err)
	}
	var got v1alpha1.NetshiftNetwork
	if err := c.Get(context.Background(), client.ObjectKey{Name: v1alpha1.NetshiftNetworkName}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.MTU == nil || *got.Spec.MTU != 1350 || patches != 1 {
		t.Fatalf("spec.mtu %v after %d patches, output %q; want 1350 asked for by one patch", got.Spec.MTU, patches, out.String())
	}
}
