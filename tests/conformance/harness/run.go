package main

// One case: upstream's scheduler, built as kube-scheduler builds it, runs one
// scheduling cycle for the case's pod.
//
// The configuration is decoded, defaulted and validated as kube-scheduler's --config
// (the scheduler config scheme's UniversalDecoder, then ValidateKubeSchedulerConfiguration)
// and handed to scheduler.New with the options cmd/kube-scheduler passes
// (profiles, percentageOfNodesToScore, backoffs, parallelism, extenders). The cluster is
// a fake clientset holding the stored objects; the scheduler's own informer factory, event
// handlers, cache and queue fill themselves from it, as from an API server (lists come
// sorted by namespace and name, as etcd serves them). Once every node and bound pod is in
// the cache and every pending pod of the scheduler's profiles in the queue, the case's pod
// is taken out of the queue with the queue's own PopSpecificPod, as the scheduler's
// NextPod, and one real ScheduleOne runs: PreFilter, Filter with nominated pods,
// PreScore, Score, NormalizeScore and weights, selectHost, or on failure PostFilter
// (DefaultPreemption), the FailedScheduling event and the PodScheduled condition.
// Bindings succeed (the fake's pods/binding is answered OK); a binding cycle whose
// VolumeBinding PreBind waits for the PV controller, or whose DynamicResources PreBind
// waits for the devices' binding conditions, is reported pending and cancelled.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"sigs.k8s.io/yaml"
)

// Case is one input line.
type Case struct {
	ID string `json:"id"`
	// Config is a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), JSON or YAML.
	Config json.RawMessage `json:"config"`
	// Objects are API objects in the order they are created.
	Objects []json.RawMessage `json:"objects"`
	// Pod is "namespace/name" of the pending pod to schedule.
	Pod string `json:"pod"`
	// Echo asks for the stored objects in the result.
	Echo bool `json:"echo"`
	// FeatureGates are set for this case alone (see caseGates).
	FeatureGates map[string]bool `json:"featureGates"`
}

// Result is one output line.
type Result struct {
	ID string `json:"id"`
	// Error: the case could not run (invalid object or configuration, timeout).
	Error string `json:"error,omitempty"`
	// UpstreamPanic: a goroutine of the scheduler panicked during the case (the
	// message); kube-scheduler would have crashed, so the rest of the report is moot.
	UpstreamPanic string `json:"upstreamPanic,omitempty"`
	// Objects are the stored objects (with Echo), in input order.
	Objects []json.RawMessage `json:"objects,omitempty"`
	Profile string            `json:"profile"`

	PreFilter *PreFilterReport `json:"preFilter"`
	// Filters is every node's Filter verdict (nil: it passed) for the nodes the cycle
	// examined; Examined lists them in the order they were examined.
	Filters  map[string]*Status `json:"filters"`
	Examined []string           `json:"examined"`
	Scores   []NodeScores       `json:"scores"`
	// Chosen is the node the cycle reserved (nil: none fits).
	Chosen         *string `json:"chosen"`
	EvaluatedNodes int     `json:"evaluatedNodes"`
	FeasibleNodes  int     `json:"feasibleNodes"`
	// Diagnosis is the FitError's (nil when the algorithm found a node or failed
	// otherwise), FitError its Error() text.
	Diagnosis  *DiagnosisReport  `json:"diagnosis"`
	FitError   string            `json:"fitError"`
	PostFilter *PostFilterReport `json:"postFilter"`
	Failure    *FailureReport    `json:"failure"`
	// Events are the cycle's events, then the binding cycle's Scheduled event (or its
	// FailedScheduling event when a PreBind or the Bind failed).
	Events []EventReport `json:"events"`
	// Condition is the pod's PodScheduled condition (times that are set read
	// 2026-01-01T00:00:00Z) and NominatedNodeName its status.nominatedNodeName after
	// the cycle, as written to the API.
	Condition         *v1.PodCondition `json:"condition"`
	NominatedNodeName string           `json:"nominatedNodeName"`
	// Deleted are the pods the cycle's preemption deleted (namespace/name, sorted).
	Deleted []string `json:"deleted"`
	// BindingPending: the binding cycle was left waiting in a PreBind for what no
	// component of the harness does: VolumeBinding's for the PV controller, or
	// DynamicResources' for a driver to set the devices' binding conditions.
	BindingPending bool `json:"bindingPending"`
	// PluginEvaluations is what the cycle added to scheduler_plugin_evaluation_total
	// for the pod's profile: "ExtensionPoint/Plugin" → count (counts that did not move
	// are left out).
	PluginEvaluations map[string]float64 `json:"pluginEvaluations"`
}

