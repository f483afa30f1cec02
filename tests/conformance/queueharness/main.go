// Command ksched-queue-conformance runs kube-scheduler v1.36.5's own scheduling queue on
// cases of cluster events and reports, after every step, which sub-queue holds the case's
// pod. It is the upstream side of ksched's queueing-hint differential test
// (tests/conformance/queue.py).
//
// The queue is the real one: scheduler.New on an empty fake clientset builds the default
// profile's frameworks with their real plugins, the queueing hint map from the plugins'
// own EventsToRegister (buildQueueingHintMap, including its extra Node/UpdateNodeTaint
// registrations), the PreEnqueue plugins, and the PriorityQueue with a fake clock the
// case advances. The informers are not started: events are delivered to the queue by
// deliver(), which makes exactly the queue calls of upstream's event handlers
// (pkg/scheduler/eventhandlers.go with SchedulerQueueingHints on: addNodeToCache,
// updateNodeInCache, deleteNodeFromCache, addPod, updatePod, deletePod and the
// buildEvtResHandler handlers of the other kinds). The cache work of those handlers is
// left out: no hint of the plugins compared here reads the scheduler's cache.
//
// Input: one JSON case per line; output: one JSON result per line, in order.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"
)

// Step is one thing that happens to the queue.
type Step struct {
	// Op: "add" (the case's pod is created), "pop" (PopSpecificPod of the case's pod),
	// "fail" (the popped pod's attempt failed, rejected by Unschedulable/Pending
	// plugins), "tick" (the clock advances Seconds), "event" (a cluster event).
	Op            string   `json:"op"`
	Unschedulable []string `json:"unschedulable,omitempty"`
	Pending       []string `json:"pending,omitempty"`
	Seconds       float64  `json:"seconds,omitempty"`
	// Kind is "Pod", "Node", "PersistentVolumeClaim", "PersistentVolume",
	// "StorageClass" or "CSINode"; Action "add", "update" or "delete".
	Kind   string          `json:"kind,omitempty"`
	Action string          `json:"action,omitempty"`
	Old    json.RawMessage `json:"old,omitempty"`
	New    json.RawMessage `json:"new,omitempty"`
}

// Case is one input line.
type Case struct {
	ID  string          `json:"id"`
	Pod json.RawMessage `json:"pod"`
	// Config is a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1, JSON);
	// empty: the defaults.
	Config json.RawMessage `json:"config,omitempty"`
	Steps  []Step          `json:"steps"`
}

// Result is one output line: Where[i] is where the case's pod is after Steps[i]
// ("active", "backoff", "unschedulable", "gated", "in-flight" or "absent").
type Result struct {
	ID    string   `json:"id"`
	Error string   `json:"error,omitempty"`
	Where []string `json:"where"`
}

// start is the fake clock's origin: a whole second, as ksched's side starts at 0.0.
var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	verbosity := flag.Int("v", -1, "log at this klog verbosity on stderr (default: no logs)")
	dumpEvents := flag.Bool("events", false, "print the default profile's EventsToRegister per plugin as JSON and exit")
	flag.Parse()
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	if *verbosity >= 0 {
		_ = klogFlags.Set("v", fmt.Sprint(*verbosity))
	} else {
		klog.SetOutput(io.Discard)
		_ = klogFlags.Set("logtostderr", "false")
		_ = klogFlags.Set("stderrthreshold", "FATAL")
	}
	// Every feature gate at its v1.36.5 default (SchedulerAsyncPreemption on, as ksched's
	// DefaultPreemption: its PreEnqueue and Pod/Delete registration).
	if *dumpEvents {
		if err := printEvents(); err != nil {
			fmt.Fprintln(os.Stderr, "ksched-queue-conformance:", err)
			os.Exit(2)
		}
		return
	}
	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for {
		var c Case
		if err := dec.Decode(&c); err == io.EOF {
			break
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "ksched-queue-conformance: reading a case:", err)
			os.Exit(2)
		}
		if err := enc.Encode(runCase(c)); err != nil {
			fmt.Fprintln(os.Stderr, "ksched-queue-conformance: writing a result:", err)
			os.Exit(2)
		}
		if err := out.Flush(); err != nil {
			fmt.Fprintln(os.Stderr, "ksched-queue-conformance:", err)
			os.Exit(2)
		}
	}
}

type run struct {
	ctx       context.Context
	informers informers.SharedInformerFactory
	logger    klog.Logger
	clock     *testingclock.FakeClock
	sched     *scheduler.Scheduler
	q         internalqueue.SchedulingQueue
	pod       *v1.Pod
	popped    *framework.QueuedPodInfo
	// gone: the case's pod was deleted.
	gone bool
}

