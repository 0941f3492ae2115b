package operator

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/payload-applier/payload-applier/pkg/apply"
)

// Beyond the CVO: one series per operator the update waits on, holding
// when the wait began, gone once it no longer waits.
func TestTheWaitGaugeHoldsWhenEachOperatorsWaitBegan(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := &apply.SyncResult{Release: "1.1.0", Errors: []error{
		cvoCOError("alpha", apply.ReasonCODegraded, "FailAfterInterval", "Cluster operator alpha is degraded"),
		errors.New("not about an operator"),
	}}
	res.Errors[0].(*apply.TaskError).Since = since
	m.observeSync(time.Second, res)
	if v := testutil.ToFloat64(m.operatorWaits.WithLabelValues("alpha", string(apply.ReasonCODegraded))); v != float64(since.Unix()) {
		t.Errorf("wait start %v, want %d", v, since.Unix())
	}
	if n := testutil.CollectAndCount(m.operatorWaits); n != 1 {
		t.Errorf("%d series, want alpha's alone", n)
	}
	m.observeSync(time.Second, &apply.SyncResult{Release: "1.1.0"})
	if n := testutil.CollectAndCount(m.operatorWaits); n != 0 {
		t.Errorf("%d series once nothing waits", n)
	}
}
