package apply

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/payload-applier/payload-applier/pkg/apply/deletion"
	"github.com/payload-applier/payload-applier/pkg/graph"
)

// hourSteps is a backoff whose every step outlasts the test: a task that
// finishes did not sit one out.
var hourSteps = wait.Backoff{Duration: time.Hour, Factor: 1, Steps: 3}

// A custom resource whose CRD another task is creating tries again as
// soon as that CRD's kinds are learned, not when its backoff step ends.
func TestATaskRetriesAsSoonAsItsKindIsLearned(t *testing.T) {
	rm := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{{Group: "example.com", Version: "v1", Resource: "widgets"}: "WidgetList"})
	e, err := New(Config{Dynamic: dyn, Mapper: resettable{rm}, Ledger: &deletion.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	rel := planRelease(t, planDoc{"0000_50_a_01_widget.yaml", `apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
  namespace: default
`})
	go func() {
		time.Sleep(200 * time.Millisecond)
		e.mapper.learn(liveCRD("widgets.example.com", "example.com", "widgets", "Widget", "Namespaced", "v1"))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.Sync(ctx, rel, SyncOptions{Mode: graph.ModeInstall, Backoff: &hourSteps})
	if err != nil || !res.Complete() {
		t.Fatalf("sync: %v %v", err, res.Errors)
	}
}
