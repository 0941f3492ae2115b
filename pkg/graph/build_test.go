package graph

import (
	"strings"
	"testing"
)

// kindTasks builds tasks from names; a name starting with "job" or marked
// with a "job:" prefix is a Job, as SplitOnJobs sees it.
func kindTasks(names ...string) []*Task {
	tasks := make([]*Task, len(names))
	for i, name := range names {
		file, isJob := strings.CutPrefix(name, "job:")
		if strings.HasPrefix(name, "job") && !isJob {
			isJob = true
		}
		tasks[i] = fileTask(i, file)
		tasks[i].Job = isJob
	}
	return tasks
}

func TestGraphSplit(t *testing.T) {
	tests := map[string]struct {
		nodes []*Node
		want  []nodeSpec
	}{
		"an empty graph is unchanged": {
			nodes: nil,
			want:  nil,
		},
		"a single pod is unchanged": {
			nodes: []*Node{{Tasks: kindTasks("pod1")}},
			want:  []nodeSpec{{tasks: []string{"pod1"}}},
		},
		"a job before a pod runs first": {
			nodes: []*Node{{Tasks: kindTasks("job1", "pod2")}},
			want: []nodeSpec{
				{tasks: []string{"job1"}, out: []int{1}},
				{tasks: []string{"pod2"}, in: []int{0}},
			},
		},
		"a pod before a job runs first": {
			nodes: []*Node{{Tasks: kindTasks("pod1", "job2")}},
			want: []nodeSpec{
				{tasks: []string{"job2"}, in: []int{1}},
				{tasks: []string{"pod1"}, out: []int{0}},
			},
		},
		"an interior job splits its node in three": {
			nodes: []*Node{{Tasks: kindTasks("pod1", "pod2", "job3", "pod4")}},
			want: []nodeSpec{
				{tasks: []string{"job3"}, in: []int{1}, out: []int{2}},
				{tasks: []string{"pod1", "pod2"}, out: []int{0}},
				{tasks: []string{"pod4"}, in: []int{0}},
			},
		},
		"interspersed jobs form one chain": {
			nodes: []*Node{{Tasks: kindTasks("pod1", "pod2", "job3", "pod4", "job5", "pod6")}},
			want: []nodeSpec{
				{tasks: []string{"job3"}, in: []int{1}, out: []int{3}},
				{tasks: []string{"pod1", "pod2"}, out: []int{0}},
				{tasks: []string{"job5"}, in: []int{3}, out: []int{4}},
				{tasks: []string{"pod4"}, in: []int{0}, out: []int{2}},
				{tasks: []string{"pod6"}, in: []int{2}},
			},
		},
		"jobs at both ends fence the pods": {
			nodes: []*Node{{Tasks: kindTasks("job1", "pod2", "pod3", "job4")}},
			want: []nodeSpec{
				{tasks: []string{"job1"}, out: []int{2}},
				{tasks: []string{"job4"}, in: []int{2}},
				{tasks: []string{"pod2", "pod3"}, in: []int{0}, out: []int{1}},
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := &Graph{Nodes: tt.nodes}
			g.Split(SplitOnJobs)
			if got, want := renderNodes(g.Nodes), renderSpecs(tt.want); got != want {
				t.Errorf("nodes:\n%s\nwant:\n%s", got, want)
			}
			if err := g.Validate(); err != nil {
				t.Errorf("split graph is invalid: %v", err)
			}
		})
	}
}

