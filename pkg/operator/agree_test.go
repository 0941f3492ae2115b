package operator

import (
	"testing"

	"github.com/payload-applier/payload-applier/pkg/clusterversion"
	"github.com/payload-applier/payload-applier/pkg/signature"
	"github.com/payload-applier/payload-applier/pkg/updategraph"
)

// TestTheModelAgreesWithTheLayersItCannotImport: pkg/clusterversion
// imports neither the update graph nor the signature packages, which
// reach the network; where it names their bounds and reasons, they agree.
func TestTheModelAgreesWithTheLayersItCannotImport(t *testing.T) {
	if clusterversion.MaxRiskURLBytes != updategraph.MaxRiskURLBytes {
		t.Errorf("status bounds a risk URL to %d bytes, the graph to %d", clusterversion.MaxRiskURLBytes, updategraph.MaxRiskURLBytes)
	}
	if clusterversion.MaxRiskNameBytes != updategraph.MaxRiskNameBytes {
		t.Errorf("status bounds a risk name to %d bytes, the graph to %d", clusterversion.MaxRiskNameBytes, updategraph.MaxRiskNameBytes)
	}
	if clusterversion.ReasonImageVerificationFailed != signature.ReasonImageVerificationFailed {
		t.Errorf("ReleaseAccepted's reason %q, the verifier's %q", clusterversion.ReasonImageVerificationFailed, signature.ReasonImageVerificationFailed)
	}
}
