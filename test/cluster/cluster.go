package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// AdminUser is the user name behind RESTConfig and Kubeconfig, the
// identity of a test's own setup and checks; it is in system:masters.
const AdminUser = "admin"

// ApplierUser is the identity of the code under test: payload-applier
// processes given ApplierKubeconfig and engines and operators built on
// ApplierRESTConfig. It is in system:masters like AdminUser, and apart from
// it so that the audit log tells the applier's requests from the test's and
// from kube-controller-manager's. AuditFilter matches it by default.
const ApplierUser = "payload-applier"

// controllerManagerUser is the identity of kube-controller-manager, in
// system:masters. All its controllers share it (no per-controller service
// account credentials: issuing those would add seconds to every start); the
// audit userAgent ends in the controller's name, e.g.
// ".../generic-garbage-collector".
const controllerManagerUser = "system:kube-controller-manager"

// User is an extra identity accepted by the apiserver through its static
// token file, for tests that must act without admin rights.
type User struct {
	// Name is the user name the apiserver authenticates.
	Name string
	// Groups the user belongs to, beyond system:authenticated, which every
	// authenticated user gets. RBAC gives a user with no bindings no access.
	Groups []string
}

// Options configures Start. The zero value is a working configuration.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager.
	// Empty means EnsureBinaries.
	BinDir string
	// Users are extra token users; see (*Cluster).UserRESTConfig.
	Users []User
	// TempDir is where the cluster's data directory is created.
	// Empty means os.TempDir().
	TempDir string
	// KeepDataDir keeps the data directory (etcd data, logs, audit log,
	// kubeconfig) after Stop, for debugging.
	KeepDataDir bool
	// StartTimeout bounds each process's wait for readiness and the CRD
	// installation. Zero means 90 seconds.
	StartTimeout time.Duration
	// StopGracePeriod is how long Stop waits after SIGTERM before SIGKILL.
	// Zero means 10 seconds.
	StopGracePeriod time.Duration
	// SkipCRDs leaves out the ClusterVersion, ClusterOperator and fixture
	// CRDs that Start otherwise installs.
	SkipCRDs bool
	// DisabledControllers are kube-controller-manager controllers not to
	// run, e.g. "deployment-controller" where a test plays it.
	DisabledControllers []string
}

func (o Options) withDefaults() Options {
	if o.StartTimeout <= 0 {
		o.StartTimeout = 90 * time.Second
	}
	if o.StopGracePeriod <= 0 {
		o.StopGracePeriod = 10 * time.Second
	}
	return o
}

func (o Options) validate() error {
	seen := map[string]bool{AdminUser: true, ApplierUser: true, controllerManagerUser: true, AnyUser: true}
	for _, u := range o.Users {
		if u.Name == "" || strings.ContainsAny(u.Name, ",\"\n") {
			return fmt.Errorf("invalid user name %q", u.Name)
		}
		if seen[u.Name] {
			return fmt.Errorf("user %q is defined twice or is reserved", u.Name)
		}
		seen[u.Name] = true
		for _, g := range u.Groups {
			if g == "" || strings.ContainsAny(g, ",\"\n") {
				return fmt.Errorf("user %q: invalid group name %q", u.Name, g)
			}
		}
	}
	return nil
}

// Versions are the versions the running control plane reports.
type Versions struct {
	Etcd                  string
	KubeAPIServer         string
	KubeControllerManager string
}

// Cluster is a running etcd, kube-apiserver and kube-controller-manager,
// started by Start and stopped by Stop. Its methods are safe for concurrent
// use.
type Cluster struct {
	opts       Options
	binDir     string
	dataDir    string
	pki        *pki
	tokens     map[string]string // user name to bearer token
	kubeconfig string
	// applierKubeconfig is kubeconfig's counterpart for ApplierUser.
	applierKubeconfig string
	auditLog          string
	host              string
	etcdURL           string
	kcmURL            string
	versions          Versions

	// procsMu guards procs, which RestartAPIServer changes while tests run.
	procsMu sync.Mutex
	procs   []*process // in start order
	// apiServerArgs are kube-apiserver's flags, reused by RestartAPIServer.
	apiServerArgs []string
	stopOnce      sync.Once
	stopErr       error
}

