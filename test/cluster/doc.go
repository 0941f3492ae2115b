// Package cluster runs a real local control plane for end-to-end tests:
// etcd, kube-apiserver and kube-controller-manager, built with the Go
// toolchain from the pinned tools module in test/cluster/tools. Nothing is
// faked and nothing is downloaded except Go modules.
//
// A test package uses it from TestMain:
//
//	var testCluster *cluster.Cluster
//
//	func TestMain(m *testing.M) {
//		os.Exit(cluster.RunTests(m, cluster.Options{}, &testCluster))
//	}
//
// and then testCluster.RESTConfig(), testCluster.CreateNamespace(t) and the
// audit helpers (AuditMark, AuditSince, FilterAudit, CountAudit,
// WaitForAudit) in its tests. The code under test acts as ApplierUser
// (ApplierRESTConfig, ApplierKubeconfig), apart from the tests' AdminUser,
// and an AuditFilter matches only ApplierUser's requests unless it names
// another user or AnyUser. docs/testing.md describes the flags, the cache,
// the fixture CRDs and how to count requests.
//
// Process lifetime caveats. Start runs each component in its own process
// group and Stop signals exactly those groups. If the test binary is killed
// outright (SIGKILL, or a panic on -timeout), Linux's parent-death signal
// kills the components; their temporary data directory stays behind in
// $TMPDIR as payload-applier-cluster-*. The parent-death signal is tied to
// the OS thread that started a component, which the Go runtime keeps alive
// unless Start runs on a goroutine locked with runtime.LockOSThread that
// then exits. On other systems than Linux there is no parent-death signal.
package cluster
