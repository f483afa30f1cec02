package main

// Upstream's scheduler_plugin_evaluation_total for the observed cycle.
//
// The framework wraps its PreFilter, Filter, PreScore and Score plugins
// (framework/runtime/instrumented_plugins.go) so that each call counts in the
// process-wide legacy registry. The harness runs many cases in one process, with
// profiles of the same names, so a case's counts are the difference between two reads
// of the registry: just before ScheduleOne and just after it (the binding cycle calls
// none of those plugins).

import (
	"k8s.io/component-base/metrics/legacyregistry"
)

const pluginEvaluationTotal = "scheduler_plugin_evaluation_total"

// pluginEvaluations reads scheduler_plugin_evaluation_total of profile from the
// registry: "ExtensionPoint/Plugin" → count.
func pluginEvaluations(profile string) (map[string]float64, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != pluginEvaluationTotal {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["profile"] != profile {
				continue
			}
			out[labels["extension_point"]+"/"+labels["plugin"]] = m.GetCounter().GetValue()
		}
	}
	return out, nil
}

// evaluationDeltas is after - before, without the counts that did not move.
func evaluationDeltas(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
