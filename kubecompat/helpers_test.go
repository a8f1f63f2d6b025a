// Package kubecompat_test drives the real Kubernetes clients — kubectl's
// command code, client-go's dynamic, discovery and informer machinery and
// controller-runtime's client — against a real cairn server (embedded
// etcd, HTTPS on loopback), as a user of those tools would.
package kubecompat_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// gvr names a cairn resource as client-go does.
func gvr(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: api.Group, Version: api.Version, Resource: resource}
}

// cluster is a running cairn server as Kubernetes clients see it: its
// address, the CA its certificate is issued by, and an admin token.
type cluster struct {
	url   string
	ca    []byte
	token string
	dir   string // kubeconfig and kubectl's caches
	// srv is the test API server (nil for a daemon).
	srv *servertest.Server

	fatalOnce sync.Once // kubectl's fatal handler, set for the test
	// kubectlMu orders the commands' use of kubectl's package variables
	// (its profiling flags, written as a command is built and read as it
	// starts) when several run at once.
	kubectlMu sync.Mutex
}

// startServer starts a test API server (no controllers).
func startServer(t *testing.T) *cluster {
	t.Helper()
	s := servertest.Start(t)
	return &cluster{url: s.URL, ca: s.CA, token: s.Token, dir: t.TempDir(), srv: s}
}

// startDaemon starts a whole cairn server running the garbage collector,
// for what needs controllers (propagation policies). kubectl uses the
// kubeconfig the server writes, as `cairn server` writes
// ~/.cairn/kubeconfig.
func startDaemon(t *testing.T) *cluster {
	t.Helper()
	gc, err := controllers.Select(controllers.List(controllers.Config{}), "gc")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d, _ := clitest.StartDaemon(t, daemon.Options{Controllers: gc, LeaderTTL: time.Second, ClientConfigPath: filepath.Join(dir, "config")})
	if _, err := os.Stat(filepath.Join(dir, daemon.KubeconfigName)); err != nil {
		t.Fatalf("the server wrote no kubeconfig: %v", err)
	}
	return &cluster{url: d.URL(), ca: d.CA(), token: d.Token(), dir: dir}
}

// config is client-go's config for the cluster, as a kubeconfig gives it
// (with client-side rate limits for tests, not users: 5 requests a
// second would only slow them).
func (c *cluster) config() *rest.Config {
	return &rest.Config{Host: c.url, BearerToken: c.token, TLSClientConfig: rest.TLSClientConfig{CAData: c.ca}, QPS: 1000, Burst: 1000}
}

// dynamic returns a dynamic client of the cluster.
func (c *cluster) dynamic(t *testing.T) *dynamic.DynamicClient {
	t.Helper()
	dc, err := dynamic.NewForConfig(c.config())
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

// kubeconfig returns the cluster's kubeconfig: the one the server wrote,
// or else one written here (once) as `cairn server` writes it: the
// server, its CA embedded and the admin token, context "cairn" with
// namespace "default".
func (c *cluster) kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(c.dir, daemon.KubeconfigName)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	cfg := clientcmdapi.NewConfig()
	cl := clientcmdapi.NewCluster()
	cl.Server, cl.CertificateAuthorityData = c.url, c.ca
	user := clientcmdapi.NewAuthInfo()
	user.Token = c.token
	ctx := clientcmdapi.NewContext()
	ctx.Cluster, ctx.AuthInfo, ctx.Namespace = "cairn", "cairn", "default"
	cfg.Clusters["cairn"], cfg.AuthInfos["cairn"], cfg.Contexts["cairn"] = cl, user, ctx
	cfg.CurrentContext = "cairn"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// result is what one kubectl command did.
type result struct {
	out, err string
	code     int // its exit code
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.err)
}

// exit is what kubectl's fatal error handler panics with in tests, where
// it would otherwise end the process.
type exit struct {
	msg  string
	code int
}

// kubectl runs kubectl's command code in-process against the cluster
// (with no standard input: `-f -` reads the process's) and returns what it printed and its exit code. kubectl keeps
// process-wide state (its fatal error handler, the default warning
// handler): tests that use it must not run in parallel.
func (c *cluster) kubectl(t *testing.T, args ...string) result {
	t.Helper()
	_, done := c.start(t, args...)
	return <-done
}

// start runs kubectl as kubectl does, in the background: out is what it
// has printed so far, done yields its result when it ends. Several
// commands may run at once within one test (a `get -w` beside the writes
// it sees).
func (c *cluster) start(t *testing.T, args ...string) (out *testkit.Buffer, done <-chan result) {
	t.Helper()
	c.interceptFatal(t)
	out = new(testkit.Buffer)
	var errOut testkit.Buffer
	args = append([]string{"--kubeconfig=" + c.kubeconfig(t), "--cache-dir=" + filepath.Join(c.dir, "cache")}, args...)
	c.kubectlMu.Lock()
	cmd := kubectlcmd.NewDefaultKubectlCommandWithArgs(kubectlcmd.KubectlOptions{
		Arguments: append([]string{"kubectl"}, args...),
		IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: &errOut},
	})
	c.kubectlMu.Unlock()
	preRun := cmd.PersistentPreRunE
	cmd.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		c.kubectlMu.Lock()
		defer c.kubectlMu.Unlock()
		return preRun(cmd, args)
	}
	cmd.SetArgs(args)
	ch := make(chan result, 1)
	go func() {
		code := 0
		defer func() {
			if r := recover(); r != nil {
				x, ok := r.(exit)
				if !ok {
					panic(r)
				}
				code = x.code
				errOut.WriteString(x.msg)
			}
			ch <- result{out: out.String(), err: errOut.String(), code: code}
		}()
		if err := cmd.Execute(); err != nil {
			code = 1
			errOut.WriteString(err.Error())
		}
	}()
	return out, ch
}

// interceptFatal makes kubectl's fatal errors panic (c.kubectl recovers
// them into an exit code) instead of ending the test binary, until the
// test ends.
func (c *cluster) interceptFatal(t *testing.T) {
	c.fatalOnce.Do(func() {
		// kubectl would read a kuberc of the user's: the tests have none.
		t.Setenv("KUBECTL_KUBERC", "false")
		cmdutil.BehaviorOnFatal(func(msg string, code int) { panic(exit{msg, code}) })
		t.Cleanup(cmdutil.DefaultBehaviorOnFatal)
	})
}

// must runs kubectl and fails the test unless it exits 0.
func (c *cluster) must(t *testing.T, args ...string) string {
	t.Helper()
	r := c.kubectl(t, args...)
	if r.code != 0 {
		t.Fatalf("kubectl %s: %s", strings.Join(args, " "), r)
	}
	return r.out
}

// eventually polls cond every 50ms until it returns "" (met) or timeout
// passes, then fails the test with cond's last answer.
func eventually(t *testing.T, timeout time.Duration, cond func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		why := cond()
		if why == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("after %s: %s", timeout, why)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// file writes content to a new file of the test and returns its path.
func file(t *testing.T, content string) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "*.yaml")
	if err == nil {
		_, err = f.WriteString(content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// examplePath is a file of the repository's examples/.
func examplePath(name string) string { return filepath.Join("..", "examples", name) }
