package kubetest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// Kubelet plays a node's kubelet for tests, as far as the apiserver needs
// one: a Node whose kubelet endpoint is an HTTPS server on loopback that
// serves container logs (which the apiserver proxies pods/log to), and
// helpers that bind pods to the node and write their status. With Play a
// test says what each pod does; with Exec each pod's command runs as a
// local process (exec.go).
type Kubelet struct {
	// Node is the Node's name.
	Node string

	c       *Cluster
	srv     *httptest.Server
	mu      sync.Mutex
	logs    map[string][]byte     // namespace/pod -> the container's output
	streams map[string]*logStream // namespace/pod -> a process's output (Exec)
	stops   map[types.UID]func()  // pod -> stops its process, blocking (Exec)
}

// StartKubelet registers a Ready Node named name whose kubelet endpoint is
// a log server on loopback, until test cleanup. Failures fail the test.
// The apiserver reaches it without verifying its certificate (no
// --kubelet-certificate-authority), as it does any kubelet then.
func (c *Cluster) StartKubelet(name string) *Kubelet {
	c.t.Helper()
	k := &Kubelet{Node: name, c: c, logs: map[string][]byte{}, streams: map[string]*logStream{}, stops: map[types.UID]func(){}}
	k.srv = httptest.NewTLSServer(http.HandlerFunc(k.serve))
	c.t.Cleanup(k.srv.Close)
	port, err := strconv.Atoi(k.srv.URL[strings.LastIndex(k.srv.URL, ":")+1:])
	if err != nil {
		c.t.Fatalf("kubetest: kubelet port: %v", err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
			Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Clientset().CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("kubetest: register node %s: %v", name, err)
	}
	return k
}

// serve answers GET /containerLogs/{namespace}/{pod}/{container}: with
// the output of the pod's process when Exec runs it (up to its end when
// the request follows, what it wrote so far otherwise), else with what
// SetLog gave for the pod (nothing by default), whether or not it follows.
func (k *Kubelet) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/containerLogs/")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	k.mu.Lock()
	b := k.logs[parts[0]+"/"+parts[1]]
	stream := k.streams[parts[0]+"/"+parts[1]]
	k.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	if stream != nil {
		stream.serve(w, r, r.URL.Query().Get("follow") == "true")
		return
	}
	_, _ = w.Write(b)
}

// SetLog sets what the pod's container wrote.
func (k *Kubelet) SetLog(namespace, pod, output string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.logs[namespace+"/"+pod] = []byte(output)
}

// Bind schedules the pod onto the kubelet's node (a Binding, as the
// scheduler makes). Errors: the API's.
func (k *Kubelet) Bind(ctx context.Context, pod *corev1.Pod) error {
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target: corev1.ObjectReference{Kind: "Node", Name: k.Node}}
	return k.c.Clientset().CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{})
}

// SetStatus writes the pod's status: its phase and its containers'
// statuses (for every container of its spec, state as given). Errors:
// the API's.
func (k *Kubelet) SetStatus(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, state corev1.ContainerState) error {
	cs := k.c.Clientset().CoreV1().Pods(pod.Namespace)
	cur, err := cs.Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cur.Status.Phase = phase
	cur.Status.ContainerStatuses = nil
	for _, c := range cur.Spec.Containers {
		cur.Status.ContainerStatuses = append(cur.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, State: state, Ready: state.Running != nil})
	}
	_, err = cs.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	return err
}

// Run binds the pod and makes it Running. Errors: the API's.
func (k *Kubelet) Run(ctx context.Context, pod *corev1.Pod) error {
	if pod.Spec.NodeName == "" {
		if err := k.Bind(ctx, pod); err != nil {
			return err
		}
	}
	return k.SetStatus(ctx, pod, corev1.PodRunning, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}})
}

// Exit ends the pod's containers with code (Succeeded for 0, Failed
// otherwise) and the given reason ("" gives Completed or Error).
// Errors: the API's.
func (k *Kubelet) Exit(ctx context.Context, pod *corev1.Pod, code int32, reason string) error {
	return k.end(ctx, pod, corev1.ContainerStateTerminated{ExitCode: code, Reason: reason})
}

// end ends the pod's containers in state term (Succeeded for exit code 0,
// Failed otherwise); an empty reason gives Completed or Error, missing
// times are now. Errors: the API's.
func (k *Kubelet) end(ctx context.Context, pod *corev1.Pod, term corev1.ContainerStateTerminated) error {
	phase, r := corev1.PodSucceeded, "Completed"
	if term.ExitCode != 0 {
		phase, r = corev1.PodFailed, "Error"
	}
	if term.Reason == "" {
		term.Reason = r
	}
	now := metav1.Now()
	if term.StartedAt.IsZero() {
		term.StartedAt = now
	}
	if term.FinishedAt.IsZero() {
		term.FinishedAt = now
	}
	return k.SetStatus(ctx, pod, phase, corev1.ContainerState{Terminated: &term})
}

// ConfirmDeletion removes a pod being deleted on the node, as a kubelet
// does once its containers have stopped (a delete with grace period 0).
// Errors: the API's.
func (k *Kubelet) ConfirmDeletion(ctx context.Context, pod *corev1.Pod) error {
	zero := int64(0)
	return k.c.Clientset().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}

// Play runs every pod created in namespace ns from now until ctx ends, as
// a kubelet would: it binds the pod, makes it Running, calls do (in a
// goroutine of the pod's own) and ends the pod with the code do returns;
// and it confirms the deletion of pods being deleted on its node. do may
// be nil (exit 0 at once). It does not block; failures of the API are
// reported through t.Errorf unless ctx has ended.
func (k *Kubelet) Play(ctx context.Context, ns string, do func(ctx context.Context, pod *corev1.Pod) int32) {
	k.play(ctx, ns, func(ctx context.Context, pod *corev1.Pod) corev1.ContainerStateTerminated {
		code := int32(0)
		if do != nil {
			code = do(ctx, pod)
		}
		return corev1.ContainerStateTerminated{ExitCode: code}
	})
}

// play is Play with run giving the containers' end state (see end); a
// pod being deleted has its process stopped (stopPod) before its deletion
// is confirmed.
func (k *Kubelet) play(ctx context.Context, ns string, run func(ctx context.Context, pod *corev1.Pod) corev1.ContainerStateTerminated) {
	w, err := k.c.Clientset().CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		k.c.t.Errorf("kubetest: watch pods: %v", err)
		return
	}
	report := func(err error) {
		if err != nil && ctx.Err() == nil {
			k.c.t.Errorf("kubetest: kubelet: %v", err)
		}
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			switch {
			case pod.DeletionTimestamp != nil:
				if ev.Type != "DELETED" {
					go func() {
						k.stopPod(pod.UID)
						_ = k.ConfirmDeletion(ctx, pod)
					}()
				}
			case ev.Type == "ADDED":
				go func() {
					if err := k.Run(ctx, pod); err != nil {
						report(err)
						return
					}
					term := run(ctx, pod)
					// The status may change meanwhile (a deletion): write it again.
					err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return k.end(ctx, pod, term) })
					if err != nil && !strings.Contains(err.Error(), "not found") {
						report(err)
					}
				}()
			}
		}
	}()
}
