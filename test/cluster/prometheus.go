package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// PrometheusBinary is the Debian package prometheus's server, which
// `make tools` installs.
const PrometheusBinary = "prometheus"

// PrometheusOptions configure a Prometheus started by StartPrometheus.
type PrometheusOptions struct {
	// Targets are host:port addresses scraped over plain HTTP at /metrics,
	// in the job "test".
	Targets []string
	// Jobs are more scrape jobs, by job name, each with its targets as
	// Targets: alert rules match on job="cluster-version-operator".
	Jobs map[string][]string
	// ScrapeInterval is also the rule evaluation interval; default 1s.
	ScrapeInterval time.Duration
	// RuleFiles are loaded as alerting and recording rules.
	RuleFiles []string
	// KeepDataDir keeps the data directory (log, query log, TSDB) on Stop.
	KeepDataDir bool
}

// Prometheus is a real Prometheus server on loopback with its own data
// directory, for tests of queries, scrapes and rules.
type Prometheus struct {
	url     string
	dataDir string
	keep    bool
	proc    *process
}

// FindPrometheus returns the path of the prometheus binary, or an error
// saying how to install it.
func FindPrometheus() (string, error) {
	path, err := exec.LookPath(PrometheusBinary)
	if err != nil {
		return "", fmt.Errorf("%s is not installed: `make tools` installs it (Debian package prometheus)", PrometheusBinary)
	}
	return path, nil
}

// StartPrometheus starts a Prometheus scraping opts.Targets and waits until
// it is ready. Stop stops it.
func StartPrometheus(ctx context.Context, opts PrometheusOptions) (*Prometheus, error) {
	binary, err := FindPrometheus()
	if err != nil {
		return nil, err
	}
	if opts.ScrapeInterval <= 0 {
		opts.ScrapeInterval = time.Second
	}
	dir, err := os.MkdirTemp("", "payload-applier-prometheus-*")
	if err != nil {
		return nil, err
	}
	p := &Prometheus{dataDir: dir, keep: opts.KeepDataDir}
	if err := p.writeConfig(opts); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		err = p.start(ctx, binary)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, errPortInUse) || attempt == 4 {
			if !p.keep {
				os.RemoveAll(dir)
			}
			return nil, err
		}
	}
}

func (p *Prometheus) writeConfig(opts PrometheusOptions) error {
	interval := opts.ScrapeInterval.String()
	config := map[string]any{
		"global": map[string]any{
			"scrape_interval":     interval,
			"evaluation_interval": interval,
			"query_log_file":      p.QueryLogPath(),
		},
	}
	var jobs []any
	if len(opts.Targets) > 0 || len(opts.Jobs) == 0 {
		jobs = append(jobs, map[string]any{
			"job_name":       "test",
			"static_configs": []any{map[string]any{"targets": opts.Targets}},
		})
	}
	for name, targets := range opts.Jobs {
		jobs = append(jobs, map[string]any{
			"job_name":       name,
			"static_configs": []any{map[string]any{"targets": targets}},
		})
	}
	config["scrape_configs"] = jobs
	if len(opts.RuleFiles) > 0 {
		config["rule_files"] = opts.RuleFiles
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return err
	}
	return os.WriteFile(p.configPath(), data, 0o644)
}

func (p *Prometheus) start(ctx context.Context, binary string) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	listen := fmt.Sprintf("127.0.0.1:%d", ports[0])
	p.url = "http://" + listen
	proc, err := startProcess("prometheus", binary, filepath.Join(p.dataDir, "prometheus.log"), []string{
		"--config.file=" + p.configPath(),
		"--storage.tsdb.path=" + filepath.Join(p.dataDir, "tsdb"),
		"--web.listen-address=" + listen,
		"--log.level=info",
	}, false)
	if err != nil {
		return err
	}
	p.proc = proc
	readyCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := proc.waitReady(readyCtx, p.checkReady); err != nil {
		_ = proc.stop(5 * time.Second)
		return err
	}
	return nil
}

