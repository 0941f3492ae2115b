package apply

import (
	"context"
	"regexp"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// WarningHandler routes the apiserver's warnings: those answering a
// request made with a context from collectWarnings go to its collector,
// so that a create can tell which fields the server dropped; the others
// are logged, as client-go's default does. ClientConfig installs it.
type WarningHandler struct{}

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
func (WarningHandler) HandleWarningHeaderWithContext(ctx context.Context, code int, _ string, text string) {
	if c, ok := ctx.Value(warningsKey{}).(*warnings); ok {
		c.add(text)
		return
	}
	if code == 299 && text != "" {
		klog.FromContext(ctx).Info("Warning from the apiserver", "warning", text)
	}
}

// WithWarnings returns cfg with WarningHandler, unless cfg handles
// warnings itself.
func WithWarnings(cfg *rest.Config) *rest.Config {
	if cfg.WarningHandler != nil || cfg.WarningHandlerWithContext != nil {
		return cfg
	}
	rc := rest.CopyConfig(cfg)
	rc.WarningHandlerWithContext = WarningHandler{}
	return rc
}

type warningsKey struct{}

// warnings are the warnings of the requests made with one context.
type warnings struct {
	mu    sync.Mutex
	texts []string
}

func (w *warnings) add(text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
}

// collectWarnings returns a context whose requests' warnings the returned
// collector keeps.
func collectWarnings(ctx context.Context) (context.Context, *warnings) {
	w := &warnings{}
	return context.WithValue(ctx, warningsKey{}, w), w
}

// unknownFieldWarning is the apiserver's warning for a field it dropped
// under fieldValidation=Warn.
var unknownFieldWarning = regexp.MustCompile(`^unknown field "([^"]+)"$`)

// unknownFields are the fields the warnings say the server dropped, as
// paths in the form server-side apply names them (".spec.x").
func (w *warnings) unknownFields() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var paths []string
	for _, text := range w.texts {
		if m := unknownFieldWarning.FindStringSubmatch(text); m != nil {
			paths = append(paths, "."+m[1])
		}
	}
	return paths
}
