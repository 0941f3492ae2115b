// Package clusterversion is the ClusterVersion contract as pure functions:
// what the operator writes, decided from what it observed. Nothing here
// reads the cluster, a registry or the clock; the operator observes
// (operator.Observe for plan), then Decide judges Upgradeable and the
// target, the engine applies, and Status computes the status to write.
// The condition types and reasons live here, in one place.
package clusterversion
