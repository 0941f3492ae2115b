package main

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/payload-applier/payload-applier/pkg/apply"
)

// progressPrinter shows apply progress: a line per change, and on a terminal
// a live "n of m" line that is redrawn in place.
type progressPrinter struct {
	w       io.Writer
	enabled bool
	live    bool
	drawn   bool
}

func newProgressPrinter(w io.Writer, enabled bool) *progressPrinter {
	live := false
	if f, ok := w.(*os.File); ok {
		live = term.IsTerminal(int(f.Fd()))
	}
	return &progressPrinter{w: w, enabled: enabled, live: live}
}

func (p *progressPrinter) event(ev apply.Event) {
	if !p.enabled {
		return
	}
	r := ev.Object
	if r.Action != apply.ActionUnchanged {
		p.clear()
		msg := ""
		if r.Message != "" {
			msg = ": " + r.Message
		}
		fmt.Fprintf(p.w, "%-16s %s%s\n", r.Action, r.ID, msg)
	}
	if p.live {
		fmt.Fprintf(p.w, "\r%d of %d done", ev.Done, ev.Total)
		p.drawn = true
	}
}

func (p *progressPrinter) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *progressPrinter) finish() { p.clear() }