// TestGraphExample follows the CVO's Test_TaskGraph_example: Split on jobs,
// then Parallelize(ByNumberAndComponent), node for node.
func TestGraphExample(t *testing.T) {
	tests := map[string]struct {
		tasks []string
		want  []nodeSpec
	}{
		"a pod before a job feeds the job": {
			tasks: []string{"a", "job:0000_50_a_0"},
			want: []nodeSpec{
				{tasks: []string{"0000_50_a_0"}, in: []int{1}},
				{tasks: []string{"a"}, out: []int{0}},
			},
		},
		"one component after a job stays one serial node": {
			tasks: []string{"a", "job:0000_50_a_0", "0000_50_a_1", "0000_50_a_2"},
			want: []nodeSpec{
				{tasks: []string{"0000_50_a_0"}, in: []int{1}, out: []int{2}},
				{tasks: []string{"a"}, out: []int{0}},
				{tasks: []string{"0000_50_a_1", "0000_50_a_2"}, in: []int{0}},
			},
		},
		"two components after a job hang off an empty anchor": {
			tasks: []string{"job:a", "0000_50_a_0", "0000_50_b_0", "0000_50_b_1"},
			want: []nodeSpec{
				{tasks: []string{"a"}, out: []int{1}},
				{in: []int{0}, out: []int{2, 3}},
				{tasks: []string{"0000_50_a_0"}, in: []int{1}},
				{tasks: []string{"0000_50_b_0", "0000_50_b_1"}, in: []int{1}},
			},
		},
		"components between two jobs join on a right anchor": {
			tasks: []string{"job:a", "0000_50_a_0", "0000_50_b_0", "0000_50_b_1", "0000_50_c_0", "job:b"},
			want: []nodeSpec{
				{tasks: []string{"a"}, out: []int{2}},
				{tasks: []string{"b"}, in: []int{6}},
				{in: []int{0}, out: []int{3, 4, 5}},
				{tasks: []string{"0000_50_a_0"}, in: []int{2}, out: []int{6}},
				{tasks: []string{"0000_50_b_0", "0000_50_b_1"}, in: []int{2}, out: []int{6}},
				{tasks: []string{"0000_50_c_0"}, in: []int{2}, out: []int{6}},
				{in: []int{3, 4, 5}, out: []int{1}},
			},
		},
		"run levels are barriers and single-component levels merge": {
			tasks: []string{
				"0000_07_a_0", "0000_08_a_0", "0000_09_a_0", "0000_09_a_1", "0000_09_b_0",
				"0000_09_b_1", "0000_10_a_0", "0000_10_a_1", "0000_11_a_0", "0000_11_a_1",
			},
			want: []nodeSpec{
				{out: []int{1}},
				{tasks: []string{"0000_07_a_0", "0000_08_a_0"}, in: []int{0}, out: []int{2, 3}},
				{tasks: []string{"0000_09_a_0", "0000_09_a_1"}, in: []int{1}, out: []int{4}},
				{tasks: []string{"0000_09_b_0", "0000_09_b_1"}, in: []int{1}, out: []int{4}},
				{tasks: []string{"0000_10_a_0", "0000_10_a_1", "0000_11_a_0", "0000_11_a_1"}, in: []int{2, 3}},
			},
		},
		"two parallel run levels in a row are joined by a spacer": {
			tasks: []string{"0000_01_a_0", "0000_01_b_0", "0000_02_a_0", "0000_02_b_0"},
			want: []nodeSpec{
				{out: []int{1, 2}},
				{tasks: []string{"0000_01_a_0"}, in: []int{0}, out: []int{3}},
				{tasks: []string{"0000_01_b_0"}, in: []int{0}, out: []int{3}},
				{in: []int{1, 2}, out: []int{4, 5}},
				{tasks: []string{"0000_02_a_0"}, in: []int{3}},
				{tasks: []string{"0000_02_b_0"}, in: []int{3}},
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := Build(kindTasks(tt.tasks...), BuildOptions{Mode: ModeUpdate})
			if got, want := renderNodes(g.Nodes), renderSpecs(tt.want); got != want {
				t.Errorf("nodes:\n%s\nwant:\n%s", got, want)
			}
			if err := g.Validate(); err != nil {
				t.Errorf("graph is invalid: %v", err)
			}
		})
	}
}

