package e2e

import (
	"os"
	"testing"

	"github.com/payload-applier/payload-applier/test/cluster"
)

// testCluster is the real control plane every test in this package uses.
// Tests isolate themselves with their own namespaces and object names.
var testCluster *cluster.Cluster

func TestMain(m *testing.M) {
	// Two operator identities let tests tell instances apart in the audit log.
	os.Exit(cluster.RunTests(m, cluster.Options{Users: []cluster.User{
		{Name: "operator-a", Groups: []string{"system:masters"}},
		{Name: "operator-b", Groups: []string{"system:masters"}},
		// A user with no role at all, for requests that must be forbidden.
		{Name: "nobody"},
	}}, &testCluster))
}