func (p *Prometheus) checkReady(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/-/ready", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/-/ready: %s", resp.Status)
	}
	return nil
}

// Stop stops Prometheus and removes its data directory unless it is kept.
func (p *Prometheus) Stop() error {
	err := p.proc.stop(10 * time.Second)
	if !p.keep {
		if rmErr := os.RemoveAll(p.dataDir); rmErr != nil && err == nil {
			err = rmErr
		}
	}
	return err
}

// URL is the base of Prometheus's HTTP API, http://127.0.0.1:<port>.
func (p *Prometheus) URL() string { return p.url }

// DataDir holds the configuration, the log, the query log and the TSDB.
func (p *Prometheus) DataDir() string { return p.dataDir }

// LogPath is Prometheus's own log.
func (p *Prometheus) LogPath() string { return filepath.Join(p.dataDir, "prometheus.log") }

// QueryLogPath is where Prometheus logs every query it evaluates.
func (p *Prometheus) QueryLogPath() string { return filepath.Join(p.dataDir, "queries.log") }

func (p *Prometheus) configPath() string { return filepath.Join(p.dataDir, "prometheus.yml") }

// LoggedQuery is one entry of the query log.
type LoggedQuery struct {
	Query string
	Time  time.Time
	// Path is the API path it came through, empty for rule evaluations.
	Path string
}

// QueryLog returns the queries Prometheus has logged, oldest first.
func (p *Prometheus) QueryLog() ([]LoggedQuery, error) {
	f, err := os.Open(p.QueryLogPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []LoggedQuery
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 64<<10), 16<<20)
	for scanner.Scan() {
		var entry struct {
			Params struct {
				Query string `json:"query"`
			} `json:"params"`
			HTTPRequest struct {
				Path string `json:"path"`
			} `json:"httpRequest"`
			TS time.Time `json:"ts"`
		}
		if err := json.Unmarshal(scanner.Bytes(), &entry); err != nil {
			return nil, fmt.Errorf("query log %s: %w", p.QueryLogPath(), err)
		}
		out = append(out, LoggedQuery{Query: entry.Params.Query, Time: entry.TS, Path: entry.HTTPRequest.Path})
	}
	return out, scanner.Err()
}

// Query evaluates query at Prometheus's now and returns the raw "data" of
// the answer, for tests that check what Prometheus holds.
func (p *Prometheus) Query(ctx context.Context, query string) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/api/v1/query?query="+url.QueryEscape(query), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var answer struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, fmt.Errorf("query %q: %s: %w", query, resp.Status, err)
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("query %q: %s: %s", query, resp.Status, answer.Error)
	}
	return answer.Data, nil
}

// WaitForQuery polls query until its answer's data contains want, or ctx
// ends; for example until a scrape has brought a series in.
func (p *Prometheus) WaitForQuery(ctx context.Context, query, want string) error {
	var last string
	for {
		data, err := p.Query(ctx, query)
		if err == nil && strings.Contains(string(data), want) {
			return nil
		}
		last = fmt.Sprintf("%s %v", data, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("query %q: no answer containing %q before %w; last: %s", query, want, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// StartPrometheusForTest starts a Prometheus for t and stops it when t
// ends, keeping its data directory when t failed. It fails t, never skips
// it, when the binary is missing.
func StartPrometheusForTest(t testing.TB, opts PrometheusOptions) *Prometheus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts.KeepDataDir = true // decided at cleanup
	p, err := StartPrometheus(ctx, opts)
	if err != nil {
		t.Fatalf("start Prometheus: %v", err)
	}
	t.Cleanup(func() {
		p.keep = t.Failed() || os.Getenv(EnvKeep) != ""
		if err := p.Stop(); err != nil {
			t.Errorf("stop Prometheus: %v", err)
		}
		if p.keep {
			t.Logf("kept Prometheus's data in %s (log %s, query log %s)", p.DataDir(), p.LogPath(), p.QueryLogPath())
		}
	})
	return p
}
