package main

// Resource versions, as the API server gives them.
//
// The fake clientset's object tracker keeps a version counter of its own and leaves
// every object's metadata.resourceVersion as it was given: empty. Parts of the scheduler
// read it: the assume caches (DynamicResources' claims, VolumeBinding's PVs and PVCs)
// parse it to order an informer's update against an object the scheduler assumed, and
// refuse an object whose version does not parse (so an update of a claim never reaches
// DynamicResources' view, and PreBind's AssumeClaimAfterAPICall fails); the pod event
// handlers skip an update whose version did not change. versionedTracker stamps every
// object it stores with the next version of one cluster-wide counter, as etcd's
// revision does.

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
)

// versionedTracker is an object tracker that sets resourceVersion on what it stores.
type versionedTracker struct {
	clienttesting.ObjectTracker
	mu       sync.Mutex
	revision int64
}

func (t *versionedTracker) stamp(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	t.mu.Lock()
	t.revision++
	m.SetResourceVersion(strconv.FormatInt(t.revision, 10))
	t.mu.Unlock()
}

func (t *versionedTracker) Add(obj runtime.Object) error {
	t.stamp(obj)
	return t.ObjectTracker.Add(obj)
}

func (t *versionedTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	t.stamp(obj)
	return t.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (t *versionedTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	t.stamp(obj)
	return t.ObjectTracker.Update(gvr, obj, ns, opts...)
}

func (t *versionedTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	t.stamp(obj)
	return t.ObjectTracker.Patch(gvr, obj, ns, opts...)
}
