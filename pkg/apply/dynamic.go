package apply

import "k8s.io/client-go/dynamic"

// DynamicClient is the client the engine reads and writes objects with;
// the acceptance judge reads ClusterVersion fields the typed API lacks
// through it.
func (e *Engine) DynamicClient() dynamic.Interface { return e.dynamic }
