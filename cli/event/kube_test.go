package event_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/kubetest"
	rtkube "cairn.dev/cairn/runtime/kubernetes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The namespace the units' pods run in, and the image of units that name
// none (--runtime-default-image): the examples name none. The kubelet
// stand-in ignores it (this machine, with sh and curl, is the image).
const (
	unitsNamespace = "cairn-units"
	workerImage    = "docker.io/library/buildpack-deps:bookworm-curl"
)

// kubeRuntime returns the kubernetes runtime (--runtime kubernetes
// --runtime-default-image workerImage) on a real kube-apiserver with RBAC,
// acting as a service account that holds exactly the Role of
// docs/kubernetes-runtime.md, and the cluster's admin clientset. No
// kubelet runs: kubetest.Kubelet.Exec plays it for real enough that each
// pod the runtime creates runs its own command as a local process, with
// the pod's env and Secret, and ends with its real exit code; its output
// is the pod's log. The pods' mount paths (/workspace and the files in it)
// cannot be made on this machine for several pods at once: Exec puts them
// under a temporary root per pod, and CAIRN_WORKSPACE with them.
func kubeRuntime(t *testing.T) (*rtkube.Runtime, kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kc := kubetest.Start(t)
	kc.StartKubelet("node-1").Exec(ctx, unitsNamespace)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc.ServiceAccountKubeconfig(unitsNamespace, "cairn", rtkube.PolicyRules()))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rtkube.New(rtkube.Options{Config: cfg, Namespace: unitsNamespace, DefaultImage: workerImage, KillGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	testkit.EventuallyNil(t, time.Minute, "the runtime to be ready", rt.Ready)
	return rt, kc.Clientset()
}

// checkPodsCleanedUp waits until the units' pods are all deleted.
func checkPodsCleanedUp(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, time.Minute, "the pods to be cleaned up", func() bool {
		l, err := cs.CoreV1().Pods(unitsNamespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
}

// TestExample_HelloOnTheKubernetesRuntime plays examples/events/hello.yaml,
// unchanged, as TestExample_HelloWorkerCreatesTwoJobsAndSucceeds does, on
// the kubernetes runtime: its worker and jobs are pods (see kubeRuntime)
// whose logs come from the pod log API.
func TestExample_HelloOnTheKubernetesRuntime(t *testing.T) {
	rt, cs := kubeRuntime(t)
	var images imageWatch
	images.start(t, cs)
	d, c := clitest.StartDaemon(t, daemon.Options{Runtime: rt, Controllers: controllers.List(controllers.Config{})})
	playHelloExample(t, d, c)
	checkPodsCleanedUp(t, cs)
	images.check(t, 3)
}

// TestExample_PreviewStoryOnTheKubernetesRuntime plays
// examples/preview/story.yaml, unchanged, as
// TestExample_PreviewStoryFromPullRequestToCleanup does, on the kubernetes
// runtime: the three workers and the preview's container deploy item
// (install, then its deleteCommand) are pods (see kubeRuntime); the
// item's exports come back as its pod's termination message. GitHub sees
// each worker's success, but not always its pending status (checkEnds).
func TestExample_PreviewStoryOnTheKubernetesRuntime(t *testing.T) {
	rt, cs := kubeRuntime(t)
	var images imageWatch
	images.start(t, cs)
	gh := newFakeGitHub(t)
	d, c := clitest.StartDaemon(t, daemon.Options{Runtime: rt,
		Controllers: controllers.List(controllers.Config{ConsoleURL: storyConsole})})
	gh.checkEnds(t, playPreviewStory(t, d, c, gh))
	checkPodsCleanedUp(t, cs)
	images.check(t, 5)
}

// imageWatch records the image of every pod created in the units'
// namespace.
type imageWatch struct {
	mu     sync.Mutex
	images map[string]string // pod -> image
}

// start watches pods until the test ends. Failures fail t.
func (w *imageWatch) start(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	w.images = map[string]string{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wi, err := cs.CoreV1().Pods(unitsNamespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added {
				w.mu.Lock()
				w.images[pod.Name] = pod.Spec.Containers[0].Image
				w.mu.Unlock()
			}
		}
	}()
}

// check asserts at least n pods were created, all in workerImage.
func (w *imageWatch) check(t *testing.T, n int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.images) < n {
		t.Errorf("%d pods were created, want at least %d: %v", len(w.images), n, w.images)
	}
	for pod, img := range w.images {
		if img != workerImage {
			t.Errorf("pod %s ran image %q, want the default %q", pod, img, workerImage)
		}
	}
}

// checkEnds asserts GitHub saw, for each event in order, a success status
// on its commit, preceded by a pending one or not, and nothing else: on
// the kubernetes runtime the observer sees a unit Running only when it
// still runs at its next look (a second after it saw the pod Pending), so
// a worker that ends sooner goes from STARTING to SUCCEEDED and GitHub
// gets no pending status for it. A status posted again is not counted:
// the reporter remembers what it posted in memory, and posts the current
// state once more when the controllers restart (a leadership lost on this
// busy machine while a kube-apiserver runs too).
func (f *fakeGitHub) checkEnds(t *testing.T, want []wantStatus) {
	t.Helper()
	var got []statusRequest
	seen := map[string]bool{}
	for _, r := range f.requests() {
		if k := r.Path + " " + r.Body["target_url"] + " " + r.Body["state"]; !seen[k] {
			seen[k] = true
			got = append(got, r)
		}
	}
	i := 0
	status := func(w wantStatus, state, desc string) bool {
		if i >= len(got) {
			return false
		}
		g := got[i]
		ok := g.Method == "POST" && g.Path == "/repos/Codertocat/Hello-World/statuses/"+w.sha && g.Auth == "Bearer "+storyToken &&
			len(g.Body) == 4 && g.Body["state"] == state && g.Body["context"] == "cairn/previews" &&
			g.Body["description"] == desc && g.Body["target_url"] == eventURL(w.event)
		if ok {
			i++
		}
		return ok
	}
	for _, w := range want {
		status(w, "pending", "worker RUNNING")
		if !status(w, "success", "worker SUCCEEDED") {
			t.Fatalf("GitHub saw no success status for %s (on %s) where expected:\n%s", w.event, w.sha, dump(got))
		}
	}
	if i != len(got) {
		t.Fatalf("GitHub saw %d requests more than expected:\n%s", len(got)-i, dump(got))
	}
}
