// Ground truth for ksched's CEL cost meter: upstream's DRA compile + DeviceMatches,
// printing the actual cost or the error of each expression (one JSON case per line).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

type input struct {
	Expr   string                       `json:"expr"`
	Driver string                       `json:"driver"`
	Attrs  map[string]resourceapi.DeviceAttribute `json:"attributes"`
	Caps   map[string]string            `json:"capacity"`
}

func main() {
	comp := dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: true})
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var in input
		if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
			panic(err)
		}
		res := comp.CompileCELExpression(in.Expr, dracel.Options{DisableCostEstimation: true})
		out := map[string]any{"expr": in.Expr}
		if res.Error != nil {
			out["compile_error"] = res.Error.Error()
		} else {
			dev := dracel.Device{Driver: in.Driver, Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}, Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}}
			for k, v := range in.Attrs {
				dev.Attributes[resourceapi.QualifiedName(k)] = v
			}
			for k, v := range in.Caps {
				dev.Capacity[resourceapi.QualifiedName(k)] = resourceapi.DeviceCapacity{Value: resource.MustParse(v)}
			}
			m, details, err := res.DeviceMatches(context.Background(), dev)
			if details != nil && details.ActualCost() != nil {
				out["cost"] = *details.ActualCost()
			}
			if err != nil {
				out["error"] = err.Error()
			} else {
				out["match"] = m
			}
		}
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
	}
}
