package main

// Observing upstream's scheduling cycle without re-implementing any of it.
//
// The scheduler calls its profile's framework through the framework.Framework
// interface; observedFramework embeds the real one and overrides only the calls whose
// results the report needs, passing every argument through unchanged and recording what
// the real call returned:
//
//   - RunPreFilterPlugins: the PreFilter status, result (node names) and the plugins
//     that narrowed the nodes;
//   - RunFilterPluginsWithNominatedPods: every node's Filter verdict (the scheduler's
//     findNodesThatPassFilters and evaluateNominatedNode call it once per node examined);
//   - RunScorePlugins: each node's weighted, normalized score per plugin and the total;
//   - RunPostFilterPlugins: the PostFilter result and status;
//   - RunReservePluginsReserve: the node the cycle chose.
//
// DefaultPreemption's dry run filters through its own handle (the real framework), so
// its Filter calls are not recorded as the cycle's. The Scheduler's exported
// SchedulePod and FailureHandler fields are wrapped the same way (the real functions,
// called first, their results recorded): the ScheduleResult or FitError of the
// algorithm, and the status handed to the failure handler. Events go to a recorder
// that keeps them (formatted as client-go's recorder formats them).

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Status is a framework status as the report prints it.
type Status struct {
	Code    string   `json:"code"`
	Plugin  string   `json:"plugin"`
	Reasons []string `json:"reasons"`
}

func statusOf(s *fwk.Status) *Status {
	if s.IsSuccess() {
		return nil
	}
	reasons := s.Reasons()
	if reasons == nil {
		reasons = []string{}
	}
	return &Status{Code: s.Code().String(), Plugin: s.Plugin(), Reasons: reasons}
}

// observation is everything recorded during one scheduling cycle.
type observation struct {
	mu sync.Mutex
	// closed: the cycle under observation is over (later calls, e.g. from the
	// binding goroutine, are not recorded).
	closed bool

	preFilter  *PreFilterReport
	filters    map[string]*Status
	filtered   []string // nodes in the order the scheduler examined them
	scores     []NodeScores
	postFilter *PostFilterReport
	reserved   string

	scheduleResult *scheduler.ScheduleResult
	scheduleErr    error
	failure        *FailureReport
	events         []EventReport
	// scheduled is the binding cycle's Scheduled event, or its FailedScheduling event
	// when it failed (a PreBind or Bind error).
	scheduled *EventReport
	// bindingWait is called on the binding cycle's BindingConditionsPending event.
	bindingWait func()
}

// PreFilterReport is RunPreFilterPlugins' outcome.
type PreFilterReport struct {
	Status *Status `json:"status"`
	// NodeNames is the PreFilterResult's node set, sorted; nil: all nodes.
	NodeNames []string `json:"nodeNames"`
	// Plugins are the plugins whose PreFilterResult narrowed the nodes, sorted.
	Plugins []string `json:"plugins"`
}

// NodeScores is one node's RunScorePlugins result.
type NodeScores struct {
	Node    string           `json:"node"`
	Plugins map[string]int64 `json:"plugins"`
	Total   int64            `json:"total"`
}

// PostFilterReport is RunPostFilterPlugins' outcome.
type PostFilterReport struct {
	Status        *Status `json:"status"`
	Message       string  `json:"message"`
	NominatedNode *string `json:"nominatedNode"`
}

// FailureReport is what the scheduler's failure handler was given.
type FailureReport struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Diagnosis is set when the error is a FitError.
	Diagnosis *DiagnosisReport `json:"diagnosis"`
	// Nominating is the NominatingInfo (nil: leave the nomination as it is).
	Nominating *NominatingReport `json:"nominating"`
}

// DiagnosisReport is a FitError's diagnosis.
type DiagnosisReport struct {
	NumAllNodes          int                `json:"numAllNodes"`
	Nodes                map[string]*Status `json:"nodes"`
	Absent               *Status            `json:"absent"`
	UnschedulablePlugins []string           `json:"unschedulablePlugins"`
	PendingPlugins       []string           `json:"pendingPlugins"`
	PreFilterMsg         string             `json:"preFilterMsg"`
	PostFilterMsg        string             `json:"postFilterMsg"`
}

// NominatingReport is a NominatingInfo.
type NominatingReport struct {
	Mode string `json:"mode"`
	Node string `json:"node"`
}

// EventReport is one event the scheduler recorded.
type EventReport struct {
	Type      string `json:"type"`
	Reason    string `json:"reason"`
	Action    string `json:"action"`
	Regarding string `json:"regarding"`
	Note      string `json:"note"`
}

func (o *observation) record(f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		f()
	}
}

func (o *observation) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
}

func sortedSet(s sets.Set[string]) []string {
	if s == nil {
		return []string{}
	}
	return sets.List(s)
}

// observedFramework is the real framework with the cycle's results recorded.
type observedFramework struct {
	framework.Framework
	obs *observation
}

func (f *observedFramework) RunPreFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod) (*fwk.PreFilterResult, *fwk.Status, sets.Set[string]) {
	result, status, plugins := f.Framework.RunPreFilterPlugins(ctx, state, pod)
	f.obs.record(func() {
		r := &PreFilterReport{Status: statusOf(status), Plugins: sortedSet(plugins)}
		if !result.AllNodes() {
			r.NodeNames = sets.List(result.NodeNames)
		}
		f.obs.preFilter = r
	})
	return result, status, plugins
}