func TestGraphLink(t *testing.T) {
	t.Run("new nodes run after the given nodes and are listed in their Out", func(t *testing.T) {
		g := graphOf(nodeSpec{tasks: []string{"a", "b"}})
		ids := g.link([]*Node{{Tasks: fileTasks("c")}, {Tasks: fileTasks("d")}}, []int{0})
		want := renderSpecs([]nodeSpec{
			{tasks: []string{"a", "b"}, out: []int{1, 2}},
			{tasks: []string{"c"}, in: []int{0}},
			{tasks: []string{"d"}, in: []int{0}},
		})
		if got := renderNodes(g.Nodes); got != want || len(ids) != 2 || ids[0] != 1 || ids[1] != 2 {
			t.Errorf("ids %v, nodes:\n%s\nwant:\n%s", ids, got, want)
		}
	})
	t.Run("existing Out edges are kept", func(t *testing.T) {
		g := graphOf(nodeSpec{tasks: []string{"a", "b"}, out: []int{1}}, nodeSpec{tasks: []string{"e"}, in: []int{0}})
		ids := g.link([]*Node{{Tasks: fileTasks("c")}, {Tasks: fileTasks("d")}}, []int{0})
		want := renderSpecs([]nodeSpec{
			{tasks: []string{"a", "b"}, out: []int{1, 2, 3}},
			{tasks: []string{"e"}, in: []int{0}},
			{tasks: []string{"c"}, in: []int{0}},
			{tasks: []string{"d"}, in: []int{0}},
		})
		if got := renderNodes(g.Nodes); got != want || len(ids) != 2 || ids[0] != 2 {
			t.Errorf("ids %v, nodes:\n%s\nwant:\n%s", ids, got, want)
		}
	})
}

func TestBuild(t *testing.T) {
	payload := func() []*Task {
		tasks := fileTasks(
			"0000_10_a_00_ns.yaml", "0000_10_a_01_crd.yaml", "0000_10_b_00_ns.yaml",
			"0000_20_c_00_old.yaml", "0000_20_c_01_deploy.yaml",
			"0000_30_a_00_x.yaml", "0000_30_b_00_y.yaml", "0000_30_d_00_z.yaml",
		)
		tasks[3].Delete = true
		return tasks
	}
	t.Run("delete tasks are left out of every mode", func(t *testing.T) {
		for _, mode := range []Mode{ModeUpdate, ModeInstall, ModeReconcile} {
			g := Build(payload(), BuildOptions{Mode: mode})
			if g.TaskCount() != 7 {
				t.Errorf("%s graph holds %d tasks, want the 7 applies", mode, g.TaskCount())
			}
			for _, n := range g.Nodes {
				for _, task := range n.Tasks {
					if task.Delete {
						t.Errorf("%s graph holds delete task %s", mode, task)
					}
				}
			}
		}
	})
	t.Run("the zero mode builds the update graph", func(t *testing.T) {
		if a, b := renderNodes(Build(payload(), BuildOptions{}).Nodes), renderNodes(Build(payload(), BuildOptions{Mode: ModeUpdate}).Nodes); a != b {
			t.Errorf("zero mode:\n%s\nupdate:\n%s", a, b)
		}
	})
	t.Run("install runs every component chunk in parallel from one anchor", func(t *testing.T) {
		g := Build(payload(), BuildOptions{Mode: ModeInstall})
		if len(g.Nodes) != 7 || len(g.Nodes[0].Out) != 6 {
			t.Errorf("install graph:\n%s", renderNodes(g.Nodes))
		}
	})
	t.Run("no tasks give an empty graph", func(t *testing.T) {
		if g := Build(nil, BuildOptions{}); len(g.Nodes) != 0 {
			t.Errorf("got %d nodes", len(g.Nodes))
		}
	})
	t.Run("only deletes give an empty apply graph", func(t *testing.T) {
		tasks := fileTasks("0000_10_a_x.yaml")
		tasks[0].Delete = true
		if g := Build(tasks, BuildOptions{}); len(g.Nodes) != 0 {
			t.Errorf("got %d nodes", len(g.Nodes))
		}
	})
}