// generatedSuffix completes a generateName (the API server's is five random characters).
const generatedSuffix = "x7k2p"

// caseTimeout bounds one case (a case waiting longer is reported as an error).
const caseTimeout = 30 * time.Second

func loadConfig(data []byte) (*schedulerapi.KubeSchedulerConfiguration, error) {
	if len(data) == 0 || string(data) == "null" {
		data = []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
	}
	if j, err := yaml.YAMLToJSON(data); err == nil {
		data = j
	}
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

func runCase(c Case) (res Result) {
	res.ID = c.ID
	casePanics.reset()
	defer func() {
		if r := recover(); r != nil {
			res = Result{ID: c.ID, Error: fmt.Sprintf("panic: %v", r)}
		}
		if p := casePanics.first(); p != "" {
			res = Result{ID: c.ID, UpstreamPanic: p, Objects: res.Objects}
		}
	}()
	if err := setFeatureGates(c.FeatureGates); err != nil {
		res.Error = err.Error()
		return res
	}
	cfg, err := loadConfig(c.Config)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	stored := make([]storedObject, 0, len(c.Objects))
	for i, raw := range c.Objects {
		o, err := store(raw, i)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		stored = append(stored, o)
	}
	ctx, cancel := context.WithTimeout(klog.NewContext(context.Background(), klog.Background()), caseTimeout)
	defer cancel()
	if err := schedule(ctx, cfg, stored, c.Pod, &res); err != nil {
		res.Error = err.Error()
	}
	if c.Echo {
		for _, o := range stored {
			b, err := json.Marshal(o.obj)
			if err != nil {
				res.Error = err.Error()
				return res
			}
			res.Objects = append(res.Objects, b)
		}
	}
	return res
}

func schedule(ctx context.Context, cfg *schedulerapi.KubeSchedulerConfiguration, stored []storedObject, podKey string, res *Result) error {
	client := fake.NewClientset()
	// Every write goes through a tracker that versions what it stores (versions.go);
	// this reactor is prepended first, so the ones below run before it.
	versioned := &versionedTracker{ObjectTracker: client.Tracker()}
	client.PrependReactor("*", "*", clienttesting.ObjectReaction(versioned))
	for _, o := range stored {
		// A copy: the stored object is echoed as it was stored, without a version.
		if err := versioned.Add(o.obj.DeepCopyObject()); err != nil {
			return fmt.Errorf("adding %s to the fake clientset: %w", o.gvr.Resource, err)
		}
	}
	// pods/binding: the fake tracker has no binding subresource; the API server's
	// answer is "created" (the scheduler's cache keeps the assumed pod either way).
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "binding" {
			return true, nil, nil
		}
		return false, nil, nil
	})
	// VolumeBinding's PreBind writes PVs and PVCs (the only writes of them by the
	// scheduler) and then waits for the PV controller to bind them, which a fake
	// clientset does not run: once such a write is seen, the binding cycle is left
	// pending (reported as bindingPending, no Scheduled event) and cancelled.
	bindingPending := make(chan struct{})
	var pendingOnce sync.Once
	markPending := func() { pendingOnce.Do(func() { close(bindingPending) }) }
	for _, resource := range []string{"persistentvolumes", "persistentvolumeclaims"} {
		client.PrependReactor("update", resource, func(action clienttesting.Action) (bool, runtime.Object, error) {
			markPending()
			return false, nil, nil
		})
	}
	// generateName: the fake tracker stores what it is given, an empty name included;
	// the API server generates one (DynamicResources' PreBind creates the claim of a
	// pod's extended resources so). Here the suffix is fixed: cases are deterministic.
	client.PrependReactor("create", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(clienttesting.CreateAction)
		if !ok {
			return false, nil, nil
		}
		if m, err := metaOf(create.GetObject()); err == nil && m.GetName() == "" && m.GetGenerateName() != "" {
			m.SetName(m.GetGenerateName() + generatedSuffix)
		}
		return false, nil, nil
	})
	var deletedMu sync.Mutex
	var deleted []string
	client.PrependReactor("delete", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		d := action.(clienttesting.DeleteAction)
		deletedMu.Lock()
		deleted = append(deleted, d.GetNamespace()+"/"+d.GetName())
		deletedMu.Unlock()
		return false, nil, nil
	})

	// DynamicResources' PreBind waits for the allocated devices' binding conditions
	// (DRADeviceBindingConditions), which no driver of the harness sets: its
	// BindingConditionsPending event leaves the binding cycle pending too.
	obs := &observation{bindingWait: markPending}
	informerFactory := scheduler.NewInformerFactory(client, 0)
	sched, err := scheduler.New(ctx, client, informerFactory, nil,
		func(string) events.EventRecorderLogger { return &recorder{obs: obs} },
		scheduler.WithComponentConfigVersion(cfg.TypeMeta.APIVersion),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithExtenders(cfg.Extenders...),
		scheduler.WithParallelism(cfg.Parallelism),
	)
	if err != nil {
		return fmt.Errorf("scheduler.New: %w", err)
	}
	observe(sched, obs)
	// Informers for every stored kind, so the wait below can see each object arrive.
	for _, o := range stored {
		if _, err := informerFactory.ForResource(o.gvr); err != nil {
			return fmt.Errorf("no informer for %s: %w", o.gvr, err)
		}
	}
	informerFactory.Start(ctx.Done())
	for typ, ok := range informerFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer of %v did not sync", typ)
		}
	}
	if err := waitForHandlers(ctx, sched, informerFactory, stored); err != nil {
		return err
	}
	// The scheduler's own handlers (incl. the ResourceClaim assume cache's) have
	// delivered the initial lists.
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return fmt.Errorf("scheduler handlers did not sync: %w", err)
	}

	ns, name, err := cache.SplitMetaNamespaceKey(podKey)
	if err != nil {
		return fmt.Errorf("pod %q: %w", podKey, err)
	}
	target, err := informerFactory.Core().V1().Pods().Lister().Pods(ns).Get(name)
	if err != nil {
		return fmt.Errorf("pod %q: %w", podKey, err)
	}
	res.Profile = target.Spec.SchedulerName
	if _, ok := sched.Profiles[target.Spec.SchedulerName]; !ok {
		return fmt.Errorf("pod %q: no profile for schedulerName %q", podKey, target.Spec.SchedulerName)
	}
	popped := false
	sched.NextPod = func(logger klog.Logger) (*framework.QueuedPodInfo, error) {
		if popped {
			return nil, errors.New("the harness runs one cycle")
		}
		popped = true
		info := sched.SchedulingQueue.PopSpecificPod(logger, target)
		if info == nil {
			return nil, fmt.Errorf("pod %q is not in the scheduling queue", podKey)
		}
		return info, nil
	}
	cycleCtx, cancelCycle := context.WithCancel(ctx)
	defer cancelCycle()
	evalsBefore, err := pluginEvaluations(res.Profile)
	if err != nil {
		return fmt.Errorf("reading the metrics: %w", err)
	}
	sched.ScheduleOne(cycleCtx)
	obs.close()
	evalsAfter, err := pluginEvaluations(res.Profile)
	if err != nil {
		return fmt.Errorf("reading the metrics: %w", err)
	}
	res.PluginEvaluations = evaluationDeltas(evalsBefore, evalsAfter)
	if !popped {
		return errors.New("ScheduleOne did not take the pod")
	}

	report(obs, res)
	if res.Chosen != nil {
		// The binding cycle runs in a goroutine: its Scheduled or FailedScheduling event
		// ends it, or a PreBind waiting for the PV controller or for binding conditions.
	wait:
		for {
			// A PreBind that asked what no component here does ends the binding cycle
			// first, even when it has failed since (a bindTimeoutSeconds of 0).
			select {
			case <-bindingPending:
				res.BindingPending = true
				cancelCycle()
				break wait
			default:
			}
			obs.mu.Lock()
			e := obs.scheduled
			obs.mu.Unlock()
			if e != nil {
				res.Events = append(res.Events, *e)
				break
			}
			select {
			case <-ctx.Done():
				return errors.New("the binding cycle did not end (no Scheduled or FailedScheduling event)")
			case <-bindingPending:
				res.BindingPending = true
				cancelCycle()
				break wait
			case <-time.After(time.Millisecond):
			}
		}
	}
	current, err := client.Tracker().Get(gvr("", "v1", "pods"), ns, name)
	if err != nil {
		return fmt.Errorf("pod %q after the cycle: %w", podKey, err)
	}
	pod := current.(*v1.Pod)
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.PodScheduled {
			c := pod.Status.Conditions[i]
			// Times are normalized: set ones read as the fixed creation time.
			if !c.LastTransitionTime.IsZero() {
				c.LastTransitionTime = creationTime
			}
			if !c.LastProbeTime.IsZero() {
				c.LastProbeTime = creationTime
			}
			res.Condition = &c
		}
	}
	res.NominatedNodeName = pod.Status.NominatedNodeName
	deletedMu.Lock()
	sort.Strings(deleted)
	res.Deleted = deleted
	deletedMu.Unlock()
	if res.Deleted == nil {
		res.Deleted = []string{}
	}
	return nil
}