func (f *observedFramework) RunFilterPluginsWithNominatedPods(ctx context.Context, state fwk.CycleState, pod *v1.Pod, info fwk.NodeInfo) *fwk.Status {
	status := f.Framework.RunFilterPluginsWithNominatedPods(ctx, state, pod, info)
	name := info.Node().Name
	f.obs.record(func() {
		if f.obs.filters == nil {
			f.obs.filters = map[string]*Status{}
		}
		f.obs.filters[name] = statusOf(status)
		f.obs.filtered = append(f.obs.filtered, name)
	})
	return status
}

func (f *observedFramework) RunScorePlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) ([]fwk.NodePluginScores, *fwk.Status) {
	scores, status := f.Framework.RunScorePlugins(ctx, state, pod, nodes)
	f.obs.record(func() {
		out := make([]NodeScores, 0, len(scores))
		for _, s := range scores {
			ns := NodeScores{Node: s.Name, Plugins: map[string]int64{}, Total: s.TotalScore}
			for _, p := range s.Scores {
				ns.Plugins[p.Name] = p.Score
			}
			out = append(out, ns)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
		f.obs.scores = out
	})
	return scores, status
}

func (f *observedFramework) RunPostFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	result, status := f.Framework.RunPostFilterPlugins(ctx, state, pod, m)
	f.obs.record(func() {
		r := &PostFilterReport{Status: statusOf(status), Message: status.Message()}
		if result != nil && result.NominatingInfo != nil {
			n := result.NominatingInfo.NominatedNodeName
			r.NominatedNode = &n
		}
		f.obs.postFilter = r
	})
	return result, status
}

func (f *observedFramework) RunReservePluginsReserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	status := f.Framework.RunReservePluginsReserve(ctx, state, pod, nodeName)
	f.obs.record(func() { f.obs.reserved = nodeName })
	return status
}

// observe installs the recording wrappers on sched's profiles and handlers.
func observe(sched *scheduler.Scheduler, obs *observation) {
	for name, prof := range sched.Profiles {
		sched.Profiles[name] = &observedFramework{Framework: prof, obs: obs}
	}
	schedulePod := sched.SchedulePod
	sched.SchedulePod = func(ctx context.Context, f framework.Framework, state fwk.CycleState, podInfo *framework.QueuedPodInfo) (scheduler.ScheduleResult, error) {
		result, err := schedulePod(ctx, f, state, podInfo)
		obs.record(func() {
			obs.scheduleResult = &result
			obs.scheduleErr = err
		})
		return result, err
	}
	failureHandler := sched.FailureHandler
	sched.FailureHandler = func(ctx context.Context, f framework.Framework, podInfo *framework.QueuedPodInfo, status *fwk.Status, nominating *fwk.NominatingInfo, start time.Time) {
		// Recorded before the real handler runs: it may change nothing we read, but the
		// report is what the handler was given.
		obs.record(func() { obs.failure = failureReport(status, nominating) })
		failureHandler(ctx, f, podInfo, status, nominating, start)
	}
}

func failureReport(status *fwk.Status, nominating *fwk.NominatingInfo) *FailureReport {
	r := &FailureReport{Code: status.Code().String(), Message: status.Message()}
	if nominating != nil {
		mode := "Noop"
		if nominating.Mode() == fwk.ModeOverride {
			mode = "Override"
		}
		r.Nominating = &NominatingReport{Mode: mode, Node: nominating.NominatedNodeName}
	}
	// The diagnosis is read when the report is built (after the cycle): PostFilterMsg
	// is set on the same FitError once PostFilter has run.
	return r
}

func diagnosisReport(fe *framework.FitError) *DiagnosisReport {
	d := &DiagnosisReport{
		NumAllNodes:          fe.NumAllNodes,
		Nodes:                map[string]*Status{},
		UnschedulablePlugins: sortedSet(fe.Diagnosis.UnschedulablePlugins),
		PendingPlugins:       sortedSet(fe.Diagnosis.PendingPlugins),
		PreFilterMsg:         fe.Diagnosis.PreFilterMsg,
		PostFilterMsg:        fe.Diagnosis.PostFilterMsg,
	}
	if fe.Diagnosis.NodeToStatus != nil {
		fe.Diagnosis.NodeToStatus.ForEachExplicitNode(func(name string, s *fwk.Status) {
			d.Nodes[name] = statusOf(s)
		})
		d.Absent = statusOf(fe.Diagnosis.NodeToStatus.AbsentNodesStatus())
	}
	return d
}

// recorder keeps the events of the observed cycle, formatting the note as client-go's
// events recorder does (fmt.Sprintf(note, args...)).
type recorder struct {
	obs *observation
}

var _ events.EventRecorderLogger = &recorder{}

func (r *recorder) Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	ref := ""
	if p, ok := regarding.(*v1.Pod); ok {
		ref = p.Namespace + "/" + p.Name
	}
	e := EventReport{Type: eventtype, Reason: reason, Action: action, Regarding: ref, Note: fmt.Sprintf(note, args...)}
	r.obs.mu.Lock()
	bindingCycle := r.obs.closed
	r.obs.mu.Unlock()
	if reason == "Scheduled" || bindingCycle && reason == "FailedScheduling" {
		// The binding cycle's outcome comes after the observed scheduling cycle.
		r.obs.mu.Lock()
		r.obs.scheduled = &e
		r.obs.mu.Unlock()
		return
	}
	if reason == "BindingConditionsPending" && r.obs.bindingWait != nil {
		// DynamicResources' PreBind waits for the devices' binding conditions.
		r.obs.bindingWait()
	}
	r.obs.record(func() { r.obs.events = append(r.obs.events, e) })
}

func (r *recorder) WithLogger(klog.Logger) events.EventRecorderLogger { return r }
