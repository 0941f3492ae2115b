// Package updategraphtest serves update-graph upstreams that misbehave,
// for tests.
package updategraphtest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// BlackHole is an upstream that accepts connections, reads each request
// and never answers, until HangUp.
type BlackHole struct {
	// URL is the upstream's graph URL.
	URL string
	// Asked closes once a request has come in; HungUp once a client that
	// asked closes its connection, which it does when it gives the
	// request up.
	Asked, HungUp <-chan struct{}

	asked, hungUp  chan struct{}
	askOnce, hOnce sync.Once
	mu             sync.Mutex
	conns          []net.Conn
	hangingUp      bool
}

// NewBlackHole listens on loopback until the test ends.
func NewBlackHole(t testing.TB) *BlackHole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &BlackHole{URL: "http://" + ln.Addr().String() + "/graph", asked: make(chan struct{}), hungUp: make(chan struct{})}
	h.Asked, h.HungUp = h.asked, h.hungUp
	go h.serve(ln)
	t.Cleanup(func() {
		_ = ln.Close()
		h.HangUp()
	})
	return h
}

func (h *BlackHole) serve(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		if h.hangingUp {
			_ = conn.Close()
		} else {
			h.conns = append(h.conns, conn)
		}
		h.mu.Unlock()
		go h.hold(conn)
	}
}

// hold keeps a connection open while its client waits.
func (h *BlackHole) hold(conn net.Conn) {
	// A connection dialed for a request given up meanwhile may sit unused
	// in the client's pool: only one that carried a request counts.
	if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
		return
	}
	h.askOnce.Do(func() { close(h.asked) })
	_, _ = io.Copy(io.Discard, conn)
	h.mu.Lock()
	ours := !h.hangingUp
	h.mu.Unlock()
	if ours {
		h.hOnce.Do(func() { close(h.hungUp) })
	}
}

// HangUp closes every held connection and each new one at once, so that
// clients fail fast instead of waiting.
func (h *BlackHole) HangUp() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hangingUp = true
	for _, c := range h.conns {
		_ = c.Close()
	}
	h.conns = nil
}