// Start launches a control plane on free loopback ports with a fresh data
// directory, waits until it is ready, and installs the ClusterVersion,
// ClusterOperator and fixture CRDs, waiting until they are Established and
// discoverable. ctx bounds the build (when Options.BinDir is empty) and the
// start; the running cluster outlives it until Stop. On error nothing is
// left running and the data directory is kept for its logs.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	binDir := opts.BinDir
	if binDir == "" {
		var err error
		if binDir, err = EnsureBinaries(ctx); err != nil {
			return nil, err
		}
	}
	dataDir, err := os.MkdirTemp(opts.TempDir, "payload-applier-cluster-")
	if err != nil {
		return nil, fmt.Errorf("create cluster data directory: %w", err)
	}
	c := &Cluster{
		opts:              opts,
		binDir:            binDir,
		dataDir:           dataDir,
		kubeconfig:        filepath.Join(dataDir, "admin.kubeconfig"),
		applierKubeconfig: filepath.Join(dataDir, "applier.kubeconfig"),
		auditLog:          filepath.Join(dataDir, "audit.log"),
	}
	if err := c.start(ctx); err != nil {
		// Keep the logs that the error points at.
		if stopErr := c.stopProcesses(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, fmt.Errorf("%w\n(cluster data kept in %s)", err, dataDir)
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	for _, dir := range []string{"pki", "logs"} {
		if err := os.MkdirAll(filepath.Join(c.dataDir, dir), 0o755); err != nil {
			return err
		}
	}
	var err error
	if c.pki, err = generatePKI(filepath.Join(c.dataDir, "pki")); err != nil {
		return err
	}
	if err := c.writeTokens(); err != nil {
		return err
	}
	if err := os.WriteFile(c.auditPolicyPath(), []byte(auditPolicy), 0o644); err != nil {
		return fmt.Errorf("write audit policy: %w", err)
	}

	const attempts = 3
	for attempt := 1; ; attempt++ {
		err = c.startProcesses(ctx)
		if err == nil {
			break
		}
		if stopErr := c.stopProcesses(); stopErr != nil {
			return errors.Join(err, stopErr)
		}
		if !errors.Is(err, errPortInUse) || attempt == attempts {
			return err
		}
		fmt.Fprintf(os.Stderr, "cluster: a port was taken while starting (%v); retrying with new ports\n", firstLine(err))
	}

	return c.loadVersions(ctx)
}

// startProcesses starts etcd, kube-apiserver and kube-controller-manager in
// turn, each only once the one before it is ready. The CRDs go in before
// the controller manager starts, so that its garbage collector watches their
// kinds from the outset instead of after its next 30-second discovery pass.
func (c *Cluster) startProcesses(ctx context.Context) error {
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	etcdPort, peerPort, apiPort, kcmPort := ports[0], ports[1], ports[2], ports[3]
	c.etcdURL = "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	c.host = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	c.kcmURL = "https://127.0.0.1:" + strconv.Itoa(kcmPort)
	if err := c.writeKubeconfigs(); err != nil {
		return err
	}

	// A retry must not reuse the member data of an etcd bound to other ports.
	etcdData := filepath.Join(c.dataDir, "etcd")
	if err := os.RemoveAll(etcdData); err != nil {
		return err
	}
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	if _, err := c.startOne(ctx, etcdBinary, []string{
		"--name=default",
		"--data-dir=" + etcdData,
		"--listen-client-urls=" + c.etcdURL,
		"--advertise-client-urls=" + c.etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		// Durability is pointless for a throwaway cluster and fsync dominates latency.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}, c.checkEtcd); err != nil {
		return err
	}

	p := c.pki
	c.apiServerArgs = []string{
		"--advertise-address=127.0.0.1",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--etcd-servers=" + c.etcdURL,
		"--cert-dir=" + filepath.Join(c.dataDir, "pki"),
		"--tls-cert-file=" + p.servingCrt,
		"--tls-private-key-file=" + p.servingKey,
		"--token-auth-file=" + c.tokenFilePath(),
		"--authorization-mode=RBAC",
		// As real clusters: the CVO's version- pods are privileged.
		"--allow-privileged=true",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + p.saPub,
		"--service-account-signing-key-file=" + p.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--audit-policy-file=" + c.auditPolicyPath(),
		"--audit-log-path=" + c.auditLog,
		"--audit-log-format=json",
		// Blocking writes each event before the request proceeds, so a
		// request's RequestReceived event is in the file by the time its
		// client has the response.
		"--audit-log-mode=blocking",
		// The log must never rotate: audit marks are byte offsets.
		"--audit-log-maxsize=1000000",
		"--profiling=false",
		"--v=1",
	}
	if _, err := c.startOne(ctx, apiServerBin, c.apiServerArgs, c.checkAPIServer); err != nil {
		return err
	}

	if !c.opts.SkipCRDs {
		crds, err := startupCRDs()
		if err != nil {
			return err
		}
		crdCtx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
		defer cancel()
		if err := ApplyCRDs(crdCtx, c.RESTConfig(), crds); err != nil {
			return err
		}
	}

	_, err = c.startOne(ctx, kcmBinary, []string{
		"--kubeconfig=" + c.kcmKubeconfigPath(),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(kcmPort),
		"--cert-dir=" + filepath.Join(c.dataDir, "pki"),
		"--tls-cert-file=" + p.servingCrt,
		"--tls-private-key-file=" + p.servingKey,
		"--controllers=" + strings.Join(append([]string{"*"}, prefixed("-", c.opts.DisabledControllers)...), ","),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + p.saKey,
		"--root-ca-file=" + p.caCert,
		"--profiling=false",
		"--v=1",
	}, c.checkControllerManager)
	return err
}

// startOne starts one binary and waits until check passes.
func (c *Cluster) startOne(ctx context.Context, name string, args []string, check func(context.Context) error) (*process, error) {
	p, err := startProcess(name, filepath.Join(c.binDir, name), filepath.Join(c.LogDir(), name+".log"), args, false)
	if err != nil {
		return nil, err
	}
	c.procsMu.Lock()
	c.procs = append(c.procs, p)
	c.procsMu.Unlock()
	readyCtx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	if err := p.waitReady(readyCtx, check); err != nil {
		return nil, err
	}
	return p, nil
}

func (c *Cluster) checkEtcd(ctx context.Context) error {
	body, err := c.get(ctx, http.DefaultClient, c.etcdURL+"/health", "")
	if err != nil {
		return err
	}
	var health struct{ Health string }
	if json.Unmarshal(body, &health) != nil || health.Health != "true" {
		return fmt.Errorf("etcd /health: %s", strings.TrimSpace(string(body)))
	}
	return nil
}

func (c *Cluster) checkAPIServer(ctx context.Context) error {
	_, err := c.get(ctx, c.httpsClient(), c.host+"/readyz", c.tokens[AdminUser])
	return err
}

// controllersWaitedFor must be running before Start returns: tests rely on
// namespace deletion and garbage collection.
var controllersWaitedFor = []string{"namespace-controller", "garbage-collector-controller"}

func (c *Cluster) checkControllerManager(ctx context.Context) error {
	// /healthz is always allowed. The controller manager answers it before
	// it starts its controllers and adds one check per controller once they
	// have all started, so wait for the ones tests depend on.
	body, err := c.get(ctx, c.httpsClient(), c.kcmURL+"/healthz?verbose", "")
	if err != nil {
		return err
	}
	for _, name := range controllersWaitedFor {
		if !strings.Contains(string(body), "[+]"+name+" ok") {
			return fmt.Errorf("controller %s not started yet", name)
		}
	}
	return nil
}

func (c *Cluster) httpsClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.pki.caData)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// get returns the body of a 200 response.
func (c *Cluster) get(ctx context.Context, client *http.Client, url, token string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, firstLine(errors.New(string(body))))
	}
	return body, nil
}

