package cluster

import (
	"os"
	"testing"
)

// testCluster is the control plane shared by this package's tests.
var testCluster *Cluster

// limitedUser has no RBAC bindings; tests use it to see a forbidden request.
const limitedUser = "limited"

func TestMain(m *testing.M) {
	os.Exit(RunTests(m, Options{Users: []User{{Name: limitedUser, Groups: []string{"payload-applier:testers"}}}}, &testCluster))
}