func runCase(c Case) (res Result) {
	res.ID = c.ID
	defer func() {
		if r := recover(); r != nil {
			res = Result{ID: c.ID, Error: fmt.Sprintf("panic: %v", r)}
		}
	}()
	var pod v1.Pod
	if err := json.Unmarshal(c.Pod, &pod); err != nil {
		res.Error = "pod: " + err.Error()
		return res
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	defer cancel()
	client := fake.NewClientset()
	informerFactory := scheduler.NewInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(start)
	opts := []scheduler.Option{scheduler.WithClock(clk)}
	if len(c.Config) > 0 {
		cfg, err := loadConfig(c.Config)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		opts = append(opts, scheduler.WithComponentConfigVersion(cfg.TypeMeta.APIVersion),
			scheduler.WithProfiles(cfg.Profiles...))
	}
	sched, err := scheduler.New(ctx, client, informerFactory, nil,
		func(string) events.EventRecorderLogger { return events.NewFakeRecorder(100) },
		opts...,
	)
	if err != nil {
		res.Error = "scheduler.New: " + err.Error()
		return res
	}
	r := &run{ctx: ctx, informers: informerFactory, logger: klog.FromContext(ctx), clock: clk, sched: sched, q: sched.SchedulingQueue, pod: &pod}
	for i, s := range c.Steps {
		if err := r.step(s); err != nil {
			res.Error = fmt.Sprintf("step %d: %v", i, err)
			return res
		}
		res.Where = append(res.Where, r.where())
	}
	return res
}

func (r *run) step(s Step) error {
	switch s.Op {
	case "add":
		r.deliverPod("add", nil, r.pod)
	case "pop":
		if info := r.q.PopSpecificPod(r.logger, r.pod); info != nil {
			r.popped = info
		}
	case "fail":
		if r.popped == nil || !r.inFlight() {
			return nil
		}
		info := r.popped
		r.popped = nil
		if r.gone || assigned(r.pod) {
			// handleSchedulingFailure: a pod deleted or bound meanwhile is not requeued.
			r.q.Done(info.Pod.UID)
			return nil
		}
		info.UnschedulablePlugins = sets.New(s.Unschedulable...)
		info.PendingPlugins = sets.New(s.Pending...)
		// schedule_one.go handleSchedulingFailure: the queue gets the informer's latest
		// version of the pod.
		info.PodInfo, _ = framework.NewPodInfo(r.pod)
		if err := r.q.AddUnschedulableIfNotPresent(r.logger, info, r.q.SchedulingCycle()); err != nil {
			return nil // already queued again (an update re-added it): as upstream, ignored
		}
	case "tick":
		r.clock.Step(time.Duration(s.Seconds * float64(time.Second)))
	case "event":
		return r.deliver(s)
	default:
		return fmt.Errorf("unknown op %q", s.Op)
	}
	return nil
}

func (r *run) inFlight() bool {
	for _, p := range r.q.InFlightPods() {
		if p.UID == r.pod.UID {
			return true
		}
	}
	return false
}

func (r *run) where() string {
	has := func(pods []*v1.Pod) bool {
		for _, p := range pods {
			if p.UID == r.pod.UID {
				return true
			}
		}
		return false
	}
	switch {
	case has(r.q.PodsInActiveQ()):
		return "active"
	case has(r.q.PodsInBackoffQ()):
		return "backoff"
	case has(r.q.UnschedulablePods()):
		if info, ok := r.q.GetPod(r.pod.Name, r.pod.Namespace); ok && info.Gated() {
			return "gated"
		}
		return "unschedulable"
	case r.inFlight():
		return "in-flight"
	}
	return "absent"
}

func decode[T any](raw json.RawMessage) (*T, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

func (r *run) deliver(s Step) error {
	switch s.Kind {
	case "Pod":
		old, err := decode[v1.Pod](s.Old)
		if err != nil {
			return err
		}
		pod, err := decode[v1.Pod](s.New)
		if err != nil {
			return err
		}
		// The case's pod: later steps use its latest version.
		if pod != nil && pod.UID == r.pod.UID {
			r.pod = pod
		}
		if s.Action == "delete" && old != nil && old.UID == r.pod.UID {
			r.gone = true
		}
		r.deliverPod(s.Action, old, pod)
		return nil
	case "Node":
		old, err := decode[v1.Node](s.Old)
		if err != nil {
			return err
		}
		node, err := decode[v1.Node](s.New)
		if err != nil {
			return err
		}
		switch s.Action {
		case "add": // addNodeToCache
			r.q.MoveAllToActiveOrBackoffQueue(r.logger, fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}, nil, node, nil)
		case "update": // updateNodeInCache
			for _, evt := range framework.NodeSchedulingPropertiesChange(node, old) {
				r.q.MoveAllToActiveOrBackoffQueue(r.logger, evt, old, node, nil)
			}
		case "delete": // deleteNodeFromCache
			r.q.MoveAllToActiveOrBackoffQueue(r.logger, fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Delete}, old, nil, nil)
		}
		return nil
	}
	var oldObj, newObj interface{}
	var err error
	var indexer cache.Indexer
	switch s.Kind {
	case "PersistentVolumeClaim":
		oldObj, newObj, err = decodePair[v1.PersistentVolumeClaim](s)
		indexer = r.informers.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	case "PersistentVolume":
		oldObj, newObj, err = decodePair[v1.PersistentVolume](s)
		indexer = r.informers.Core().V1().PersistentVolumes().Informer().GetIndexer()
	case "StorageClass":
		oldObj, newObj, err = decodePair[storagev1.StorageClass](s)
		indexer = r.informers.Storage().V1().StorageClasses().Informer().GetIndexer()
	case "CSINode":
		oldObj, newObj, err = decodePair[storagev1.CSINode](s)
		indexer = r.informers.Storage().V1().CSINodes().Informer().GetIndexer()
	case "CSIDriver":
		oldObj, newObj, err = decodePair[storagev1.CSIDriver](s)
		indexer = r.informers.Storage().V1().CSIDrivers().Informer().GetIndexer()
	case "Service":
		// Read by PodTopologySpread's default selector; no queue event (upstream
		// registers no handler for Services).
		oldObj, newObj, err = decodePair[v1.Service](s)
		if err != nil {
			return err
		}
		indexer = r.informers.Core().V1().Services().Informer().GetIndexer()
		if s.Action == "delete" {
			return indexer.Delete(oldObj)
		}
		return indexer.Update(newObj)
	default:
		return fmt.Errorf("unknown kind %q", s.Kind)
	}
	if err != nil {
		return err
	}
	// The informer's store holds the object before its handlers run, as the plugins'
	// listers read it.
	switch s.Action {
	case "add", "update":
		err = indexer.Update(newObj)
	case "delete":
		err = indexer.Delete(oldObj)
	}
	if err != nil {
		return err
	}
	// buildEvtResHandler: a handler exists only for the actions some plugin registered.
	resource := map[string]fwk.EventResource{
		"PersistentVolumeClaim": fwk.PersistentVolumeClaim,
		"PersistentVolume":      fwk.PersistentVolume,
		"StorageClass":          fwk.StorageClass,
		"CSINode":               fwk.CSINode,
		"CSIDriver":             fwk.CSIDriver,
	}[s.Kind]
	registered := r.registeredActions(resource)
	switch s.Action {
	case "add":
		if registered&fwk.Add != 0 {
			r.q.MoveAllToActiveOrBackoffQueue(r.logger, fwk.ClusterEvent{Resource: resource, ActionType: fwk.Add}, nil, newObj, nil)
		}
	case "update":
		if registered&fwk.Update != 0 {
			r.q.MoveAllToActiveOrBackoffQueue(r.logger, fwk.ClusterEvent{Resource: resource, ActionType: fwk.Update}, oldObj, newObj, nil)
		}
	case "delete":
		if registered&fwk.Delete != 0 {
			r.q.MoveAllToActiveOrBackoffQueue(r.logger, fwk.ClusterEvent{Resource: resource, ActionType: fwk.Delete}, oldObj, nil, nil)
		}
	}
	return nil
}

