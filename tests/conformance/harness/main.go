// Command ksched-conformance runs upstream kube-scheduler's own scheduling code
// (k8s.io/kubernetes v1.36.5, pkg/scheduler) on cases read as JSON lines, one result
// line per case, for ksched's differential conformance tests (tests/conformance).
//
// Usage:
//
//	ksched-conformance < cases.jsonl > results.jsonl
//
// Each case is a KubeSchedulerConfiguration, the API objects of a cluster and the
// pending pod to schedule (see Case in run.go); each result reports what one real
// scheduling cycle did (see Result). Nothing of the scheduling logic is re-implemented
// here: the objects are stored as the API server would store them (objects.go), the
// scheduler is built by scheduler.New on a fake clientset, and its framework calls are
// observed, not replaced (observe.go).
//
// One deviation from the default feature gates: SchedulerAsyncPreemption is off, so a
// preemption's victims are deleted before the cycle ends and the report can list them.
// The gate only decides whether that happens in the cycle or in a goroutine after it;
// the choice of node and victims and the messages are the same. A case may set other
// gates (featureGates, e.g. the alpha StorageCapacityScoring) for itself alone.
//
// A panic in a goroutine of the scheduler (which would crash kube-scheduler) does not
// end the program: the case is reported with upstreamPanic set, and not compared.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
)

func main() {
	verbosity := flag.Int("v", -1, "log the scheduler at this klog verbosity on stderr (default: no logs)")
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
	// A panic in one of the scheduler's goroutines would end the process (kube-scheduler
	// crashes): it is recorded for the case that caused it instead (see panics.go).
	utilruntime.ReallyCrash = false
	utilruntime.PanicHandlers = append(utilruntime.PanicHandlers, casePanics.record)
	if err := setFeatureGates(nil); err != nil {
		fmt.Fprintln(os.Stderr, "ksched-conformance:", err)
		os.Exit(2)
	}

	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	dec := json.NewDecoder(in)
	enc := json.NewEncoder(out)
	for {
		var c Case
		if err := dec.Decode(&c); err == io.EOF {
			break
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "ksched-conformance: reading a case:", err)
			os.Exit(2)
		}
		if err := enc.Encode(runCase(c)); err != nil {
			fmt.Fprintln(os.Stderr, "ksched-conformance: writing a result:", err)
			os.Exit(2)
		}
		// One line per case, flushed: the caller may read results as they come.
		if err := out.Flush(); err != nil {
			fmt.Fprintln(os.Stderr, "ksched-conformance:", err)
			os.Exit(2)
		}
	}
}

// caseGates are the gates a case may set, at their v1.36 defaults (what the harness
// resets them to before every case).
var caseGates = map[string]bool{
	string(features.StorageCapacityScoring): false,
}

// setFeatureGates sets the harness's gates and the case's (nil: the defaults).
func setFeatureGates(gates map[string]bool) error {
	m := map[string]bool{string(features.SchedulerAsyncPreemption): false}
	for name, on := range caseGates {
		m[name] = on
	}
	for name, on := range gates {
		if _, ok := caseGates[name]; !ok {
			return fmt.Errorf("featureGates: %s is not a gate cases may set", name)
		}
		m[name] = on
	}
	return utilfeature.DefaultMutableFeatureGate.SetFromMap(m)
}