// mixedPayload has every shape a graph must order: parallel components, a
// Job barrier, an unparsed name, a component over two run levels, and
// deletes.
func mixedPayload() []*Task {
	tasks := fileTasks(
		"0000_00_cluster-version-operator_00_namespace.yaml",
		"0000_03_config-operator_01_proxies.crd.yaml",
		"0000_10_etcd-operator_00_namespace.yaml",
		"0000_10_etcd-operator_01_deployment.yaml",
		"0000_10_kube-apiserver-operator_00_namespace.yaml",
		"0000_10_kube-apiserver-operator_01_old-service.yaml",
		"0000_30_machine-api_00_migrate.job.yaml",
		"0000_50_olm_00_namespace.yaml",
		"0000_50_olm_01_old-crd.yaml",
		"0000_50_olm_02_old-deployment.yaml",
		"0000_50_olm_03_clusteroperator.yaml",
		"0000_50_samples_00_namespace.yaml",
		"0000_90_olm_00_old-servicemonitor.yaml",
		"0000_90_olm_01_prometheusrule.yaml",
		"image-references",
	)
	tasks[6].Job = true
	for _, i := range []int{5, 8, 9, 12} {
		tasks[i].Delete = true
	}
	return tasks
}

func TestBuildMixedPayload(t *testing.T) {
	const (
		cvo       = "0000_00_cluster-version-operator_00_namespace.yaml"
		config    = "0000_03_config-operator_01_proxies.crd.yaml"
		etcdNS    = "0000_10_etcd-operator_00_namespace.yaml"
		etcdDep   = "0000_10_etcd-operator_01_deployment.yaml"
		kasNS     = "0000_10_kube-apiserver-operator_00_namespace.yaml"
		kasOld    = "0000_10_kube-apiserver-operator_01_old-service.yaml"
		migrate   = "0000_30_machine-api_00_migrate.job.yaml"
		olmNS     = "0000_50_olm_00_namespace.yaml"
		olmCRD    = "0000_50_olm_01_old-crd.yaml"
		olmDep    = "0000_50_olm_02_old-deployment.yaml"
		olmCO     = "0000_50_olm_03_clusteroperator.yaml"
		samples   = "0000_50_samples_00_namespace.yaml"
		olmSM     = "0000_90_olm_00_old-servicemonitor.yaml"
		olmRule   = "0000_90_olm_01_prometheusrule.yaml"
		imageRefs = "image-references"
	)
	// Install and reconcile share a shape: components in parallel on each
	// side of the Job, whatever their run level.
	flat := func(before, after [][]string) []nodeSpec {
		return []nodeSpec{
			{tasks: []string{migrate}, in: []int{7}, out: []int{2}},
			{out: []int{3, 4, 5, 6}},
			{in: []int{0}, out: []int{8, 9, 10, 11}},
			{tasks: before[0], in: []int{1}, out: []int{7}},
			{tasks: before[1], in: []int{1}, out: []int{7}},
			{tasks: before[2], in: []int{1}, out: []int{7}},
			{tasks: before[3], in: []int{1}, out: []int{7}},
			{in: []int{3, 4, 5, 6}, out: []int{0}},
			{tasks: after[0], in: []int{2}},
			{tasks: after[1], in: []int{2}},
			{tasks: after[2], in: []int{2}},
			{tasks: after[3], in: []int{2}},
		}
	}
	tests := map[string]struct {
		graph *Graph
		want  []nodeSpec
	}{
		"update keeps run levels as barriers and the Job between them": {
			graph: Build(mixedPayload(), BuildOptions{Mode: ModeUpdate}),
			want: []nodeSpec{
				{tasks: []string{migrate}, in: []int{6}, out: []int{2}},
				{out: []int{3}},
				{in: []int{0}, out: []int{7, 8}},
				{tasks: []string{cvo, config}, in: []int{1}, out: []int{4, 5}},
				{tasks: []string{etcdNS, etcdDep}, in: []int{3}, out: []int{6}},
				{tasks: []string{kasNS}, in: []int{3}, out: []int{6}},
				{in: []int{4, 5}, out: []int{0}},
				{tasks: []string{olmNS, olmCO}, in: []int{2}, out: []int{9}},
				{tasks: []string{samples}, in: []int{2}, out: []int{9}},
				{tasks: []string{olmRule, imageRefs}, in: []int{7, 8}},
			},
		},
		"install runs every component in parallel on either side of the Job": {
			graph: Build(mixedPayload(), BuildOptions{Mode: ModeInstall}),
			want: flat(
				[][]string{{cvo}, {config}, {etcdNS, etcdDep}, {kasNS}},
				[][]string{{olmNS, olmCO}, {samples}, {olmRule}, {imageRefs}},
			),
		},
		"reconcile permutes install's parallel nodes by attempt": {
			graph: Build(mixedPayload(), BuildOptions{Mode: ModeReconcile, Attempt: 3}),
			want: flat(
				[][]string{{kasNS}, {etcdNS, etcdDep}, {config}, {cvo}},
				[][]string{{olmNS, olmCO}, {olmRule}, {imageRefs}, {samples}},
			),
		},
		"deletes form one reversed chain per component": {
			graph: BuildDeletes(mixedPayload(), BuildOptions{}),
			want: []nodeSpec{
				{tasks: []string{olmSM, olmDep, olmCRD}},
				{tasks: []string{kasOld}},
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got, want := renderNodes(tt.graph.Nodes), renderSpecs(tt.want); got != want {
				t.Errorf("nodes:\n%s\nwant:\n%s", got, want)
			}
			if err := tt.graph.Validate(); err != nil {
				t.Errorf("graph is invalid: %v", err)
			}
		})
	}
}

