// Package heapsample measures the peak heap of a benchmark's work, which
// testing's -benchmem does not report: it counts allocations, not how much
// is live at once.
package heapsample

import (
	"runtime"
	"time"
)

// Peak records into peak the largest heap in use, sampled every 5 ms, until
// stop is called. Call runtime.GC first so that earlier garbage does not
// count.
func Peak(peak *uint64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > *peak {
				*peak = ms.HeapInuse
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); <-finished }
}
