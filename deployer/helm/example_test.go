package helm_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/deployer/helm"
	"cairn.dev/cairn/deployer/manifest"
	"cairn.dev/cairn/execution"
	"cairn.dev/cairn/installation"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/internal/testkit/kubetest"
	"cairn.dev/cairn/manager"
)

var exampleDir = filepath.Join("..", "..", "examples", "kubernetes")

// TestExample_KubernetesHelmAndManifestFeedASibling applies
// examples/kubernetes with the CLI against a real kube-apiserver: the
// Target, then the installation whose "web" installs the inline chart as
// Helm release "hello" and publishes a URL from a manifest item, which
// its sibling "client" imports and writes into a ConfigMap of its own.
// Deleting the installation uninstalls the release.
func TestExample_KubernetesHelmAndManifestFeedASibling(t *testing.T) {
	kc := kubetest.Start(t)
	cs := kc.Clientset()
	e := deploytest.Start(t, deploytest.Options{},
		manager.Controller{Name: "installation", Setup: func(tm *manager.Term) error {
			return installation.Setup(tm, installation.Options{Workers: 4})
		}},
		manager.Controller{Name: "execution", Setup: func(tm *manager.Term) error { return execution.Setup(tm, execution.Options{}) }},
		manager.Controller{Name: "deployer-helm", Setup: helm.Setup},
		manager.Controller{Name: "deployer-manifest", Setup: func(tm *manager.Term) error { return manifest.Setup(tm, manifest.Options{}) }},
	)
	run := func(args ...string) string {
		t.Helper()
		r := clitest.Run(t, e.Server.Config(), args...)
		if r.Error != nil {
			t.Fatalf("cairn %s: %v %s", strings.Join(args, " "), r.Error, r.Err)
		}
		return r.Out
	}
	run("apply", "-f", filepath.Join(exampleDir, "cluster.yaml"))
	e.Create(testkit.Secret("kube-demo", "cluster-kubeconfig", map[string]string{"kubeconfig": string(kc.Kubeconfig())}))
	run("apply", "-f", filepath.Join(exampleDir, "app.yaml"))

	testkit.EventuallyNil(t, deploytest.Wait, "the client's ConfigMap with the web's endpoint", func() error {
		cm, err := cs.CoreV1().ConfigMaps("hello").Get(e.Ctx(), "client-config", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.Data["endpoint"] != "http://hello.hello.svc:80" {
			t.Fatalf("client-config data %v: want the endpoint exported by web", cm.Data)
		}
		return nil
	})
	rel, err := cs.CoreV1().Secrets("hello").List(e.Ctx(), metav1.ListOptions{LabelSelector: "owner=helm,name=hello,status=deployed"})
	if err != nil || len(rel.Items) != 1 {
		t.Fatalf("Helm's record of release hello: %v %v, want one deployed revision", rel, err)
	}
	if cm, err := cs.CoreV1().ConfigMaps("hello").Get(e.Ctx(), "hello-config", metav1.GetOptions{}); err != nil || cm.Data["message"] != "hello from cairn" {
		t.Fatalf("the chart's ConfigMap: %v %v, want the installation's message", cm, err)
	}
	out := run("get", "deployitems", "-n", "kube-demo")
	if !strings.Contains(out, "OBJECTS") || !regexp.MustCompile(`helm\s+Succeeded\s+2/2`).MatchString(out) {
		t.Fatalf("get deployitems:\n%s", out)
	}

	run("delete", "installation", "hello", "-n", "kube-demo")
	testkit.EventuallyNil(t, deploytest.Wait, "the release uninstalled", func() error {
		l, err := cs.CoreV1().Secrets("hello").List(e.Ctx(), metav1.ListOptions{LabelSelector: "owner=helm,name=hello"})
		if err == nil && len(l.Items) > 0 {
			return io.ErrNoProgress
		}
		return err
	})
	testkit.Eventually(t, deploytest.Wait, "the installation gone", func() bool {
		_, err := e.C.Get(e.Ctx(), api.KindInstallation, "kube-demo", "hello")
		return err != nil
	})
}

// TestExample_InlineChartIsTheChartDirectory checks that the base64 chart
// in examples/kubernetes/app.yaml holds exactly the files of
// examples/kubernetes/hello.
func TestExample_InlineChartIsTheChartDirectory(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(exampleDir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`inline: (\S+)`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("app.yaml has no inline chart")
	}
	tgz, err := base64.StdEncoding.DecodeString(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	inArchive := map[string]string{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			inArchive[h.Name] = string(b)
		}
	}
	onDisk := map[string]string{}
	root := filepath.Join(exampleDir)
	err = filepath.Walk(filepath.Join(root, "hello"), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		onDisk[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(onDisk) != len(inArchive) {
		t.Fatalf("the inline chart has %d files, the directory %d: regenerate it (see app.yaml)", len(inArchive), len(onDisk))
	}
	for name, content := range onDisk {
		if inArchive[name] != content {
			t.Fatalf("%s differs between the inline chart and the directory: regenerate it (see app.yaml)", name)
		}
	}
}
