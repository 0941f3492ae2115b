package apply

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/payload-applier/payload-applier/pkg/payload"
)

// waveRule judges rel's waves against the kinds the cluster serves now, as
// the engine's discovery already knows them: a custom resource is passive
// only when its CRD is established. No refresh is asked for, so a kind
// discovery misses (its CRD arrives in this pass) stays a barrier.
func (e *Engine) waveRule(rel *payload.Release) *payload.WaveRule {
	return payload.NewWaveRule(rel, func(gvk schema.GroupVersionKind) bool {
		_, err := e.mapper.known(gvk.GroupKind(), gvk.Version)
		return err == nil
	})
}