// waitForHandlers waits until the scheduler's event handlers have seen every stored
// object: each in its informer's store, nodes and bound pods in the cache, pending pods
// of the scheduler's profiles in the queue.
func waitForHandlers(ctx context.Context, sched *scheduler.Scheduler, f informers.SharedInformerFactory, stored []storedObject) error {
	nodes, bound, pending := 0, 0, 0
	for _, o := range stored {
		switch obj := o.obj.(type) {
		case *v1.Node:
			nodes++
		case *v1.Pod:
			if obj.Status.Phase == v1.PodSucceeded || obj.Status.Phase == v1.PodFailed {
				continue
			}
			if obj.Spec.NodeName != "" {
				bound++
			} else if _, ok := sched.Profiles[obj.Spec.SchedulerName]; ok {
				pending++
			}
		}
	}
	seen := func() (bool, string) {
		for _, o := range stored {
			m, err := metaOf(o.obj)
			if err != nil {
				return false, err.Error()
			}
			inf, err := f.ForResource(o.gvr)
			if err != nil {
				return false, err.Error()
			}
			if m.GetNamespace() == "" {
				_, err = inf.Lister().Get(m.GetName())
			} else {
				_, err = inf.Lister().ByNamespace(m.GetNamespace()).Get(m.GetName())
			}
			if err != nil {
				return false, fmt.Sprintf("%s %s/%s not in its informer", o.gvr.Resource, m.GetNamespace(), m.GetName())
			}
		}
		dump := sched.Cache.Dump()
		cachedNodes, cachedPods := 0, 0
		for _, ni := range dump.Nodes {
			if ni.Node() != nil {
				cachedNodes++
			}
			cachedPods += len(ni.GetPods())
		}
		queued, _ := sched.SchedulingQueue.PendingPods()
		if cachedNodes != nodes || cachedPods != bound || len(queued) != pending {
			return false, fmt.Sprintf("cache has %d/%d nodes and %d/%d bound pods, the queue %d/%d pending pods",
				cachedNodes, nodes, cachedPods, bound, len(queued), pending)
		}
		return true, ""
	}
	for {
		ok, why := seen()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("event handlers did not catch up: %s", why)
		case <-time.After(time.Millisecond):
		}
	}
}

