package updategraphtest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/payload-applier/payload-applier/pkg/updategraph/updategraphtest"
)

func TestABlackHoleHoldsARequestUntilTheClientGivesUpOrItHangsUp(t *testing.T) {
	h := updategraphtest.NewBlackHole(t)
	ask := func(ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL, nil)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				err = errors.New("answered")
			}
			done <- err
		}()
		return done
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := ask(ctx)
	select {
	case <-h.Asked:
	case <-time.After(20 * time.Second):
		t.Fatal("the request never came in")
	}
	select {
	case err := <-first:
		t.Fatalf("the black hole answered: %v", err)
	case <-h.HungUp:
		t.Fatal("HungUp closed while the client still waits")
	default:
	}
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("given up: %v, want context.Canceled", err)
	}
	select {
	case <-h.HungUp:
	case <-time.After(20 * time.Second):
		t.Fatal("HungUp did not close when the client gave up")
	}

	h.HangUp()
	if err := <-ask(context.Background()); err == nil || err.Error() == "answered" {
		t.Errorf("after HangUp a request must fail at once, got %v", err)
	}
}
