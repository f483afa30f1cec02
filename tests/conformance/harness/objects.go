package main

// Objects as the API server stores them.
//
// Every input object goes through what kube-apiserver does to a create request before it
// is stored: decoded into the internal version with the registered defaulters (legacyscheme,
// SetDefaults_*), then rest.BeforeCreate with the kind's registry strategy (PrepareForCreate
// drops disabled fields and, for pods, merges matchLabelKeys into the selectors and resets
// the status; Validate is the create validation; then the ObjectMeta validation and
// Canonicalize), and converted back to its external version. A pod's status (phase,
// nominatedNodeName, startTime, conditions) is then written as a pods/status update would
// write it (rest.BeforeUpdate with pod.StatusStrategy). Admission plugins are not run.
//
// metadata.deletionTimestamp cannot be set by a create; an input object carrying it is
// stored with it (as a delete held by a finalizer would leave it).

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"

	// Registered into legacyscheme: types, conversions and defaulters of each group.
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"

	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/core/namespace"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/replicationcontroller"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/registry/resource/deviceclass"
	"k8s.io/kubernetes/pkg/registry/resource/resourceclaim"
	"k8s.io/kubernetes/pkg/registry/resource/resourceslice"
	"k8s.io/kubernetes/pkg/registry/scheduling/priorityclass"
	"k8s.io/kubernetes/pkg/registry/storage/csidriver"
	"k8s.io/kubernetes/pkg/registry/storage/csinode"
	"k8s.io/kubernetes/pkg/registry/storage/csistoragecapacity"
	"k8s.io/kubernetes/pkg/registry/storage/storageclass"
	"k8s.io/kubernetes/pkg/registry/storage/volumeattachment"
)

// kindInfo is what storing one kind needs: its resource and registry strategy.
type kindInfo struct {
	gvr      schema.GroupVersionResource
	strategy rest.RESTCreateStrategy
	// status, when set, is the strategy of the kind's status subresource: the input's
	// status is written through it after the create (the create resets it).
	status rest.RESTUpdateStrategy
}