// registeredActions is the union of the actions the profiles' plugins register for a
// resource (scheduler.go unionedGVKs, the gvkMap addAllEventHandlers gets).
func (r *run) registeredActions(resource fwk.EventResource) fwk.ActionType {
	var at fwk.ActionType
	for _, prof := range r.sched.Profiles {
		for _, ext := range prof.EnqueueExtensions() {
			evts, _ := ext.EventsToRegister(r.ctx)
			for _, e := range evts {
				if e.Event.Resource == resource {
					at |= e.Event.ActionType
				}
			}
		}
	}
	return at
}

func decodePair[T any](s Step) (interface{}, interface{}, error) {
	old, err := decode[T](s.Old)
	if err != nil {
		return nil, nil, err
	}
	obj, err := decode[T](s.New)
	if err != nil {
		return nil, nil, err
	}
	var o, n interface{}
	if old != nil {
		o = old
	}
	if obj != nil {
		n = obj
	}
	return o, n, nil
}

func (r *run) responsible(pod *v1.Pod) bool {
	return r.sched.Profiles.HandlesSchedulerName(pod.Spec.SchedulerName)
}

func assigned(pod *v1.Pod) bool { return pod.Spec.NodeName != "" }

func lePriority(priority int32) internalqueue.PreEnqueueCheck {
	return func(pod *v1.Pod) bool { return corev1helpers.PodPriority(pod) <= priority }
}

