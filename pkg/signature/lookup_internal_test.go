package signature

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A store that cannot be used says why in its return value too: library-go's
// parallel store may stop before it reads an answer given through the
// callback (both ready, select picks either), and the refusal must still
// name the store.
func TestAnUnusableStoreReturnsWhy(t *testing.T) {
	s := unusable{where: "spec.signatureStores[0] https://store", err: errors.New("CA ConfigMap missing")}
	err := s.Signatures(context.Background(), "", "sha256:0", func(context.Context, []byte, error) (bool, error) { return false, nil })
	if err == nil || !strings.Contains(err.Error(), "spec.signatureStores[0] https://store not used: CA ConfigMap missing") {
		t.Fatalf("err %v, want why the store is not used", err)
	}
}
