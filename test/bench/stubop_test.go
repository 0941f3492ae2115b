package main

import (
	"reflect"
	"testing"
	"time"
)

func TestStubOperatorsFollowTheirScript(t *testing.T) {
	eps, err := parseEpisodes("network:Degraded:5s:10s, dns:Unavailable:0s:3s")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC)
	s := newStubOperators(2*time.Second, eps)
	s.now = func() time.Time { return now }
	at := func(d time.Duration, name string) map[string]string {
		now = time.Date(2026, 11, 28, 17, 0, 0, 0, time.UTC).Add(d)
		return s.conditions(name)
	}
	ok := map[string]string{"Available": "True", "Degraded": "False", "Progressing": "False"}
	for _, tc := range []struct {
		at   time.Duration
		name string
		want map[string]string
	}{
		{0, "network", nil}, {0, "dns", nil}, {0, "etcd", nil},
		{time.Second, "network", nil},
		{2 * time.Second, "etcd", ok},
		{2 * time.Second, "dns", map[string]string{"Available": "False", "Degraded": "False", "Progressing": "False"}},
		{5 * time.Second, "dns", ok},
		{6 * time.Second, "network", ok},
		{7 * time.Second, "network", map[string]string{"Available": "True", "Degraded": "True", "Progressing": "False"}},
		{17 * time.Second, "network", ok},
	} {
		if got := at(tc.at, tc.name); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s at %s: %v, want %v", tc.name, tc.at, got, tc.want)
		}
	}
}

func TestEpisodesRefuseWhatTheyCannotPlay(t *testing.T) {
	for _, spec := range []string{"network", "network:Sad:0s:1s", "network:Degraded:soon:1s", "network:Degraded:0s:0s", ":Degraded:0s:1s"} {
		if _, err := parseEpisodes(spec); err == nil {
			t.Errorf("%q accepted", spec)
		}
	}
	if eps, err := parseEpisodes(""); err != nil || len(eps) != 0 {
		t.Errorf("no episodes: %v %v", eps, err)
	}
}