// kinds the harness stores, by apiVersion/kind. Volume and DRA kinds are listed for the
// cases of those plugins.
var kinds = map[schema.GroupVersionKind]kindInfo{
	{Version: "v1", Kind: "Namespace"}:                                   {gvr("", "v1", "namespaces"), namespace.Strategy, nil},
	{Version: "v1", Kind: "Node"}:                                        {gvr("", "v1", "nodes"), node.Strategy, nil},
	{Version: "v1", Kind: "Pod"}:                                         {gvr("", "v1", "pods"), pod.Strategy, pod.StatusStrategy},
	{Version: "v1", Kind: "Service"}:                                     {gvr("", "v1", "services"), service.Strategy, nil},
	{Version: "v1", Kind: "ReplicationController"}:                       {gvr("", "v1", "replicationcontrollers"), replicationcontroller.Strategy, nil},
	{Version: "v1", Kind: "PersistentVolume"}:                            {gvr("", "v1", "persistentvolumes"), persistentvolume.Strategy, persistentvolume.StatusStrategy},
	{Version: "v1", Kind: "PersistentVolumeClaim"}:                       {gvr("", "v1", "persistentvolumeclaims"), persistentvolumeclaim.Strategy, persistentvolumeclaim.StatusStrategy},
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"}:                   {gvr("apps", "v1", "replicasets"), replicaset.Strategy, nil},
	{Group: "apps", Version: "v1", Kind: "StatefulSet"}:                  {gvr("apps", "v1", "statefulsets"), statefulset.Strategy, nil},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}:        {gvr("policy", "v1", "poddisruptionbudgets"), poddisruptionbudget.Strategy, poddisruptionbudget.StatusStrategy},
	{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"}:   {gvr("scheduling.k8s.io", "v1", "priorityclasses"), priorityclass.Strategy, nil},
	{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass"}:       {gvr("storage.k8s.io", "v1", "storageclasses"), storageclass.Strategy, nil},
	{Group: "storage.k8s.io", Version: "v1", Kind: "CSINode"}:            {gvr("storage.k8s.io", "v1", "csinodes"), csinode.Strategy, nil},
	{Group: "storage.k8s.io", Version: "v1", Kind: "CSIDriver"}:          {gvr("storage.k8s.io", "v1", "csidrivers"), csidriver.Strategy, nil},
	{Group: "storage.k8s.io", Version: "v1", Kind: "CSIStorageCapacity"}: {gvr("storage.k8s.io", "v1", "csistoragecapacities"), csistoragecapacity.Strategy, nil},
	{Group: "storage.k8s.io", Version: "v1", Kind: "VolumeAttachment"}:   {gvr("storage.k8s.io", "v1", "volumeattachments"), volumeattachment.Strategy, volumeattachment.StatusStrategy},
	{Group: "resource.k8s.io", Version: "v1", Kind: "DeviceClass"}:       {gvr("resource.k8s.io", "v1", "deviceclasses"), deviceclass.Strategy, nil},
	{Group: "resource.k8s.io", Version: "v1", Kind: "ResourceSlice"}:     {gvr("resource.k8s.io", "v1", "resourceslices"), resourceslice.Strategy, nil},
	// ResourceClaims: the strategy's namespace client serves admin-access requests,
	// which cases do not make (nil here); the status update is authorized as the
	// scheduler's (everything allowed: the harness stores what the case says).
	{Group: "resource.k8s.io", Version: "v1", Kind: "ResourceClaim"}: {gvr("resource.k8s.io", "v1", "resourceclaims"), claimStrategy, resourceclaim.NewStatusStrategy(claimStrategy)},
}

var claimStrategy = resourceclaim.NewStrategy(nil, authorizerfactory.NewAlwaysAllowAuthorizer())

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// creationTime is every object's creationTimestamp unless it names one: cases are
// deterministic.
var creationTime = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

// storedObject is one object ready for the fake clientset.
type storedObject struct {
	gvr schema.GroupVersionResource
	obj runtime.Object
}

// store turns one input object (JSON) into the object the API server would store, or
// an error naming the object and what is wrong with it.
func store(raw json.RawMessage, index int) (storedObject, error) {
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return storedObject{}, fmt.Errorf("objects[%d]: %w", index, err)
	}
	name := fmt.Sprintf("objects[%d] (%s %s/%s)", index, head.Kind, head.Metadata.Namespace, head.Metadata.Name)
	gv, err := schema.ParseGroupVersion(head.APIVersion)
	if err != nil {
		return storedObject{}, fmt.Errorf("%s: apiVersion: %w", name, err)
	}
	gvk := gv.WithKind(head.Kind)
	info, ok := kinds[gvk]
	if !ok {
		return storedObject{}, fmt.Errorf("%s: kind %s is not supported by the harness", name, gvk)
	}
	// Decoding into the internal version runs the external version's defaulters.
	internal, _, err := legacyscheme.Codecs.UniversalDecoder().Decode(raw, &gvk, nil)
	if err != nil {
		return storedObject{}, fmt.Errorf("%s: %w", name, err)
	}
	withStatus := internal.DeepCopyObject()
	meta, err := metaOf(internal)
	if err != nil {
		return storedObject{}, fmt.Errorf("%s: %w", name, err)
	}
	deletion := meta.GetDeletionTimestamp()
	meta.SetDeletionTimestamp(nil)
	// What the registry fills in before BeforeCreate (rest.FillObjectMetaSystemFields),
	// deterministic here.
	if meta.GetUID() == "" {
		meta.SetUID(types.UID(fmt.Sprintf("uid-%s-%s-%s", head.Kind, meta.GetNamespace(), meta.GetName())))
	}
	if ts := meta.GetCreationTimestamp(); ts.IsZero() {
		meta.SetCreationTimestamp(creationTime)
	}
	ns := meta.GetNamespace()
	ctx := genericapirequest.WithNamespace(context.Background(), ns)
	// Who writes (the DRA status authorization asks): the scheduler, through the API.
	ctx = genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "system:kube-scheduler"})
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "update", APIGroup: info.gvr.Group, APIVersion: info.gvr.Version,
		Namespace: ns, Resource: info.gvr.Resource, Subresource: "status", Name: meta.GetName(),
	})
	if err := rest.BeforeCreate(info.strategy, ctx, internal); err != nil {
		return storedObject{}, fmt.Errorf("%s: %w", name, err)
	}
	if info.status != nil && hasStatus(raw) {
		// The status update of the stored object (which has a resourceVersion by then).
		meta.SetResourceVersion("1")
		updated := internal.DeepCopyObject()
		if err := copyStatus(withStatus, updated); err != nil {
			return storedObject{}, fmt.Errorf("%s: %w", name, err)
		}
		if err := rest.BeforeUpdate(info.status, ctx, updated, internal); err != nil {
			return storedObject{}, fmt.Errorf("%s: status: %w", name, err)
		}
		if p, ok := updated.(*api.Pod); ok && p.Status.Phase == "" {
			p.Status.Phase = internal.(*api.Pod).Status.Phase // Pending, from the create
		}
		internal = updated
		m, _ := metaOf(internal)
		m.SetResourceVersion("")
	}
	if deletion != nil {
		m, _ := metaOf(internal)
		m.SetDeletionTimestamp(deletion)
		grace := int64(30)
		m.SetDeletionGracePeriodSeconds(&grace)
	}
	external, err := legacyscheme.Scheme.ConvertToVersion(internal, gv)
	if err != nil {
		return storedObject{}, fmt.Errorf("%s: converting back to %s: %w", name, gv, err)
	}
	external.GetObjectKind().SetGroupVersionKind(gvk)
	return storedObject{gvr: info.gvr, obj: external}, nil
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, fmt.Errorf("%T has no metadata", obj)
	}
	return m.GetObjectMeta(), nil
}

// copyStatus sets dst's Status field to src's (both the same internal type).
func copyStatus(src, dst runtime.Object) error {
	from := reflect.ValueOf(src).Elem().FieldByName("Status")
	to := reflect.ValueOf(dst).Elem().FieldByName("Status")
	if !from.IsValid() || !to.IsValid() || !to.CanSet() {
		return fmt.Errorf("%T has no status", dst)
	}
	to.Set(from)
	return nil
}

// hasStatus reports whether the input object sets a status.
func hasStatus(raw json.RawMessage) bool {
	var o struct {
		Status json.RawMessage `json:"status"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return false
	}
	return len(o.Status) > 0 && string(o.Status) != "null" && string(o.Status) != "{}"
}
