package kubernetes

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
	"github.com/mcpfleet/mcp/model"
)

// TestWaiterStageOnly: a hand-over of stage steps alone ends when the agent reports Done
// on the config the node runs (it stays there); any other hand-over still needs Done on
// its target, and a stage hand-over Done on a third config is an error.
func TestWaiterStageOnly(t *testing.T) {
	node := func(current string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
			protocol.CurrentConfig: current, protocol.State: model.StateDone, protocol.ObservedUpdateID: "u1", protocol.Progress: "1"}}}
	}
	stage := []model.Step{{Kind: model.StepStage}}
	var done []string
	w := &waiter{node: "n", target: "new", id: "u1", steps: stage, from: "old", stageOnly: model.StageOnly(stage), ctx: context.Background(),
		done: func(s model.Step) { done = append(done, s.Key()) }}
	if ok, err := w.observe(node("old")); !ok || err != nil || strings.Join(done, ",") != "stage" {
		t.Errorf("stage hand-over, Done on the current config: %v %v, done %v", ok, err, done)
	}
	slot := []model.Step{{Kind: model.StepPivot}, {Kind: model.StepReboot}}
	w = &waiter{node: "n", target: "new", id: "u1", steps: slot, from: "old", stageOnly: model.StageOnly(slot), ctx: context.Background()}
	if ok, err := w.observe(node("old")); ok || err == nil {
		t.Errorf("slot hand-over, Done on the old config: %v %v; want an error", ok, err)
	}
	w = &waiter{node: "n", target: "new", id: "u1", steps: stage, from: "old", stageOnly: true, ctx: context.Background()}
	if ok, err := w.observe(node("third")); ok || err == nil {
		t.Errorf("stage hand-over, Done on a third config: %v %v; want an error", ok, err)
	}
}
