package manifests_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/payload-applier/payload-applier/pkg/operator"
)

const (
	ruleFile       = "monitoring/cluster-version-operator.rules.yaml"
	prometheusRule = "monitoring/0000_90_cluster-version-operator_02_prometheusrule.yaml"
	ruleTests      = "monitoring/tests"
)

type ruleGroups struct {
	Groups []struct {
		Name  string
		Rules []struct {
			Alert string
			Expr  string
		}
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func alerts(t *testing.T) map[string]string {
	t.Helper()
	var g ruleGroups
	data, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, group := range g.Groups {
		for _, r := range group.Rules {
			out[r.Alert] = r.Expr
		}
	}
	return out
}

// promtool is the real one, from the Debian package prometheus.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: `make tools` installs it (Debian package prometheus)")
	}
	return path
}

// TestAlertRulesPassPromtool checks the rule file and runs the unit tests
// of every alert, each firing and not firing on series shaped like the
// operator's.
func TestAlertRulesPassPromtool(t *testing.T) {
	bin := promtool(t)
	if out, err := exec.Command(bin, "check", "rules", ruleFile).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", ruleFile, err, out)
	}
	tests, err := filepath.Glob(filepath.Join(ruleTests, "*.yaml"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no rule tests in %s: %v", ruleTests, err)
	}
	out, err := exec.Command(bin, append([]string{"test", "rules"}, tests...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "SUCCESS"); n != len(tests) {
		t.Fatalf("promtool passed %d of %d rule test files:\n%s", n, len(tests), out)
	}
}

// TestEveryAlertIsTestedFiringAndNot: each alert has its test file, which
// expects it both to fire and not to.
func TestEveryAlertIsTestedFiringAndNot(t *testing.T) {
	want := []string{"ClusterVersionOperatorDown", "CannotRetrieveUpdates", "UpdateAvailable", "ClusterReleaseNotAccepted",
		"ClusterNotUpgradeable", "ClusterOperatorDown", "ClusterOperatorDegraded", "ClusterOperatorFlapping", "CannotEvaluateConditionalUpdates",
		"PayloadApplierDeleteStuck", "PayloadApplierOperandCleanupStalled", "PayloadApplierReleaseDeprecated", "PayloadApplierLedgerUnreadable"}
	all := alerts(t)
	var names []string
	for name := range all {
		names = append(names, name)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("alerts %v, want %v", names, want)
	}
	for name := range all {
		var f struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string
					ExpAlerts []any `json:"exp_alerts"`
				} `json:"alert_rule_test"`
			}
		}
		data, err := os.ReadFile(filepath.Join(ruleTests, name+".yaml"))
		if err != nil {
			t.Errorf("alert %s has no rule test: %v", name, err)
			continue
		}
		if err := yaml.Unmarshal(data, &f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var fires, quiet bool
		for _, tc := range f.Tests {
			for _, a := range tc.AlertRuleTest {
				if a.Alertname != name {
					t.Errorf("%s.yaml tests %s", name, a.Alertname)
				}
				fires = fires || len(a.ExpAlerts) > 0
				quiet = quiet || len(a.ExpAlerts) == 0
			}
		}
		if !fires || !quiet {
			t.Errorf("%s.yaml must expect the alert both firing (%v) and not (%v)", name, fires, quiet)
		}
	}
}

// TestPrometheusRuleIsTheRuleFile: the PrometheusRule ships the rule file's
// groups, unchanged.
func TestPrometheusRuleIsTheRuleFile(t *testing.T) {
	var plain map[string]any
	readYAML(t, ruleFile, &plain)
	var pr struct {
		APIVersion string `json:"apiVersion"`
		Kind       string
		Metadata   map[string]any
		Spec       map[string]any
	}
	readYAML(t, prometheusRule, &pr)
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Metadata["namespace"] != "openshift-cluster-version" {
		t.Errorf("%s is %s %s in %v", prometheusRule, pr.APIVersion, pr.Kind, pr.Metadata["namespace"])
	}
	if !reflect.DeepEqual(plain, pr.Spec) {
		t.Errorf("%s's spec differs from %s: copy the groups again", prometheusRule, ruleFile)
	}
}

// recorder keeps what NewMetrics registers.
type recorder struct{ collectors []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}
func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}
func (r *recorder) Unregister(prometheus.Collector) bool { return false }

// TestAlertRulesReadTheOperatorsMetrics: every metric an alert reads is
// one the operator exports, so that no alert waits on a name that never
// comes.
func TestAlertRulesReadTheOperatorsMetrics(t *testing.T) {
	rec := &recorder{}
	if _, err := operator.NewMetrics(rec); err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range rec.collectors {
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			if m := fqName.FindStringSubmatch(d.String()); m != nil {
				exported[m[1]] = true
			}
		}
	}
	name := regexp.MustCompile(`\b(cluster_[a-z_]+|payload_applier_[a-z_]+)\b`)
	for alert, expr := range alerts(t) {
		for _, m := range name.FindAllString(expr, -1) {
			if !exported[m] {
				t.Errorf("alert %s reads %s, which the operator does not export", alert, m)
			}
		}
	}
	if len(exported) < 10 {
		t.Fatalf("found only %d metric names: %v", len(exported), exported)
	}
}
