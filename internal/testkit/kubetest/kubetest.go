// Package kubetest runs a real Kubernetes API for tests: an embedded etcd
// and a kube-apiserver process (and, on request, a kube-controller-manager
// process) on loopback, with their certificates, tokens and keys under
// t.TempDir(). No kubelet runs: pods stay Pending unless a test writes
// their status (Kubelet.Play) or has their commands run as local processes
// (Kubelet.Exec).
//
// The binaries are built by hack/kube-binaries.sh (which .ci/run calls)
// into a cache keyed by the Kubernetes version matching cairn's k8s.io/*
// modules; BinDir says where. A missing binary fails the test, naming the
// script: no test skips for want of them.
//
// It is for tests only: no production package imports it.
package kubetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// BinDirEnv names the environment variable that overrides BinDir.
const BinDirEnv = "CAIRN_KUBE_BIN_DIR"

// Script is the script that builds the binaries, relative to the module.
const Script = "hack/kube-binaries.sh"

// startTimeout bounds a process's start until /readyz answers 200 (the
// machine running the tests may be busy).
const startTimeout = 90 * time.Second

// stopTimeout is how long a process has to exit after SIGTERM before it
// is killed.
const stopTimeout = 10 * time.Second

// Version returns the Kubernetes version whose binaries the tests run:
// v1.X.Y for cairn's k8s.io/client-go v0.X.Y, read from the build
// information or, in test binaries (which carry none of their
// dependencies), from the go.mod above the working directory. The error
// says that neither names client-go.
func Version() (string, error) {
	v := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/client-go" {
				v = d.Version
				if d.Replace != nil {
					v = d.Replace.Version
				}
			}
		}
	}
	if v == "" {
		v = clientGoInGoMod()
	}
	if v == "" {
		return "", errors.New("kubetest: neither the build information nor a go.mod above the working directory names k8s.io/client-go")
	}
	rest, ok := strings.CutPrefix(v, "v0.")
	if !ok {
		return "", fmt.Errorf("kubetest: k8s.io/client-go %s is not a v0.X.Y version", v)
	}
	return "v1." + rest, nil
}

// clientGoInGoMod returns the version of k8s.io/client-go that the
// nearest go.mod at or above the working directory requires, or "".
func clientGoInGoMod() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				f := strings.Fields(line)
				if f = slices.DeleteFunc(f, func(s string) bool { return s == "require" || s == "(" }); len(f) >= 2 && f[0] == "k8s.io/client-go" {
					return f[1]
				}
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// BinDir returns the directory of kube-apiserver and
// kube-controller-manager: $CAIRN_KUBE_BIN_DIR when set, otherwise
// $HOME/.cache/cairn/kube/<Version()>, where hack/kube-binaries.sh puts
// them.
func BinDir() (string, error) {
	if d := os.Getenv(BinDirEnv); d != "" {
		return d, nil
	}
	v, err := Version()
	if err != nil {
		return "", err
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("kubetest: %w (set %s)", err, BinDirEnv)
	}
	return filepath.Join(home, ".cache", "cairn", "kube", v), nil
}

// binary returns the path of the named binary, failing t with the way to
// build it when it is missing.
func binary(t testing.TB, name string) string {
	t.Helper()
	dir, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		t.Fatalf("kubetest: %s is missing (%s): build it with %s (from the module root; %s chooses another directory)",
			name, path, Script, BinDirEnv)
	}
	return path
}

// Cluster is a running Kubernetes API: an etcd and a kube-apiserver on
// loopback, and an admin identity (group system:masters).
type Cluster struct {
	// URL is the apiserver's address, https://127.0.0.1:PORT; it stays the
	// same across Restart.
	URL string
	// Token is the admin's bearer token.
	Token string
	// CAData is the PEM certificate of the CA that signed the apiserver's
	// serving certificate.
	CAData []byte

	t       testing.TB
	dir     string
	etcdURL string
	files   files

	mu  sync.Mutex
	api *proc // nil while stopped
	cm  *proc // nil until StartControllerManager
}

// Start runs an etcd and a kube-apiserver for t and waits until the
// apiserver's /readyz answers. Both stop at test cleanup. A missing binary,
// or an apiserver that does not become ready, fails t (with the tail of
// its output).
func Start(t testing.TB) *Cluster {
	t.Helper()
	apiserver := binary(t, "kube-apiserver")
	dir := t.TempDir()
	etcdURL := startEtcd(t, filepath.Join(dir, "etcd"))
	f, err := writeFiles(dir)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	c := &Cluster{
		URL: fmt.Sprintf("https://127.0.0.1:%d", port), Token: f.token, CAData: f.caPEM,
		t: t, dir: dir, etcdURL: etcdURL, files: f,
	}
	c.files.apiserver = apiserver
	t.Cleanup(c.stopAll)
	if err := c.startAPIServer(); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	return c
}

// apiserverArgs are the flags of kube-apiserver for c.
func (c *Cluster) apiserverArgs() []string {
	port := c.URL[strings.LastIndex(c.URL, ":")+1:]
	return []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + port,
		"--cert-dir=" + filepath.Join(c.dir, "apiserver-certs"),
		"--tls-cert-file=" + c.files.servingCert,
		"--tls-private-key-file=" + c.files.servingKey,
		"--client-ca-file=" + c.files.caCert,
		"--token-auth-file=" + c.files.tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + c.files.saPub,
		"--service-account-signing-key-file=" + c.files.saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		// No endpoints for the kubernetes Service: a loopback address cannot
		// be one, and nothing in the tests reaches the apiserver through it.
		"--endpoint-reconciler-type=none",
	}
}