// report copies the observation into the result.
func report(obs *observation, res *Result) {
	res.PreFilter = obs.preFilter
	res.Filters = obs.filters
	if res.Filters == nil {
		res.Filters = map[string]*Status{}
	}
	res.Examined = obs.filtered
	if res.Examined == nil {
		res.Examined = []string{}
	}
	res.Scores = obs.scores
	if res.Scores == nil {
		res.Scores = []NodeScores{}
	}
	if obs.reserved != "" {
		n := obs.reserved
		res.Chosen = &n
	}
	if obs.scheduleResult != nil {
		res.EvaluatedNodes = obs.scheduleResult.EvaluatedNodes
		res.FeasibleNodes = obs.scheduleResult.FeasibleNodes
	}
	var fe *framework.FitError
	if errors.As(obs.scheduleErr, &fe) {
		res.Diagnosis = diagnosisReport(fe)
		res.FitError = fe.Error()
	} else if obs.scheduleErr != nil {
		res.FitError = obs.scheduleErr.Error()
	}
	res.PostFilter = obs.postFilter
	res.Failure = obs.failure
	if res.Failure != nil {
		res.Failure.Diagnosis = res.Diagnosis
	}
	res.Events = obs.events
	if res.Events == nil {
		res.Events = []EventReport{}
	}
}
