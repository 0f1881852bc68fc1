package operator

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"netshift.io/netshift/internal/neutron"
	"netshift.io/netshift/internal/portpool"
	poolmanager "netshift.io/netshift/internal/portpool/manager"
)

// PortPoolOptions configure the Neutron port pools.
type PortPoolOptions struct {
	Neutron  neutron.Options
	Settings portpool.Settings
	// Deferred sends Neutron bookkeeping in the background, coalesced.
	Deferred bool
	// ClusterID goes into the tag of every port; empty: the kube-system namespace's UID.
	ClusterID string
	// API is the address of the pool manager's API: a unix socket path, or tcp:HOST:PORT
	// (TLS with APITLS, and a bearer token allowed by RBAC on portpools.netshift.io).
	API    string
	APITLS poolmanager.TLSFiles
	// Defaults fill what a namespace's annotations do not say.
	Defaults poolmanager.Defaults
}

// setupPortPools adds the pool manager, its API and the pod controller to the
// operator; all three run on the leader only.
func setupPortPools(ctx context.Context, mgr ctrl.Manager, o PortPoolOptions) error {
	if err := o.Settings.Validate(); err != nil {
		return fmt.Errorf("port pool settings: %w", err)
	}
	if o.ClusterID == "" {
		var ns corev1.Namespace
		if err := mgr.GetAPIReader().Get(ctx, client.ObjectKey{Name: "kube-system"}, &ns); err != nil {
			return fmt.Errorf("port pools: the cluster ID defaults to the kube-system namespace's UID: %w (or give --cluster-id)", err)
		}
		o.ClusterID = string(ns.UID)
	}
	nc, err := neutron.Connect(ctx, o.Neutron)
	if err != nil {
		return err
	}
	pm, err := poolmanager.New(nc, mgr.GetClient(), poolmanager.Options{Settings: o.Settings, ClusterID: o.ClusterID, Deferred: o.Deferred,
		Log: ctrl.Log.WithName("portpool"), Reader: mgr.GetAPIReader()})
	if err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(pm.Start)); err != nil {
		return err
	}
	if o.API != "" && o.API != "0" {
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			l, err := poolmanager.Listen(o.API, o.APITLS)
			if err != nil {
				return err
			}
			var auth poolmanager.Authorizer
			if strings.HasPrefix(o.API, "tcp:") {
				auth = poolmanager.KubeAuthorizer{Client: mgr.GetClient()}
			}
			return pm.Serve(ctx, l, auth)
		})); err != nil {
			return err
		}
	}
	pc := &poolmanager.PodController{Client: mgr.GetClient(), Manager: pm, Defaults: o.Defaults, Recorder: mgr.GetEventRecorder("netshift-portpool")}
	if err := pc.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the port pool controller: %w", err)
	}
	return nil
}