var eventAssignedPodDelete = framework.EventAssignedPodDelete

// deliverPod makes the queue calls of eventhandlers.go addPod / updatePod / deletePod.
func (r *run) deliverPod(action string, old, pod *v1.Pod) {
	q, logger := r.q, r.logger
	switch action {
	case "add":
		if assigned(pod) { // addAssignedPodToCache
			q.MoveAllToActiveOrBackoffQueue(logger, framework.EventAssignedPodAdd, nil, pod, nil)
		} else if r.responsible(pod) { // addPodToSchedulingQueue
			q.Add(r.ctx, pod)
			if utilfeature.DefaultFeatureGate.Enabled(features.GangScheduling) {
				q.MoveAllToActiveOrBackoffQueue(logger, framework.EventUnscheduledPodAdd, nil, pod, nil)
			}
		}
	case "update":
		switch {
		case assigned(old): // updateAssignedPodInCache
			for _, evt := range framework.PodSchedulingPropertiesChange(pod, old) {
				q.MoveAllToActiveOrBackoffQueue(logger, evt, old, pod, nil)
			}
		case assigned(pod):
			q.MoveAllToActiveOrBackoffQueue(logger, framework.EventAssignedPodAdd, nil, pod, nil)
			if r.responsible(old) { // deletePodFromSchedulingQueue(oldPod, inBinding=true)
				q.Delete(old)
			}
		case r.responsible(old): // updatePodInSchedulingQueue
			if old.ResourceVersion == pod.ResourceVersion {
				return
			}
			q.Update(r.ctx, old, pod)
			if len(old.Status.NominatedNodeName) > 0 && old.Status.NominatedNodeName != pod.Status.NominatedNodeName {
				q.MoveAllToActiveOrBackoffQueue(logger, eventAssignedPodDelete, old, nil, lePriority(corev1helpers.PodPriority(old)))
			}
		}
	case "delete":
		if assigned(old) { // deleteAssignedPodFromCache
			q.MoveAllToActiveOrBackoffQueue(logger, eventAssignedPodDelete, old, nil, nil)
		} else if r.responsible(old) { // deletePodFromSchedulingQueue(pod, false)
			q.Delete(old)
			if old.Status.NominatedNodeName != "" {
				q.MoveAllToActiveOrBackoffQueue(logger, eventAssignedPodDelete, old, nil, lePriority(corev1helpers.PodPriority(old)))
			}
		}
	}
}

// Registration is one entry of a plugin's EventsToRegister.
type Registration struct {
	Plugin   string `json:"plugin"`
	Resource string `json:"resource"`
	Action   int64  `json:"action"`
	Hint     bool   `json:"hint"`
}

// printEvents writes every EventsToRegister entry of the default profile's plugins.
func printEvents() error {
	ctx := klog.NewContext(context.Background(), klog.Background())
	client := fake.NewClientset()
	sched, err := scheduler.New(ctx, client, scheduler.NewInformerFactory(client, 0), nil,
		func(string) events.EventRecorderLogger { return events.NewFakeRecorder(100) })
	if err != nil {
		return err
	}
	var out []Registration
	for _, prof := range sched.Profiles {
		for _, ext := range prof.EnqueueExtensions() {
			evts, err := ext.EventsToRegister(ctx)
			if err != nil {
				return err
			}
			for _, e := range evts {
				out = append(out, Registration{ext.Name(), string(e.Event.Resource), int64(e.Event.ActionType), e.QueueingHintFn != nil})
			}
		}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// loadConfig decodes, defaults and validates a KubeSchedulerConfiguration as
// kube-scheduler's --config (as the scheduling harness does).
func loadConfig(data []byte) (*schedulerapi.KubeSchedulerConfiguration, error) {
	obj, gvk, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg, ok := obj.(*schedulerapi.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("config: got %s, want KubeSchedulerConfiguration", gvk)
	}
	cfg.TypeMeta.APIVersion = gvk.GroupVersion().String()
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}