func TestBuildReconcileOrder(t *testing.T) {
	var files []string
	for _, c := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		files = append(files, "0000_50_"+c+"_0.yaml")
	}
	order := func(attempt int) string {
		g := Build(fileTasks(files...), BuildOptions{Mode: ModeReconcile, Attempt: attempt})
		var heads []string
		for _, n := range g.Nodes {
			for _, task := range n.Tasks {
				heads = append(heads, task.Component)
			}
		}
		return strings.Join(heads, "")
	}
	t.Run("the same attempt gives the same order", func(t *testing.T) {
		if a, b := order(5), order(5); a != b {
			t.Errorf("attempt 5 gave %s then %s", a, b)
		}
	})
	t.Run("attempts in one group of eight rotate one permutation", func(t *testing.T) {
		base := order(0)
		for attempt := 1; attempt < 8; attempt++ {
			got := order(attempt)
			if got == base || !strings.Contains(base+base, got) {
				t.Errorf("attempt %d gave %s, not a rotation of %s", attempt, got, base)
			}
		}
	})
	t.Run("the next group of eight draws a new permutation", func(t *testing.T) {
		base := order(0)
		if got := order(8); strings.Contains(base+base, got) {
			t.Errorf("attempt 8 gave %s, a rotation of attempt 0's %s", got, base)
		}
	})
	t.Run("reconcile differs from the payload order", func(t *testing.T) {
		if got := order(0); got == "abcdefghij" {
			t.Errorf("attempt 0 kept payload order")
		}
	})
}

func TestRecommendedParallelism(t *testing.T) {
	g := Build(fileTasks("0000_01_a_0", "0000_01_b_0", "0000_01_c_0"), BuildOptions{Mode: ModeInstall})
	tests := map[string]struct {
		mode Mode
		g    *Graph
		want int
	}{
		"update uses sixteen workers":          {ModeUpdate, g, 16},
		"reconcile uses two workers":           {ModeReconcile, g, 2},
		"install uses one worker per node":     {ModeInstall, g, 4},
		"install of an empty graph uses one":   {ModeInstall, &Graph{}, 1},
		"install of a nil graph uses one":      {ModeInstall, nil, 1},
		"install is bounded":                   {ModeInstall, &Graph{Nodes: make([]*Node, 391)}, 32},
		"an unknown mode is treated as update": {Mode("other"), g, 16},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := RecommendedParallelism(tt.mode, tt.g); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}