// startAPIServer starts kube-apiserver and waits for /readyz.
func (c *Cluster) startAPIServer() error {
	p, err := startProc(c.files.apiserver, c.apiserverArgs(), filepath.Join(c.dir, "kube-apiserver.log"))
	if err != nil {
		return err
	}
	if err := c.waitReady(p, c.URL+"/readyz"); err != nil {
		p.stop()
		return err
	}
	c.mu.Lock()
	c.api = p
	c.mu.Unlock()
	return nil
}

// Stop stops the apiserver (SIGTERM, then SIGKILL after 10 s) and waits
// until it has exited; etcd keeps running, so Restart finds every object.
// Stopping a stopped apiserver does nothing.
func (c *Cluster) Stop() {
	c.mu.Lock()
	p := c.api
	c.api = nil
	c.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// Restart stops the apiserver if it runs and starts it again on the same
// address, with the same certificates and tokens, and waits for /readyz.
// An apiserver that does not become ready fails the test.
func (c *Cluster) Restart() {
	c.t.Helper()
	c.Stop()
	if err := c.startAPIServer(); err != nil {
		c.t.Fatalf("kubetest: restart: %v", err)
	}
}

// Config returns a new client-go configuration for the admin.
func (c *Cluster) Config() *rest.Config {
	return &rest.Config{
		Host:            c.URL,
		BearerToken:     c.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData},
		QPS:             -1, // no client-side throttling in tests
	}
}

// Clientset returns a client-go clientset for the admin; a configuration
// client-go refuses fails the test.
func (c *Cluster) Clientset() *kubernetes.Clientset {
	c.t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		c.t.Fatalf("kubetest: clientset: %v", err)
	}
	return cs
}

// Kubeconfig returns a kubeconfig for the admin (context "kubetest"),
// with the CA certificate and the token inline.
func (c *Cluster) Kubeconfig() []byte {
	c.t.Helper()
	b, err := kubeconfig(c.URL, c.CAData, c.Token)
	if err != nil {
		c.t.Fatalf("kubetest: %v", err)
	}
	return b
}

// kubeconfig encodes a kubeconfig with one cluster, user and context.
func kubeconfig(server string, ca []byte, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "admin"}
	cfg.CurrentContext = "kubetest"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encode kubeconfig: %w", err)
	}
	return b, nil
}

// StartControllerManager runs kube-controller-manager against the
// apiserver (every default controller: Deployments get ReplicaSets and
// Pods, namespaces finalize, service accounts get created) until test
// cleanup, and waits until its /healthz answers. It does nothing if it
// already runs. A missing binary or a manager that does not become
// healthy fails the test.
func (c *Cluster) StartControllerManager() {
	c.t.Helper()
	c.mu.Lock()
	running := c.cm != nil
	c.mu.Unlock()
	if running {
		return
	}
	bin := binary(c.t, "kube-controller-manager")
	kc := filepath.Join(c.dir, "controller-manager.kubeconfig")
	if err := os.WriteFile(kc, c.Kubeconfig(), 0o600); err != nil {
		c.t.Fatalf("kubetest: %v", err)
	}
	port, err := freePort()
	if err != nil {
		c.t.Fatalf("kubetest: %v", err)
	}
	args := []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(c.dir, "controller-manager-certs"),
		"--leader-elect=false",
		"--service-account-private-key-file=" + c.files.saKey,
		"--root-ca-file=" + c.files.caCert,
		"--use-service-account-credentials=false",
		"--controllers=*",
	}
	p, err := startProc(bin, args, filepath.Join(c.dir, "kube-controller-manager.log"))
	if err != nil {
		c.t.Fatalf("kubetest: %v", err)
	}
	if err := c.waitReady(p, fmt.Sprintf("https://127.0.0.1:%d/healthz", port)); err != nil {
		p.stop()
		c.t.Fatalf("kubetest: %v", err)
	}
	c.mu.Lock()
	c.cm = p
	c.mu.Unlock()
}

// stopAll stops the processes; etcd stops by its own cleanup.
func (c *Cluster) stopAll() {
	c.mu.Lock()
	cm := c.cm
	c.cm = nil
	c.mu.Unlock()
	if cm != nil {
		cm.stop()
	}
	c.Stop()
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// proc is a process started by the harness, its output in a log file.
type proc struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed when the process has exited
	err    error         // Wait's result, set before exited closes
}

// startProc starts bin with args in a process group of its own, its
// output appended to logPath. It does not block.
func startProc(bin string, args []string, logPath string) (*proc, error) {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the log of %s: %w", filepath.Base(bin), err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	return p, nil
}

// stop sends SIGTERM to the process group, SIGKILL after stopTimeout, and
// waits until the process has exited.
func (p *proc) stop() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	}
}

// tail returns the last lines of the process's log.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// waitReady polls url with the admin token until it answers 200, the
// process exits, or startTimeout passes; the error carries the tail of
// the process's output.
func (c *Cluster) waitReady(p *proc, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	client, err := httpClient(c.CAData, url)
	if err != nil {
		return err
	}
	name := filepath.Base(p.cmd.Path)
	var last error
	for {
		last = probe(ctx, client, url, c.Token)
		if last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready (%v); its output ends:\n%s", name, p.err, p.tail())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v (%v); its output ends:\n%s", name, startTimeout, last, p.tail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