// loadVersions asks each component for its version.
func (c *Cluster) loadVersions(ctx context.Context) error {
	body, err := c.get(ctx, http.DefaultClient, c.etcdURL+"/version", "")
	if err != nil {
		return fmt.Errorf("etcd version: %w", err)
	}
	var ev struct {
		Server string `json:"etcdserver"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return fmt.Errorf("etcd version: %w", err)
	}
	c.versions.Etcd = ev.Server

	dc, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	sv, err := dc.ServerVersion()
	if err != nil {
		return fmt.Errorf("kube-apiserver version: %w", err)
	}
	c.versions.KubeAPIServer = sv.GitVersion

	out, err := exec.CommandContext(ctx, filepath.Join(c.binDir, kcmBinary), "--version").Output()
	if err != nil {
		return fmt.Errorf("kube-controller-manager --version: %w", err)
	}
	c.versions.KubeControllerManager = strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes ")
	return nil
}

// Stop stops the processes Start launched, newest first: SIGTERM to each
// process group, then SIGKILL after the grace period. It then removes the
// data directory unless Options.KeepDataDir is set. Calling Stop again
// returns the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		err := c.stopProcesses()
		if !c.opts.KeepDataDir {
			if rmErr := os.RemoveAll(c.dataDir); rmErr != nil {
				err = errors.Join(err, fmt.Errorf("remove cluster data directory: %w", rmErr))
			}
		}
		c.stopErr = err
	})
	return c.stopErr
}

func (c *Cluster) stopProcesses() error {
	c.procsMu.Lock()
	defer c.procsMu.Unlock()
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		if err := c.procs[i].stop(c.opts.StopGracePeriod); err != nil {
			errs = append(errs, err)
		}
	}
	c.procs = nil
	return errors.Join(errs...)
}

// Host is the apiserver URL, https://127.0.0.1:<port>.
func (c *Cluster) Host() string { return c.host }

// EtcdURL is etcd's client URL.
func (c *Cluster) EtcdURL() string { return c.etcdURL }

// Kubeconfig is the path of a kubeconfig file for the admin user.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// ApplierKubeconfig is the path of a kubeconfig file for ApplierUser, for
// payload-applier processes under test.
func (c *Cluster) ApplierKubeconfig() string { return c.applierKubeconfig }

// DataDir is the cluster's temporary directory.
func (c *Cluster) DataDir() string { return c.dataDir }

// LogDir holds etcd.log, kube-apiserver.log and kube-controller-manager.log.
func (c *Cluster) LogDir() string { return filepath.Join(c.dataDir, "logs") }

// AuditLogPath is the apiserver's audit log: one audit.k8s.io/v1 Event as
// JSON per line.
func (c *Cluster) AuditLogPath() string { return c.auditLog }

// Versions reports what the running components say they are.
func (c *Cluster) Versions() Versions { return c.versions }

// RESTConfig returns a new config for the admin user (system:masters) with
// a QPS and burst high enough that client-side throttling never shapes a test.
func (c *Cluster) RESTConfig() *rest.Config {
	cfg, _ := c.UserRESTConfig(AdminUser)
	return cfg
}

// ApplierRESTConfig is RESTConfig for ApplierUser, for engines and
// operators under test.
func (c *Cluster) ApplierRESTConfig() *rest.Config {
	cfg, _ := c.UserRESTConfig(ApplierUser)
	return cfg
}

// UserRESTConfig returns a new config that authenticates as the named user,
// which must be AdminUser, ApplierUser or one of Options.Users.
func (c *Cluster) UserRESTConfig(name string) (*rest.Config, error) {
	token, ok := c.tokens[name]
	if !ok {
		return nil, fmt.Errorf("no token user %q; add it to Options.Users", name)
	}
	return &rest.Config{
		Host:            c.host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), c.pki.caData...)},
		QPS:             200,
		Burst:           400,
		UserAgent:       "payload-applier-tests/" + name,
	}, nil
}

func (c *Cluster) tokenFilePath() string   { return filepath.Join(c.dataDir, "pki", "tokens.csv") }
func (c *Cluster) auditPolicyPath() string { return filepath.Join(c.dataDir, "audit-policy.yaml") }
func (c *Cluster) kcmKubeconfigPath() string {
	return filepath.Join(c.dataDir, "kube-controller-manager.kubeconfig")
}

// writeTokens creates the static token file: admin, the applier, the
// controller manager and every Options.Users entry.
func (c *Cluster) writeTokens() error {
	users := append([]User{
		{Name: AdminUser, Groups: []string{"system:masters"}},
		{Name: ApplierUser, Groups: []string{"system:masters"}},
		{Name: controllerManagerUser, Groups: []string{"system:masters"}},
	}, c.opts.Users...)
	c.tokens = make(map[string]string, len(users))
	var b strings.Builder
	for i, u := range users {
		token, err := randomToken()
		if err != nil {
			return err
		}
		c.tokens[u.Name] = token
		// token,user,uid,"group1,group2"
		fmt.Fprintf(&b, "%s,%s,uid-%d,\"%s\"\n", token, u.Name, i, strings.Join(u.Groups, ","))
	}
	return os.WriteFile(c.tokenFilePath(), []byte(b.String()), 0o600)
}

func (c *Cluster) writeKubeconfigs() error {
	for path, user := range map[string]string{c.kubeconfig: AdminUser, c.applierKubeconfig: ApplierUser, c.kcmKubeconfigPath(): controllerManagerUser} {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.host, CertificateAuthorityData: c.pki.caData}
		cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: c.tokens[user]}
		cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
		cfg.CurrentContext = "local"
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			return fmt.Errorf("write kubeconfig %s: %w", path, err)
		}
	}
	return nil
}

// auditPolicy records every request at Metadata level, with all stages, so
// both RequestReceived (written before the request is served) and
// ResponseComplete (with the status code) are in the log. DELETEs are
// recorded with their body, so tests can read their preconditions.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Request
  verbs: ["delete"]
- level: Metadata
`

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}
